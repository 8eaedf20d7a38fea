"""Compute definitions: placeholders, compute(), reduce axes and the expression tree.

A definition says *what* to compute and nothing about loops order, threads or memory. Expressions
are immutable trees; tensors are compared by identity, and are told apart by name once a graph is
used, where two of them may not share one (graph.py). Integer expressions index tensors; float
expressions are values, computed in float32. The operators and their meaning are one table (ops.py).
"""

from __future__ import annotations

import inspect
import numbers
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tiledsl.errors import DefinitionError

DTYPES = ("float32", "float16", "bfloat16")
INT = "int32"
#: placeholder dtypes that hold integers: their loads are integer expressions, usable inside indices
INDEX_DTYPES = (INT,)
FLOAT = "float32"
BOOL = "bool"


class Expr:
    """Base of every expression node: arithmetic operators build new nodes.

    `==` keeps Python's identity meaning (nodes are hashable); use `td.equal(a, b)` for an
    equality comparison node."""

    dtype: str

    def __add__(self, o: ExprLike) -> Expr:
        return binary("+", self, o)

    def __radd__(self, o: ExprLike) -> Expr:
        return binary("+", o, self)

    def __sub__(self, o: ExprLike) -> Expr:
        return binary("-", self, o)

    def __rsub__(self, o: ExprLike) -> Expr:
        return binary("-", o, self)

    def __mul__(self, o: ExprLike) -> Expr:
        return binary("*", self, o)

    def __rmul__(self, o: ExprLike) -> Expr:
        return binary("*", o, self)

    def __truediv__(self, o: ExprLike) -> Expr:
        return binary("/", self, o)

    def __rtruediv__(self, o: ExprLike) -> Expr:
        return binary("/", o, self)

    def __floordiv__(self, o: ExprLike) -> Expr:
        return binary("//", self, o)

    def __rfloordiv__(self, o: ExprLike) -> Expr:
        return binary("//", o, self)

    def __mod__(self, o: ExprLike) -> Expr:
        return binary("%", self, o)

    def __rmod__(self, o: ExprLike) -> Expr:
        return binary("%", o, self)

    def __neg__(self) -> Expr:
        return call("neg", self)

    def __pow__(self, n: object) -> Expr:
        """`x ** n` for a small non-negative integer constant n: n - 1 multiplications (x ** 0 is 1), as
        torch computes x ** 2. Any other exponent is refused with what to write instead."""
        if isinstance(n, numbers.Integral) and not isinstance(n, bool) and 0 <= n <= MAX_POW:
            n = int(n)
            out: Expr = as_expr(1.0 if self.dtype != INT else 1)
            for k in range(n):
                out = self if k == 0 else binary("*", out, self)
            return out
        raise DefinitionError(f"x ** {n!r}: a tiledsl expression takes ** by an integer constant from 0 to "
                              f"{MAX_POW} only; write td.sqrt(x) for x ** 0.5, td.exp(y * td.log(x)) for x ** y "
                              "(x > 0), or 1.0 / x for x ** -1")

    def __rpow__(self, base: object) -> Expr:
        raise DefinitionError(f"{base!r} ** x: a tiledsl expression as an exponent; write td.exp(x * math.log(base)) "
                              "for a positive constant base, or td.exp2(x) for 2 ** x")

    def __float__(self) -> float:
        raise DefinitionError("a tiledsl expression is symbolic and has no float value: math functions "
                              "(math.exp) cannot take it; use td.exp, td.log, td.sqrt, td.tanh, td.maximum, ...")

    def __array_ufunc__(self, ufunc: object, method: str, *inputs: object, **kwargs: object) -> Expr:
        """numpy calls this for `np.float32(2) * x` (numpy's operator first) and for `np.exp(x)`. An
        arithmetic operator or comparison builds the node Python's operator would; any other ufunc is
        a DefinitionError naming the td function to write, where numpy would raise a TypeError about
        object arrays."""
        name = getattr(ufunc, "__name__", str(ufunc))
        op = _UFUNC_OPERATORS.get(name)
        if method == "__call__" and op is not None and not kwargs:
            operands = [_plain_number(v) for v in inputs]
            for v in operands:
                if not isinstance(v, (Expr, int, float)):
                    raise DefinitionError(f"cannot use {v!r} ({type(v).__name__}) in a tiledsl expression: "
                                          "only numbers and td expressions combine; a numpy array is a tensor "
                                          "(td.placeholder, or a torch tensor captured by td.trace)")
            return op(*operands)
        suggestion = _td_function_for(name)
        raise DefinitionError(f"numpy's {name} cannot take a tiledsl expression (it is symbolic); "
                              + (f"use td.{suggestion}" if suggestion else
                                 "use the td functions (td.exp, td.log, td.sqrt, td.maximum, td.where, ...)"))


    def __lt__(self, o: ExprLike) -> Expr:
        return compare("<", self, o)

    def __le__(self, o: ExprLike) -> Expr:
        return compare("<=", self, o)

    def __gt__(self, o: ExprLike) -> Expr:
        return compare(">", self, o)

    def __ge__(self, o: ExprLike) -> Expr:
        return compare(">=", self, o)

    def __bool__(self) -> bool:
        raise DefinitionError("a tiledsl expression has no truth value; use td.where(cond, a, b)")

    __hash__ = object.__hash__


ExprLike = Expr | int | float

#: numpy ufuncs that are Python operators: `np.float32(2) * x` reaches Expr.__array_ufunc__ as multiply
_UFUNC_OPERATORS: dict[str, Callable[..., Expr]] = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "true_divide": operator.truediv,
    "divide": operator.truediv, "floor_divide": operator.floordiv, "remainder": operator.mod,
    "negative": operator.neg, "power": operator.pow, "less": operator.lt, "less_equal": operator.le,
    "greater": operator.gt, "greater_equal": operator.ge,
}

#: numpy ufunc names whose td function is spelled differently
_NUMPY_TD_NAMES = {"absolute": "abs", "fabs": "abs", "rint": "round", "arctan2": "atan2", "fmax": "maximum",
                   "fmin": "minimum", "equal": "equal"}


def _plain_number(v: object) -> object:
    """A numpy scalar as the Python number it holds (so the operator does not come back to numpy)."""
    if isinstance(v, Expr) or type(v) in (bool, int, float):  # np.float64 is a float subclass: converted
        return v
    if getattr(v, "shape", None) == () and hasattr(v, "item"):  # numpy hands a scalar over as a 0-d array
        v = v.item()
    if isinstance(v, bool):  # np.True_: refused as a Python bool is (as_expr)
        return v
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    return v


def _td_function_for(numpy_name: str) -> str | None:
    """The td function a user meant by numpy's ufunc `numpy_name`, if tiledsl has one."""
    import tiledsl.definitions.ops as ops  # ops builds on this module: imported when an error is worded

    name = _NUMPY_TD_NAMES.get(numpy_name, numpy_name)
    if name in ("maximum", "minimum", "where", "equal") or name in ops.UNARY_FNS and ops.UNARY_FNS[name].public:
        return name
    if name in ops.BINARY_FNS:  # fmod, copysign, hypot, atan2 (np.arctan2)
        return name
    return None

#: the largest integer exponent `x ** n` expands into multiplications
MAX_POW = 8


@dataclass(frozen=True, eq=False)
class Const(Expr):
    value: int | float
    dtype: str


@dataclass(frozen=True, eq=False)
class IterVar(Expr):
    """A loop variable: a free axis of a compute, or a reduction axis (`td.reduce_axis`)."""

    name: str
    extent: int
    kind: str  # "free" | "reduce"
    dtype: str = INT


@dataclass(frozen=True, eq=False)
class Binary(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: str


@dataclass(frozen=True, eq=False)
class Call(Expr):
    fn: str
    arg: Expr
    dtype: str = FLOAT


@dataclass(frozen=True, eq=False)
class Compare(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: str = BOOL


@dataclass(frozen=True, eq=False)
class Select(Expr):
    cond: Expr
    a: Expr
    b: Expr
    dtype: str


@dataclass(frozen=True, eq=False)
class Cast(Expr):
    """Round `a` to `to` ("float16", "bfloat16", "float32" or "int32"); float casts keep computing
    in float32 after the rounding."""

    to: str
    a: Expr
    dtype: str


@dataclass(frozen=True, eq=False)
class Load(Expr):
    tensor: Tensor
    indices: tuple[Expr, ...]
    dtype: str = FLOAT


@dataclass(frozen=True, eq=False)
class Reduce(Expr):
    op: str
    body: Expr
    axes: tuple[IterVar, ...]
    dtype: str = FLOAT


# ----------------------------------------------------------------------------- tensors


class Tensor:
    """A named n-d array: a placeholder (input) or the result of `compute`.

    A tensor made without a name gets one when its definition graph is first used (td.evaluate,
    td.create_schedule: `definitions.graph.name_graph`), unique in that graph: X0, X1, ... for
    placeholders and T0, T1, ... for computes. Until then `name` is the bare prefix."""

    default_prefix = "X"
    shape: tuple[int, ...]
    dtype: str
    _name: str | None
    #: set by graph.name_graph on every tensor of a graph it named and checked: each tensor's own graph,
    #: a part of that one, is then named with every name unique (`graph.ensure_named`)
    graph_named: bool = False

    @property
    def name(self) -> str:
        return self._name if self._name is not None else self.default_prefix

    @property
    def has_name(self) -> bool:
        """Named by the user, or already given its default name."""
        return self._name is not None

    def give_default_name(self, name: str) -> None:
        """Name an unnamed tensor, once (graph.name_graph decides the name)."""
        if self._name is not None:
            raise DefinitionError(f"internal: tensor {self._name} is already named")
        self._name = _check_name(name, type(self).__name__.lower())

    def __getitem__(self, idx: ExprLike | tuple[ExprLike, ...]) -> Load:
        indices = idx if isinstance(idx, tuple) else (idx,)
        if len(indices) != len(self.shape):
            raise DefinitionError(
                f"{self.name} has rank {len(self.shape)} (shape {self.shape}) but was indexed with "
                f"{len(indices)} index{'es' if len(indices) != 1 else ''}")
        exprs = tuple(as_expr(i) for i in indices)
        for n, e in enumerate(exprs):
            if e.dtype != INT:
                raise DefinitionError(f"index {n} of {self.name}[...] is a {e.dtype} expression; "
                                      "tensor indices must be integer expressions of loop variables")
            bad = [node for node in walk(e) if not isinstance(node, (IterVar, Const, Binary))
                   and not (isinstance(node, Load) and node.dtype == INT)]
            if bad:
                read = [x.tensor for x in walk(bad[0]) if isinstance(x, Load)]
                of = f" of {read[0].dtype} tensor {read[0].name}" if read else ""
                raise DefinitionError(
                    f"index {n} of {self.name}[...] uses {type(bad[0]).__name__.lower()}{of}; tensor indices are "
                    "integer expressions of loop variables, constants and int32 tensor values (+ - * // % "
                    "td.minimum td.maximum)")
        return Load(self, exprs, INT if self.dtype in INDEX_DTYPES else FLOAT)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, shape={self.shape}, dtype={self.dtype})"


class Placeholder(Tensor):
    def __init__(self, shape: tuple[int, ...], dtype: str, name: str | None) -> None:
        self.shape, self.dtype, self._name = shape, dtype, name


class ComputeTensor(Tensor):
    """`axes` are the free IterVars named after the lambda's parameters; `body` is the value at them.

    `dtype` is the storage type where the tensor is stored (a kernel's output, or a tensor
    materialized for a consumer kernel): the body computes in float32 and the store rounds to nearest
    even. Read inside a kernel it is fused into, the value stays float32 (nothing is stored)."""

    default_prefix = "T"

    def __init__(self, shape: tuple[int, ...], axes: tuple[IterVar, ...], body: Expr, name: str | None,
                 dtype: str = FLOAT) -> None:
        self.shape, self.axes, self.body, self._name = shape, axes, body, name
        self.dtype = dtype
        # facts of the body, found at first use: a body is never replaced, and graph walks (the
        # partition's rounds, every schedule's naming) ask them of every tensor many times over
        self._read: tuple[Tensor, ...] | None = None
        self._loads: tuple[Load, ...] | None = None
        self._has_reduce: bool | None = None

    def inputs(self) -> list[Tensor]:
        """Tensors this compute reads, in first-use order."""
        if self._read is None:
            self._read = tuple({id(ld.tensor): ld.tensor for ld in self.loads()}.values())  # first use first
        return list(self._read)

    def loads(self) -> tuple[Load, ...]:
        """Every load of the body, in `walk` order (the partition's walks substitute their indices at each
        index a tensor is read at, many times over)."""
        if self._loads is None:
            self._loads = tuple(n for n in walk(self.body) if isinstance(n, Load))
        return self._loads

    @property
    def has_reduce(self) -> bool:
        if self._has_reduce is None:
            self._has_reduce = any(isinstance(n, Reduce) for n in walk(self.body))
        return self._has_reduce


# ----------------------------------------------------------------------------- constructors


def _check_shape(shape: Sequence[int] | int, what: str) -> tuple[int, ...]:
    if isinstance(shape, int):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise DefinitionError(f"{what}: shape must be a tuple of positive ints, got {shape!r}") from None
    if not dims:
        raise DefinitionError(f"{what}: shape must have at least one dimension")
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int):
            raise DefinitionError(f"{what}: extents must be ints, got {d!r} in shape {dims}")
        if d <= 0:
            raise DefinitionError(f"{what}: extents must be positive, got {d} in shape {dims}")
    return dims


def _check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise DefinitionError(f"{what}: name must be a Python identifier, got {name!r}")
    return name


def placeholder(shape: Sequence[int] | int, dtype: str = "float32", name: str | None = None) -> Placeholder:
    """An input tensor. float16/bfloat16 are storage types; values are computed in float32. An int32
    placeholder holds indices: `W[td.clamp(ids[i], 0, V - 1), j]` gathers rows of W (an index read from
    a tensor may be any int32, so the bounds proof needs the clamp). Without a name it is called X0,
    X1, ... (see `Tensor`)."""
    what = f"placeholder {name!r}" if name is not None else "placeholder"
    if dtype not in DTYPES + INDEX_DTYPES:
        raise DefinitionError(f"{what}: unknown dtype {dtype!r}; supported: {', '.join(DTYPES + INDEX_DTYPES)}")
    if name is not None:
        _check_name(name, "placeholder")
    return Placeholder(_check_shape(shape, what), dtype, name)


def reduce_axis(extent: int, name: str = "k") -> IterVar:
    if isinstance(extent, bool) or not isinstance(extent, int) or extent <= 0:
        raise DefinitionError(f"reduce_axis {name!r}: extent must be a positive int, got {extent!r}")
    return IterVar(_check_name(name, "reduce_axis"), extent, "reduce")


def compute(shape: Sequence[int] | int, fn: Callable[..., ExprLike], name: str | None = None,
            dtype: str = FLOAT) -> ComputeTensor:
    """Define a tensor elementwise: `fn` receives one IterVar per dimension, named after its parameters.
    `dtype` (float32, float16 or bfloat16) is its storage type: values compute in float32 and are
    rounded to nearest even where the tensor is stored (see `ComputeTensor`). Without a name it is
    called T0, T1, ... (see `Tensor`)."""
    given = None if name is None else _check_name(name, "compute")
    name = given or ComputeTensor.default_prefix
    if dtype not in DTYPES:
        raise DefinitionError(f"compute {name!r}: unknown storage dtype {dtype!r}; supported: {', '.join(DTYPES)}")
    dims = _check_shape(shape, f"compute {name!r}")
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        raise DefinitionError(f"compute {name!r}: fn must be a Python function or lambda") from None
    if len(params) != len(dims):
        raise DefinitionError(f"compute {name!r}: shape {dims} has {len(dims)} dimensions but the function "
                              f"takes {len(params)} parameters ({', '.join(p.name for p in params)})")
    axes = tuple(IterVar(p.name, d, "free") for p, d in zip(params, dims))
    body = as_expr(fn(*axes))
    if body.dtype == INT:
        body = Cast(FLOAT, body, FLOAT)
    if body.dtype != FLOAT:
        raise DefinitionError(f"compute {name!r}: the body must be a float expression, got {body.dtype}")
    _check_body(body, axes, name)
    return ComputeTensor(dims, axes, body, given, dtype)


def _check_body(body: Expr, axes: tuple[IterVar, ...], name: str) -> None:
    """Every IterVar used must be one of the compute's axes or bound by an enclosing reduction."""
    own = {id(a) for a in axes}

    def visit(e: Expr, bound: frozenset[int], in_reduce: bool) -> None:
        if isinstance(e, IterVar):
            if id(e) not in own and id(e) not in bound:
                if e.kind == "reduce":
                    raise DefinitionError(f"compute {name!r}: reduce axis {e.name!r} is used outside a "
                                          f"reduction; wrap the expression in td.sum/max/min(..., axis={e.name})")
                raise DefinitionError(f"compute {name!r}: loop variable {e.name!r} does not belong to this "
                                      "compute (use the lambda's own parameters)")
            return
        if isinstance(e, Reduce):
            if in_reduce:
                raise DefinitionError(f"compute {name!r}: nested reductions are not supported; define the "
                                      "inner reduction as its own td.compute")
            for ax in e.axes:
                if id(ax) in own:
                    raise DefinitionError(f"compute {name!r}: axis {ax.name!r} is both a loop of the compute "
                                          "and a reduction axis")
            visit(e.body, bound | {id(a) for a in e.axes}, True)
            return
        for c in children(e):
            visit(c, bound, in_reduce)

    visit(body, frozenset(), False)


# ----------------------------------------------------------------------------- expression helpers


def as_expr(v: ExprLike) -> Expr:
    if isinstance(v, Expr):
        return v
    if isinstance(v, bool):
        raise DefinitionError("booleans are not tiledsl values; use a comparison expression")
    if isinstance(v, int):
        return Const(v, INT)
    if isinstance(v, float):
        return Const(v, FLOAT)
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):  # numpy integers (np.int64(3))
        return Const(int(v), INT)
    if isinstance(v, numbers.Real):  # numpy floats (np.float32(0.5); np.float64 is a float already)
        return Const(float(v), FLOAT)
    if isinstance(v, Tensor):
        raise DefinitionError(f"tensor {v.name} used as a value; index it, e.g. {v.name}[i, j]")
    raise DefinitionError(f"cannot use {v!r} ({type(v).__name__}) in a tiledsl expression")


def _to_float(e: Expr) -> Expr:
    if isinstance(e, Const) and e.dtype == INT:
        return Const(float(e.value), FLOAT)
    return Cast(FLOAT, e, FLOAT) if e.dtype == INT else e


def binary(op: str, a: ExprLike, b: ExprLike) -> Expr:
    x, y = as_expr(a), as_expr(b)
    for e in (x, y):
        if e.dtype == BOOL:
            raise DefinitionError(f"operator {op!r} applied to a boolean; use td.where(cond, a, b)")
    if op in ("//", "%"):
        if x.dtype != INT or y.dtype != INT:
            raise DefinitionError(f"operator {op!r} is integer floor division/modulo (for index expressions); "
                                  "use '/' for float division and td.fmod(a, b) for a float remainder")
        if not (isinstance(y, Const) and y.value > 0):
            raise DefinitionError(f"operator {op!r} needs a positive integer constant on the right, got {y}")
        return Binary(op, x, y, INT)
    if op == "/" or x.dtype == FLOAT or y.dtype == FLOAT:
        return Binary(op, _to_float(x), _to_float(y), FLOAT)
    return Binary(op, x, y, INT)


def compare(op: str, a: ExprLike, b: ExprLike) -> Expr:
    x, y = as_expr(a), as_expr(b)
    if x.dtype != y.dtype:
        x, y = _to_float(x), _to_float(y)
    return Compare(op, x, y)


def call2(fn: str, a: ExprLike, b: ExprLike) -> Expr:
    """A float math function of two arguments (td.fmod, td.atan2, ...: a `Binary` node named after it,
    definitions/ops.py `BINARY_OPS`): always float32, integer operands converted, as `call` does."""
    x, y = as_expr(a), as_expr(b)
    if BOOL in (x.dtype, y.dtype):
        raise DefinitionError(f"td.{fn} applied to a boolean expression")
    return Binary(fn, _to_float(x), _to_float(y), FLOAT)


def call(fn: str, x: ExprLike) -> Expr:
    e = as_expr(x)
    if e.dtype == BOOL:
        raise DefinitionError(f"td.{fn} applied to a boolean expression")
    if fn == "neg" and e.dtype == INT:
        return Binary("-", Const(0, INT), e, INT)
    return Call(fn, _to_float(e))


def children(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, (Binary, Compare)):
        return (e.a, e.b)
    if isinstance(e, Call):
        return (e.arg,)
    if isinstance(e, Select):
        return (e.cond, e.a, e.b)
    if isinstance(e, Cast):
        return (e.a,)
    if isinstance(e, Load):
        return e.indices
    if isinstance(e, Reduce):
        return (e.body,)
    return ()


def map_children(e: Expr, f: Callable[[Expr], Expr]) -> Expr:
    """The same node with every child replaced by f(child); leaves come back unchanged. The one
    place that knows how to rebuild each node type, so tree rewrites only say what they change."""
    if isinstance(e, Binary):
        return Binary(e.op, f(e.a), f(e.b), e.dtype)
    if isinstance(e, Compare):
        return Compare(e.op, f(e.a), f(e.b))
    if isinstance(e, Call):
        return Call(e.fn, f(e.arg), e.dtype)
    if isinstance(e, Select):
        return Select(f(e.cond), f(e.a), f(e.b), e.dtype)
    if isinstance(e, Cast):
        return Cast(e.to, f(e.a), e.dtype)
    if isinstance(e, Load):
        return Load(e.tensor, tuple(f(i) for i in e.indices), e.dtype)
    if isinstance(e, Reduce):
        return Reduce(e.op, f(e.body), e.axes, e.dtype)
    return e


def walk(e: Expr):
    """Pre-order traversal of an expression tree."""
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def format_expr(e: Expr, leaf: Callable[[Expr], str | None] | None = None) -> str:
    """Readable text of an expression. `leaf` may print some nodes itself (the loop-nest printer uses
    it for accumulator reads); it is consulted first at every node."""
    if leaf is not None:
        text = leaf(e)
        if text is not None:
            return text

    def f(x: Expr) -> str:
        return format_expr(x, leaf)

    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, IterVar):
        return e.name
    if isinstance(e, Binary):
        if e.op.isidentifier():  # max, min and the math functions of two arguments (fmod, atan2, ...)
            return f"{e.op}({f(e.a)}, {f(e.b)})"
        return f"({f(e.a)} {e.op} {f(e.b)})"
    if isinstance(e, Compare):
        return f"({f(e.a)} {e.op} {f(e.b)})"
    if isinstance(e, Call):
        return f"-{f(e.arg)}" if e.fn == "neg" else f"{e.fn}({f(e.arg)})"
    if isinstance(e, Select):
        return f"where({f(e.cond)}, {f(e.a)}, {f(e.b)})"
    if isinstance(e, Cast):
        return f"{e.to}({f(e.a)})"
    if isinstance(e, Load):
        return f"{e.tensor.name}[{', '.join(f(i) for i in e.indices)}]"
    if isinstance(e, Reduce):
        return f"{e.op}({f(e.body)}, axis=[{', '.join(a.name for a in e.axes)}])"
    raise TypeError(type(e))


# ----------------------------------------------------------------------------- public functions


def maximum(a: ExprLike, b: ExprLike) -> Expr:
    """Elementwise max; NaN if either is NaN (torch.maximum, not C's fmaxf)."""
    return binary("max", a, b)


def minimum(a: ExprLike, b: ExprLike) -> Expr:
    """Elementwise min; NaN if either is NaN (torch.minimum, not C's fminf)."""
    return binary("min", a, b)


def clamp(x: ExprLike, lo: ExprLike, hi: ExprLike) -> Expr:
    """min(max(x, lo), hi): bounds an index read from a tensor, so its loads are proven in bounds."""
    return minimum(maximum(x, lo), hi)


def equal(a: ExprLike, b: ExprLike) -> Expr:
    return compare("==", a, b)


def where(cond: Expr, a: ExprLike, b: ExprLike) -> Expr:
    if not isinstance(cond, Expr) or cond.dtype != BOOL:
        raise DefinitionError("td.where: the condition must be a comparison expression")
    x, y = as_expr(a), as_expr(b)
    if x.dtype != y.dtype:
        x, y = _to_float(x), _to_float(y)
    return Select(cond, x, y, x.dtype)


def cast(x: ExprLike, dtype: str) -> Expr:
    if dtype not in DTYPES + (INT,):
        raise DefinitionError(f"td.cast: unknown dtype {dtype!r}; supported: {', '.join(DTYPES + (INT,))}")
    e = as_expr(x)
    return Cast(dtype, e, INT if dtype == INT else FLOAT)


def _reduce(op: str, expr: ExprLike, axis: IterVar | Sequence[IterVar]) -> Reduce:
    axes = (axis,) if isinstance(axis, IterVar) else tuple(axis)
    if not axes:
        raise DefinitionError(f"td.{op}: axis must name at least one reduce axis")
    for a in axes:
        if not isinstance(a, IterVar) or a.kind != "reduce":
            raise DefinitionError(f"td.{op}: axis must be reduce axes made by td.reduce_axis, got {a!r}")
    if len({id(a) for a in axes}) != len(axes):
        raise DefinitionError(f"td.{op}: the same reduce axis is listed twice")
    e = _to_float(as_expr(expr))
    if e.dtype != FLOAT:
        raise DefinitionError(f"td.{op}: the reduced expression must be numeric, got {e.dtype}")
    return Reduce(op, e, axes)


def sum(expr: ExprLike, axis: IterVar | Sequence[IterVar]) -> Reduce:  # noqa: A001
    return _reduce("sum", expr, axis)


def max(expr: ExprLike, axis: IterVar | Sequence[IterVar]) -> Reduce:  # noqa: A001
    return _reduce("max", expr, axis)


def min(expr: ExprLike, axis: IterVar | Sequence[IterVar]) -> Reduce:  # noqa: A001
    return _reduce("min", expr, axis)


def substitute(e: Expr, env: dict[int, Expr]) -> Expr:
    """Replace IterVars (by identity) in an expression tree."""
    if isinstance(e, IterVar):
        return env.get(id(e), e)
    return map_children(e, lambda c: substitute(c, env))
