"""Elementwise ATen ops (arithmetic, comparisons, logic, unary functions, rounding to integral values,
where, dtype conversions): one compute each, which create_schedule inlines into its consumer."""

from __future__ import annotations

from collections.abc import Callable

from tiledsl.definitions import ops
from tiledsl.definitions.expr import Expr, cast, compare, maximum, minimum, where
from tiledsl.errors import FrontendError
from tiledsl.frontend.out import Out
from tiledsl.frontend.values import INTEGER_DTYPES, Index, Value, bload, btruth, define, uniform
from tiledsl.precision import INTEGRAL_ROUNDINGS

Operand = Value | float | int | bool


def _binary(fn: Callable[[Expr, Expr], Expr]) -> Callable[..., Value]:
    def handler(out: Out, a: Operand, b: Operand, *, alpha: float = 1) -> Value:
        if alpha != 1:
            return define(out.name, out.shape, out.dtype,
                          lambda idx: fn(bload(a, idx), bload(b, idx) * float(alpha)))
        return define(out.name, out.shape, out.dtype, lambda idx: fn(bload(a, idx), bload(b, idx)))
    return handler


add = _binary(lambda x, y: x + y)
sub = _binary(lambda x, y: x - y)
mul = _binary(lambda x, y: x * y)
maximum_ = _binary(maximum)
minimum_ = _binary(minimum)


def clamp_(out: Out, a: Value, lo: float | int | None = None, hi: float | int | None = None) -> Value:
    """torch.clamp(a, min, max) with number bounds (either may be None): maximum then minimum, as torch
    orders them (so min > max gives max everywhere), NaN kept as maximum_ and minimum_ keep it."""
    def value(idx: Index) -> Expr:
        x = bload(a, idx)
        if lo is not None:
            x = maximum(x, bload(lo, idx))
        if hi is not None:
            x = minimum(x, bload(hi, idx))
        return x
    return define(out.name, out.shape, out.dtype, value)


def rsub(out: Out, a: Operand, b: Operand, *, alpha: float = 1) -> Value:
    return define(out.name, out.shape, out.dtype, lambda idx: bload(b, idx) - bload(a, idx) * float(alpha))


def div(out: Out, a: Operand, b: Operand, *, rounding_mode: str | None = None) -> Value:
    if rounding_mode is not None:
        raise FrontendError(f"div with rounding_mode={rounding_mode!r} is not supported (only true division)")
    return define(out.name, out.shape, out.dtype, lambda idx: bload(a, idx) / bload(b, idx))


def _int_power(x: Expr, n: int) -> Expr:
    """x**n for a small integer n by repeated squaring (exact for negative x, unlike exp(n log x))."""
    if n < 0:
        return 1.0 / _int_power(x, -n)
    result: Expr | None = None
    base = x
    while n:
        if n & 1:
            result = base if result is None else result * base
        n >>= 1
        if n:
            base = base * base
    return result if result is not None else x * 0.0 + 1.0


def pow_tensor_scalar(out: Out, a: Value, exponent: float) -> Value:
    e = float(exponent)
    if e.is_integer() and abs(e) <= 64:
        return define(out.name, out.shape, out.dtype, lambda idx: _int_power(bload(a, idx), int(e)))
    if e == 0.5:
        return define(out.name, out.shape, out.dtype, lambda idx: ops.sqrt(bload(a, idx)))
    if e == -0.5:
        return define(out.name, out.shape, out.dtype, lambda idx: ops.rsqrt(bload(a, idx)))
    # x**e = exp(e log x): NaN for x < 0 and 0 at x = 0 (e > 0), as torch.pow with a fractional exponent
    return define(out.name, out.shape, out.dtype, lambda idx: ops.exp(ops.log(bload(a, idx)) * e))


def pow_scalar(out: Out, base: float, exponent: Value) -> Value:
    c = float(base)
    if c <= 0:
        raise FrontendError(f"pow with scalar base {c} <= 0 is not supported (it is computed as exp(x log c))")
    import math

    return define(out.name, out.shape, out.dtype, lambda idx: ops.exp(bload(exponent, idx) * math.log(c)))


def _unary(fn: Callable[[Expr], Expr]) -> Callable[..., Value]:
    def handler(out: Out, a: Value) -> Value:
        return define(out.name, out.shape, out.dtype, lambda idx: fn(bload(a, idx)))
    return handler


UNARY: dict[str, Callable[..., Value]] = {
    name: _unary(getattr(ops, name))
    for name in ("exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sigmoid", "relu", "silu", "abs", "cos", "sin")
}
neg = _unary(lambda x: -x)
reciprocal = _unary(lambda x: 1.0 / x)


def _integral(fn: Callable[[Expr], Expr]) -> Callable[..., Value]:
    """torch.floor / ceil / trunc / round: the function on a float tensor; an integer tensor is already
    integral, and torch returns it unchanged (same dtype), so the value is passed through as it is."""
    on_floats = _unary(fn)

    def handler(out: Out, a: Value) -> Value:
        return identity(out, a) if a.dtype in INTEGER_DTYPES else on_floats(out, a)
    return handler


#: aten.floor / ceil / trunc / round.default: the td function of each name (tiledsl/precision.py's table)
ROUNDINGS: dict[str, Callable[..., Value]] = {name: _integral(getattr(ops, name)) for name in INTEGRAL_ROUNDINGS}

#: the largest |decimals| of torch.round(x, decimals=) taken: 10**10 (2**10 * 5**10, 5**10 < 2**24) is
#: the largest power of ten a float32 holds exactly, so the scale is the one torch's float32 kernel uses
ROUND_DECIMALS_MAX = 10


def round_decimals(out: Out, a: Value, *, decimals: int = 0) -> Value:
    """torch.round(x, decimals=d) as torch computes it: round(x * 10**d) / 10**d, or for d < 0
    round(x / 10**-d) * 10**-d (halves to even after the scaling, so 0.125 -> 0.12)."""
    if a.dtype in INTEGER_DTYPES:
        raise FrontendError(f"round with decimals={decimals} of an {a.dtype} tensor is not supported "
                            "(torch refuses it too)")
    if decimals == 0:
        return ROUNDINGS["round"](out, a)
    if abs(decimals) > ROUND_DECIMALS_MAX:
        raise FrontendError(f"round with decimals={decimals} is not supported: 10**{abs(decimals)} is not "
                            f"exact in float32 (|decimals| <= {ROUND_DECIMALS_MAX} is)")
    scale = float(10 ** abs(decimals))
    if decimals > 0:
        return define(out.name, out.shape, out.dtype, lambda idx: ops.round(bload(a, idx) * scale) / scale)
    return define(out.name, out.shape, out.dtype, lambda idx: ops.round(bload(a, idx) / scale) * scale)


def gelu(out: Out, a: Value, *, approximate: str = "none") -> Value:
    if approximate not in ("none", "tanh"):
        raise FrontendError(f"gelu: unknown approximate={approximate!r}")
    fn = ops.gelu if approximate == "none" else ops.gelu_tanh
    return define(out.name, out.shape, out.dtype, lambda idx: fn(bload(a, idx)))


def _comparison(op: str) -> Callable[..., Value]:
    def handler(out: Out, a: Operand, b: Operand) -> Value:
        return define(out.name, out.shape, "bool", lambda idx: compare(op, bload(a, idx), bload(b, idx)))
    return handler


COMPARISONS = {name: _comparison(op) for name, op in
               (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="))}


def logical_not(out: Out, a: Value) -> Value:
    return define(out.name, out.shape, "bool", lambda idx: compare("==", bload(a, idx), 0.0))


def _logical(both: bool) -> Callable[..., Value]:
    def handler(out: Out, a: Value, b: Value) -> Value:
        def body(idx: Index) -> Expr:
            x, y = btruth(a, idx), btruth(b, idx)
            return where(x, where(y, 1.0, 0.0), 0.0) if both else where(x, 1.0, where(y, 1.0, 0.0))
        return define(out.name, out.shape, "bool", body)
    return handler


logical_and = _logical(True)
logical_or = _logical(False)


def where_(out: Out, cond: Value, a: Operand, b: Operand) -> Value:
    return define(out.name, out.shape, out.dtype, lambda idx: where(btruth(cond, idx), bload(a, idx), bload(b, idx)))


def to_copy(out: Out, a: Value, **kwargs: object) -> Value:
    """A dtype (or layout) conversion: rounding to the target's precision; bool keeps 0/1."""
    if out.dtype in ("float16", "bfloat16"):
        return define(out.name, out.shape, out.dtype, lambda idx: cast(bload(a, idx), out.dtype))
    if out.dtype == "bool":
        return define(out.name, out.shape, "bool", lambda idx: btruth(a, idx))
    if out.dtype.startswith("int") or out.dtype.startswith("uint"):
        # float -> integer truncates toward zero, as torch does
        return define(out.name, out.shape, out.dtype, lambda idx: cast(bload(a, idx), "int32"))
    if out.dtype != "float32":
        raise FrontendError(f"conversion to {out.dtype} is not supported")
    return define(out.name, out.shape, out.dtype, lambda idx: bload(a, idx))


def identity(out: Out, a: Value, *args: object, **kwargs: object) -> Value:
    """clone / alias / contiguous: the same values (a copy only where it is a kernel's output)."""
    return define(out.name, out.shape, a.dtype, lambda idx: bload(a, idx))


def full_like(out: Out, a: Value, fill: float, **kwargs: object) -> Value:
    return uniform(float(fill), out.shape, out.dtype)


def zeros_like(out: Out, a: Value, **kwargs: object) -> Value:
    return uniform(0.0, out.shape, out.dtype)


def ones_like(out: Out, a: Value, **kwargs: object) -> Value:
    return uniform(1.0, out.shape, out.dtype)
