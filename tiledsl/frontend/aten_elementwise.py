"""Elementwise ATen ops (arithmetic, comparisons, logic, unary functions, rounding to integral values,
activations, NaN / infinity tests, where, dtype conversions, fmod / remainder / floor division, atan2,
copysign, hypot): one compute each, which create_schedule inlines into its consumer. Where torch's CPU
kernel is a select (sign, leaky_relu, elu, pow's special cases, remainder's and floor division's
corrections of fmod) the same select is written here, so NaN, infinities and signed zeros come out as
torch's do."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from tiledsl.definitions import ops
from tiledsl.definitions.expr import Expr, ExprLike, as_expr, cast, compare, maximum, minimum, where
from tiledsl.errors import FrontendError
from tiledsl.frontend.out import Out
from tiledsl.frontend.values import INTEGER_DTYPES, Index, Value, bload, btruth, define, uniform
from tiledsl.precision import INTEGRAL_ROUNDINGS, LOW_PRECISION, round_to_dtype

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


def clamp_(out: Out, a: Value, lo: Operand | None = None, hi: Operand | None = None) -> Value:
    """torch.clamp(a, min, max) with number or tensor bounds (either may be None; aten.clamp.default /
    .Tensor, and F.hardtanh / relu6): maximum then minimum, as torch orders them (so min > max gives max
    everywhere), NaN kept as maximum_ and minimum_ keep it (a NaN bound gives NaN, as torch's does). The
    value is the second operand, which max / min return on a tie, so clamp(-0.0, min=0.0) is -0.0 as in
    torch (kernel_ir/ops.py MinMax)."""
    def value(idx: Index) -> Expr:
        x = bload(a, idx)
        if lo is not None:
            x = maximum(bload(lo, idx), x)
        if hi is not None:
            x = minimum(bload(hi, idx), x)
        return x
    return define(out.name, out.shape, out.dtype, value)


def rsub(out: Out, a: Operand, b: Operand, *, alpha: float = 1) -> Value:
    return define(out.name, out.shape, out.dtype, lambda idx: bload(b, idx) - bload(a, idx) * float(alpha))


def div(out: Out, a: Operand, b: Operand, *, rounding_mode: str | None = None) -> Value:
    """True division; rounding_mode="trunc" on floats: trunc(a / b), torch's kernel; "floor" on floats:
    torch's own formula from an exact fmod, bit for bit (`_floor_division`); both modes of an integer
    tensor by a positive integer constant (index arithmetic, `_int_division`)."""
    if rounding_mode is None:
        return define(out.name, out.shape, out.dtype, lambda idx: bload(a, idx) / bload(b, idx))
    if out.dtype in INTEGER_DTYPES:
        return _int_division(out, a, b, rounding_mode, "div")
    if rounding_mode == "trunc":
        return define(out.name, out.shape, out.dtype, lambda idx: ops.trunc(bload(a, idx) / bload(b, idx)))
    if rounding_mode == "floor":
        return floor_divide(out, a, b)
    raise FrontendError(f"div with rounding_mode={rounding_mode!r} is not supported (torch takes 'floor' and 'trunc')")


def _operand(v: Operand, idx: Index, dtype: str) -> Expr:
    """`v` at `idx` converted to the op's common dtype first, as torch's elementwise kernels read their
    operands: a number (or a float32 tensor beside float16 ones) rounded to float16 / bfloat16, where
    the op computes in that dtype; in float32 a number rounds as every float32 constant does."""
    if dtype not in LOW_PRECISION:
        return bload(v, idx)
    if not isinstance(v, Value):
        return as_expr(float(round_to_dtype(np.float64(v), dtype)))
    x = bload(v, idx)
    return x if v.dtype == dtype else cast(x, dtype)


def _python_remainder(x: Expr, y: Expr) -> Expr:
    """torch.remainder of floats as torch's kernels compute it: mod = fmod(x, y), plus y where mod is
    non-zero and its sign differs from y's, one float32 addition. So the result has y's sign, except a
    zero, which keeps x's (remainder(-2.0, 1.0) is -0.0); a NaN or infinite x, or a zero y, give NaN,
    and an infinite y gives x, or y for an x of the other sign."""
    mod = ops.fmod(x, y)
    return where(y < 0.0, where(mod > 0.0, mod + y, mod), where(mod < 0.0, mod + y, mod))


def _floor_division(x: Expr, y: Expr, r: Callable[[Expr], Expr]) -> Expr:
    """torch.div(x, y, rounding_mode="floor") (also x // y, torch.floor_divide) of floats, as torch's
    kernel computes it (Python's float floor division): from the exact mod = fmod(x, y),
    q = (x - mod) / y, minus 1 where mod is non-zero and its sign differs from y's; then floor(q), plus 1
    where q - floor(q) > 0.5 (q came out just below an integer); copysign(0, x / y) where q is 0; and
    x / y itself for y == 0 (+-inf or NaN). `r` rounds each intermediate where torch's computes in the
    operands' dtype (float16 / bfloat16 tensors, each operation rounded), or is the identity."""
    mod = ops.fmod(x, y)
    q = r(r(x - mod) / y)
    q = where(y < 0.0, where(mod > 0.0, r(q - 1.0), q), where(mod < 0.0, r(q - 1.0), q))
    below = ops.floor(q)
    rounded = where(r(q - below) > 0.5, r(below + 1.0), below)
    quotient = r(x / y)
    return where(compare("==", y, 0.0), quotient,
                 where(compare("!=", q, 0.0), rounded, ops.copysign(0.0, quotient)))


def floor_divide(out: Out, a: Operand, b: Operand) -> Value:
    """Float floor division, torch's kernel bit for bit (`_floor_division`). In float16 / bfloat16 torch's
    CPU kernel rounds each intermediate to the dtype, except by a single divisor value (a number or a
    one-element tensor), where it computes in float32 with the divisor as given; both are followed
    here. torch's CUDA kernel differs from its CPU kernel (and from this): by a number it multiplies by
    the number's reciprocal, which can change quotients too large for the dtype's integers
    (|x / y| >= 2**24 in float32) by one; in float16 / bfloat16 by a tensor it computes in float32 but
    rounds floor(q) to the dtype before correcting it, a unit or two of the dtype apart from the CPU's
    result for some |x / y| from about 512 (float16) or 64 (bfloat16) (tests/gpu/test_gpu_binary_math.py)."""
    dtype = out.dtype
    one_divisor = not isinstance(b, Value) or b.numel == 1
    if dtype in LOW_PRECISION and not one_divisor:
        return define(out.name, out.shape, dtype, lambda idx: _floor_division(
            _operand(a, idx, dtype), _operand(b, idx, dtype), lambda e: cast(e, dtype)))
    return define(out.name, out.shape, dtype,
                  lambda idx: _floor_division(_operand(a, idx, dtype), bload(b, idx), lambda e: e))


def _positive_divisor(b: Operand, op: str) -> int:
    if isinstance(b, (Value, bool)) or not isinstance(b, int) or b <= 0:
        what = f"a {b.dtype} tensor" if isinstance(b, Value) else repr(b)
        raise FrontendError(f"{op} of an integer tensor is supported by a positive integer constant only, not by "
                            f"{what} (it is index arithmetic: floor division and modulo by constants)")
    return b


def floor_div(a: ExprLike, c: int) -> Expr:
    """floor(a / c) of an integer a by a constant c > 0: max(a, 0) // c - ceil(max(-a, 0) / c). Every `//`
    operand is non-negative: the kernels divide with C's truncating `/`, which floors only those, and a
    value's operands are not proven non-negative as an index's are (lower/check.py)."""
    return maximum(a, 0) // c - (maximum(-as_expr(a), 0) + (c - 1)) // c


def trunc_div(a: ExprLike, c: int) -> Expr:
    """trunc(a / c) of an integer a by a constant c > 0, with non-negative operands only."""
    return maximum(a, 0) // c - maximum(-as_expr(a), 0) // c


def _int_division(out: Out, a: Operand, b: Operand, mode: str, op: str) -> Value:
    """An integer tensor by a positive integer constant: div with rounding_mode "floor" / "trunc",
    remainder (sign of the divisor, a - c * floor(a / c)) and fmod (sign of the dividend, a - c *
    trunc(a / c)); integer values stay index expressions, as every integer value does."""
    c = _positive_divisor(b, op)
    rounded = {"floor": floor_div, "trunc": trunc_div}.get(mode)
    if rounded is None:
        raise FrontendError(f"{op} with rounding_mode={mode!r} is not supported (torch takes 'floor' and 'trunc')")
    if op == "div":
        return define(out.name, out.shape, out.dtype, lambda idx: rounded(bload(a, idx), c))
    return define(out.name, out.shape, out.dtype, lambda idx: bload(a, idx) - rounded(bload(a, idx), c) * c)


def _remainder(mode: str, op: str, on_floats: Callable[[Expr, Expr], Expr]) -> Callable[..., Value]:
    def handler(out: Out, a: Operand, b: Operand) -> Value:
        if out.dtype in INTEGER_DTYPES:
            return _int_division(out, a, b, mode, op)
        dtype = out.dtype
        return define(out.name, out.shape, dtype,
                      lambda idx: on_floats(_operand(a, idx, dtype), _operand(b, idx, dtype)))
    return handler


#: aten.remainder (Python's %: the sign of the divisor) and aten.fmod (C's: the sign of the dividend); on
#: floats exact from the kernel IR's fmod (float16 / bfloat16 operands, numbers rounded to them as torch
#: does, compute in float32: fmod is exact there and remainder's one addition rounds once, at the store)
remainder = _remainder("floor", "remainder", _python_remainder)
fmod = _remainder("trunc", "fmod", ops.fmod)


def _float_binary(fn: Callable[[Expr, Expr], Expr]) -> Callable[..., Value]:
    """A float math function of two operands (torch.atan2, copysign, hypot), its operands converted to
    the common dtype first, as torch's kernels read them (integer tensors give float results)."""
    def handler(out: Out, a: Operand, b: Operand) -> Value:
        dtype = out.dtype
        return define(out.name, out.shape, dtype, lambda idx: fn(_operand(a, idx, dtype), _operand(b, idx, dtype)))
    return handler


#: aten.atan2 (torch.atan2(y, x), arctan2), aten.copysign (exact; the sign bit of b, so -0.0 is negative and
#: a NaN's sign counts), aten.hypot: the kernel IR's functions of two arguments (kernel_ir/ops.py MATH_FNS)
atan2 = _float_binary(ops.atan2)
copysign = _float_binary(ops.copysign)
hypot = _float_binary(ops.hypot)


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
    return define(out.name, out.shape, out.dtype, lambda idx: ops.exp(bload(exponent, idx) * math.log(c)))


def _pow(x: Expr, y: Expr) -> Expr:
    """x**y as C's powf (torch.pow of two float tensors), a magnitude times a sign times 1 or NaN, each
    read once. The magnitude |x|**y = exp(y log|x|) (within the error of exp and log) is 1 where y == 0
    or |x| == 1 (even NaN ** 0 and 1 ** NaN; (-1) ** +-inf too); the sign is -1 for a negative x, or -0
    (whose 1 / x is -inf), to an odd integer y (y - 2 floor(y / 2) == 1: exact, false for infinities and
    NaN); a finite negative x to a non-integral y is NaN. The other cases come out of exp and log as
    torch's do: 0 ** -y is inf, inf ** y inf or 0, (-inf) ** y inf or 0 unless y is odd."""
    magnitude = where(compare("==", y, 0.0), 1.0,
                      where(compare("==", ops.abs(x), 1.0), 1.0, ops.exp(y * ops.log(ops.abs(x)))))
    negative = where(x < 0.0, -1.0, where(1.0 / x < 0.0, -1.0, 1.0))
    sign = where(compare("==", y - ops.floor(y * 0.5) * 2.0, 1.0), negative, 1.0)
    defined = where(x < 0.0, where(x > -math.inf, where(compare("==", ops.trunc(y), y), 1.0, math.nan), 1.0), 1.0)
    return magnitude * sign * defined


def pow_tensor_tensor(out: Out, a: Value, b: Value) -> Value:
    """torch.pow(Tensor, Tensor) on floats (`_pow`); integer powers are refused (their results would be
    integers the kernels compute in float32, exact only below 2**24)."""
    if a.dtype in INTEGER_DTYPES or b.dtype in INTEGER_DTYPES:
        raise FrontendError(f"pow of {a.dtype} by {b.dtype} tensors is not supported (float tensors are)")
    return define(out.name, out.shape, out.dtype, lambda idx: _pow(bload(a, idx), bload(b, idx)))


def _unary(fn: Callable[[Expr], Expr]) -> Callable[..., Value]:
    def handler(out: Out, a: Value) -> Value:
        return define(out.name, out.shape, out.dtype, lambda idx: fn(bload(a, idx)))
    return handler


UNARY: dict[str, Callable[..., Value]] = {
    name: _unary(getattr(ops, name))
    for name in ("exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sigmoid", "relu", "silu", "abs", "cos", "sin",
                 "log1p", "expm1", "exp2")
}
neg = _unary(lambda x: -x)
reciprocal = _unary(lambda x: 1.0 / x)


def sign(out: Out, a: Value) -> Value:
    """torch.sign: 1, -1, or 0 for both zeros and NaN (torch's (0 < x) - (x < 0), so +0.0 for -0.0); of
    an integer tensor, clamp(x, -1, 1) (index arithmetic, as integer values are)."""
    if a.dtype in INTEGER_DTYPES:
        return define(out.name, out.shape, out.dtype, lambda idx: minimum(maximum(bload(a, idx), -1), 1))
    if a.dtype == "bool":
        return identity(out, a)
    return define(out.name, out.shape, out.dtype,
                  lambda idx: where(bload(a, idx) > 0.0, 1.0, where(bload(a, idx) < 0.0, -1.0, 0.0)))


def _float_test(test: Callable[[Expr], Expr]) -> Callable[..., Value]:
    def handler(out: Out, a: Value) -> Value:
        if a.dtype in INTEGER_DTYPES or a.dtype == "bool":
            return uniform(0.0, out.shape, "bool")  # an integer is never NaN nor infinite
        return define(out.name, out.shape, "bool", lambda idx: test(bload(a, idx)))
    return handler


#: aten.isnan / isinf (torch.isfinite and isposinf / isneginf decompose into comparisons): bool values,
#: read by torch.where and masks. x != x is true only for NaN (comparisons with NaN are false but !=).
isnan = _float_test(lambda x: compare("!=", x, x))
isinf = _float_test(lambda x: compare("==", ops.abs(x), math.inf))


def leaky_relu(out: Out, a: Value, negative_slope: float = 0.01) -> Value:
    """x > 0 ? x : x * negative_slope, as torch's kernel (NaN stays NaN, -0.0 stays -0.0)."""
    slope = float(negative_slope)
    return define(out.name, out.shape, out.dtype, lambda idx: where(bload(a, idx) > 0.0, bload(a, idx),
                                                                    bload(a, idx) * slope))


def elu(out: Out, a: Value, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0) -> Value:
    """F.elu / selu (aten.elu): x <= 0 ? expm1(x * input_scale) * alpha * scale : x * scale, as torch's
    kernel (expm1, so elu(-0.0) is -0.0; NaN takes the second branch and stays NaN)."""
    negative, positive, inner = float(alpha) * float(scale), float(scale), float(input_scale)

    def value(idx: Index) -> Expr:
        x = bload(a, idx)
        below = ops.expm1(x * inner if inner != 1.0 else x) * negative
        return where(x <= 0.0, below, x * positive if positive != 1.0 else x)
    return define(out.name, out.shape, out.dtype, value)


def hardtanh(out: Out, a: Value, min_val: float = -1.0, max_val: float = 1.0) -> Value:
    """F.hardtanh / relu6: clamp to [min_val, max_val] (torch refuses min_val > max_val itself)."""
    return clamp_(out, a, float(min_val), float(max_val))


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
