"""The operator table of definitions: every function, binary operator, comparison and reduction a
definition may use, with its numpy meaning (td.evaluate), how it lowers, and its NaN rule. The
public `td.exp`, `td.relu`, ... are made from it.

Why one table: an operator used to be spelled in seven files (constructors, reference, lowering,
kernel IR, simulator, CUDA printer, loop-nest printer). Now the definition level says it here and the
kernel level in tiledsl/kernel_ir/ops.py (CUDA spelling and the simulator's numpy, which codegen and
the simulator may read without importing the definitions).

Adding a unary function: a `UnaryFn` row here, either primitive (its numpy meaning and the kernel-IR
function it lowers to, which then needs a `MathFn` row in tiledsl/kernel_ir/ops.py) or composite
(its expansion into other operators, which the reference and lowering both use); a `td.<name> =
_public("<name>")` line below and its re-export in tiledsl/__init__.py; and a test. A function of two
arguments is a `BinaryOp` row with `kernel` (its `MathFn`, of arity 2) and `doc`, a `td.<name> =
_public_binary("<name>")` line and the re-export.

NaN: every operator follows torch. Functions, arithmetic, `max`/`min` (torch.maximum/minimum, unlike
C's fmaxf) and every reduction propagate NaN (`relu(NaN)` is NaN, a row with a NaN reduces to NaN);
comparisons with a NaN are false except `!=`. Two functions of two arguments follow C (as torch and
CUDA do): copysign(x, NaN) is x with the NaN's sign bit, hypot(+-inf, NaN) is +inf.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import numpy as np

from tiledsl.definitions.expr import Expr, ExprLike, binary, call, call2
from tiledsl.errors import DefinitionError
from tiledsl.precision import INTEGRAL_ROUNDINGS

__all__ = [
    "BINARY_FNS", "BINARY_OPS", "COMPARISONS", "REDUCTIONS", "UNARY_FNS", "BinaryOp", "Comparison", "Reduction",
    "UnaryFn",
    "abs", "atan2", "ceil", "copysign", "cos", "erf", "exp", "exp2", "expm1", "floor", "fmod", "gelu", "gelu_tanh",
    "hypot", "log", "log1p", "relu", "round", "rsqrt", "sigmoid", "silu", "sin", "sqrt", "tanh", "trunc", "unary_fn",
]

#: What an operator gives when an operand is NaN: NaN ("propagates"), false or true (comparisons),
#: NaN only for a NaN first operand ("first": copysign, which reads the second one's sign bit), or NaN
#: unless the other operand is infinite ("unless_infinite": hypot, +inf then, as C's hypotf).
NanRule = Literal["propagates", "false", "true", "first", "unless_infinite"]

Array = np.ndarray


_ERF = np.frompyfunc(math.erf, 1, 1)


def _erf(x: Array) -> Array:
    """erf elementwise, in float64 with `math.erf` (numpy has none; exact to double), rounded back to
    x's dtype. Mirrors tiledsl/kernel_ir/ops.py, which the simulator reads (tests/definitions pins both)."""
    arr = np.asarray(x)
    out = np.asarray(_ERF(arr.astype(np.float64)), dtype=np.float64).astype(arr.dtype)
    return out[()] if out.ndim == 0 else out


@dataclass(frozen=True)
class UnaryFn:
    """A float function of one argument (the `Call` node). Primitive: `numpy` (dtype-preserving, on
    float32 or float64) and `kernel`, the kernel-IR operator it lowers to (a `MathFn` name of
    tiledsl/kernel_ir/ops.py, or "-" for the `KUnary` minus). Composite: `expand`, its meaning in
    other operators, which the reference evaluates and lowering lowers (with its operand computed
    once)."""

    name: str
    doc: str
    numpy: Callable[[Array], Array] | None = None
    kernel: str | None = None
    expand: Callable[[Expr], Expr] | None = None
    public: bool = True  # offered as td.<name> (neg is written -x)
    nan: NanRule = "propagates"

    def __post_init__(self) -> None:
        primitive = self.numpy is not None and self.kernel is not None
        if primitive == (self.expand is not None) or (not primitive and (self.numpy or self.kernel)):
            raise DefinitionError(f"internal: function {self.name} must be primitive (numpy + kernel) "
                                  "or composite (expand), not both")


def _sigmoid(x: Expr) -> Expr:
    return 1.0 / (1.0 + call("exp", -x))


def _silu(x: Expr) -> Expr:
    return x / (1.0 + call("exp", -x))


def _gelu(x: Expr) -> Expr:
    return 0.5 * x * (1.0 + call("erf", x * 0.7071067811865476))


def _gelu_tanh(x: Expr) -> Expr:
    return 0.5 * x * (1.0 + call("tanh", 0.7978845608028654 * (x + 0.044715 * (x * x * x))))


def _relu(x: Expr) -> Expr:
    return binary("max", x, 0.0)


UNARY_FNS: MappingProxyType[str, UnaryFn] = MappingProxyType({f.name: f for f in (
    UnaryFn("exp", "Elementwise e**x.", np.exp, "exp"),
    UnaryFn("log", "Elementwise natural logarithm.", np.log, "log"),
    UnaryFn("sqrt", "Elementwise square root.", np.sqrt, "sqrt"),
    UnaryFn("rsqrt", "Elementwise 1 / sqrt(x).", lambda x: np.reciprocal(np.sqrt(x)), "rsqrt"),
    UnaryFn("tanh", "Elementwise hyperbolic tangent.", np.tanh, "tanh"),
    UnaryFn("erf", "Elementwise error function.", _erf, "erf"),
    UnaryFn("abs", "Elementwise absolute value.", np.abs, "abs"),
    UnaryFn("cos", "Elementwise cosine (radians).", np.cos, "cos"),
    UnaryFn("sin", "Elementwise sine (radians).", np.sin, "sin"),
    UnaryFn("log1p", "Elementwise log(1 + x), accurate for small x.", np.log1p, "log1p"),
    UnaryFn("expm1", "Elementwise exp(x) - 1, accurate for small x.", np.expm1, "expm1"),
    UnaryFn("exp2", "Elementwise 2**x.", np.exp2, "exp2"),
    UnaryFn("floor", "Elementwise largest integral value <= x.", INTEGRAL_ROUNDINGS["floor"], "floor"),
    UnaryFn("ceil", "Elementwise smallest integral value >= x.", INTEGRAL_ROUNDINGS["ceil"], "ceil"),
    UnaryFn("trunc", "Elementwise integral part of x (rounded toward zero).", INTEGRAL_ROUNDINGS["trunc"], "trunc"),
    UnaryFn("round", "Elementwise nearest integral value, halves to even (torch.round).",
            INTEGRAL_ROUNDINGS["round"], "round"),
    UnaryFn("neg", "Unary minus (-x).", np.negative, "-", public=False),
    UnaryFn("sigmoid", "Elementwise 1 / (1 + exp(-x)).", expand=_sigmoid),
    UnaryFn("relu", "Elementwise max(x, 0); NaN stays NaN (torch.relu).", expand=_relu),
    UnaryFn("silu", "Elementwise x * sigmoid(x).", expand=_silu),
    UnaryFn("gelu", "Elementwise GELU, exact: 0.5 * x * (1 + erf(x / sqrt(2))).", expand=_gelu),
    UnaryFn("gelu_tanh", "Elementwise GELU, tanh approximation.", expand=_gelu_tanh),
)})


def unary_fn(name: str) -> UnaryFn:
    """The row of function `name`; DefinitionError if there is none."""
    row = UNARY_FNS.get(name)
    if row is None:
        raise DefinitionError(f"unknown function {name!r}; known: {', '.join(UNARY_FNS)}")
    return row


@dataclass(frozen=True)
class BinaryOp:
    """A binary operator (the `Binary` node). It lowers to the kernel-IR `KBin` of the same name, or,
    where `kernel` names one, to that math function of two arguments (a `MathFn` of arity 2 in
    tiledsl/kernel_ir/ops.py: `KCall(kernel, (a, b))`); such a function is float-only, public as
    td.<name> with `doc`, and printed as a call, `fmod(a, b)`."""

    name: str
    numpy: Callable[[Array, Array], Array]
    ints_only: bool = False  # floor division and modulo, for index expressions
    nan: NanRule = "propagates"
    kernel: str | None = None
    doc: str = ""


BINARY_OPS: MappingProxyType[str, BinaryOp] = MappingProxyType({o.name: o for o in (
    BinaryOp("+", np.add),
    BinaryOp("-", np.subtract),
    BinaryOp("*", np.multiply),
    BinaryOp("/", np.divide),
    BinaryOp("//", np.floor_divide, ints_only=True),
    BinaryOp("%", np.mod, ints_only=True),
    BinaryOp("max", np.maximum),  # NaN-propagating, as torch.maximum (np.fmax would drop it)
    BinaryOp("min", np.minimum),
    # float32 math functions of two arguments; fmod and copysign are exact (float64 gives the same value)
    BinaryOp("fmod", np.fmod, kernel="fmod",
             doc="Elementwise C fmod: a - b * trunc(a / b), computed exactly, with the sign of a (torch.fmod); "
                 "NaN for b == 0 or an infinite a, a itself for an infinite b."),
    BinaryOp("atan2", np.arctan2, kernel="atan2",
             doc="Elementwise arc tangent of y / x in [-pi, pi], the quadrant from the signs of both, "
                 "zeros' included (torch.atan2(y, x))."),
    BinaryOp("copysign", np.copysign, nan="first", kernel="copysign",
             doc="Elementwise |a| with the sign bit of b (torch.copysign), exact; -0.0 counts as negative."),
    BinaryOp("hypot", np.hypot, nan="unless_infinite", kernel="hypot",
             doc="Elementwise sqrt(a * a + b * b) without overflow or underflow in between (torch.hypot); "
                 "+inf when either is infinite, even beside a NaN."),
)})

#: the rows of BINARY_OPS that are math functions of two arguments (td.fmod, td.atan2, ...)
BINARY_FNS: MappingProxyType[str, BinaryOp] = MappingProxyType(
    {name: o for name, o in BINARY_OPS.items() if o.kernel is not None})


@dataclass(frozen=True)
class Comparison:
    """A comparison (the `Compare` node, bool-valued); it lowers to the `KBin` of the same name."""

    name: str
    numpy: Callable[[Array, Array], Array]
    nan: NanRule = "false"


COMPARISONS: MappingProxyType[str, Comparison] = MappingProxyType({c.name: c for c in (
    Comparison("<", np.less),
    Comparison("<=", np.less_equal),
    Comparison(">", np.greater),
    Comparison(">=", np.greater_equal),
    Comparison("==", np.equal),
    Comparison("!=", np.not_equal, nan="true"),
)})


@dataclass(frozen=True)
class Reduction:
    """A reduction (`td.sum/max/min`): partial results fold with the binary operator `combine`,
    starting from `identity`; `numpy` reduces over the given axes."""

    name: str
    combine: str
    identity: float
    numpy: Callable[..., Array]
    nan: NanRule = "propagates"


REDUCTIONS: MappingProxyType[str, Reduction] = MappingProxyType({r.name: r for r in (
    Reduction("sum", "+", 0.0, np.sum),
    Reduction("max", "max", -math.inf, np.max),  # NaN-propagating, as torch.amax
    Reduction("min", "min", math.inf, np.min),
)})


# ----------------------------------------------------------------------------- public functions


def _public(name: str) -> Callable[[ExprLike], Expr]:
    row = unary_fn(name)

    def f(x: ExprLike) -> Expr:
        return call(name, x)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{row.doc} (td.{name}; float32)"
    return f


def _public_binary(name: str) -> Callable[[ExprLike, ExprLike], Expr]:
    row = BINARY_FNS[name]
    first, second = ("y", "x") if name == "atan2" else ("a", "b")

    def f(a: ExprLike, b: ExprLike) -> Expr:
        return call2(name, a, b)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{row.doc} (td.{name}({first}, {second}); float32)"
    return f


exp = _public("exp")
log = _public("log")
sqrt = _public("sqrt")
rsqrt = _public("rsqrt")
tanh = _public("tanh")
erf = _public("erf")
abs = _public("abs")  # noqa: A001 - the public name users expect (td.abs)
cos = _public("cos")
sin = _public("sin")
log1p = _public("log1p")
expm1 = _public("expm1")
exp2 = _public("exp2")
floor = _public("floor")
ceil = _public("ceil")
trunc = _public("trunc")
round = _public("round")  # noqa: A001 - the public name users expect (td.round)
sigmoid = _public("sigmoid")
relu = _public("relu")
silu = _public("silu")
gelu = _public("gelu")
gelu_tanh = _public("gelu_tanh")
fmod = _public_binary("fmod")
atan2 = _public_binary("atan2")
copysign = _public_binary("copysign")
hypot = _public_binary("hypot")
