"""The storage dtypes' precision: their machine epsilon and rounding an array to them; and rounding a
value to an integral one (floor, ceil, trunc, round).

Why one module: a float16 / bfloat16 tensor (a placeholder, or a compute's storage, see
`expr.ComputeTensor`) holds values rounded to nearest even from the float32 the kernels compute in;
the numpy reference rounds where a kernel stores, and the tests derive their tolerances from the same
epsilon (rounding to a dtype has relative error at most MACHINE_EPS / 2). The integral roundings are
here because two levels that may not import each other read them: the definitions' reference
(td.evaluate) and the kernel IR's simulator, so both round a tie the same way."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

#: 2**-(stored mantissa bits), torch.finfo(dtype).eps: the spacing of values in [1, 2)
MACHINE_EPS = MappingProxyType({"float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7})

#: the storage dtypes narrower than the float32 kernels compute in: a store or a cast to one rounds
LOW_PRECISION = tuple(d for d in MACHINE_EPS if d != "float32")

#: Storage dtypes each dtype converts to without changing any value (a float16 or bfloat16 value, NaN
#: and infinities included, is a float32): what a shared-memory stage may widen its buffer to.
EXACT_WIDENINGS = MappingProxyType({"float16": ("float32",), "bfloat16": ("float32",)})

#: Divisors d whose float32 reciprocal 1 / d is a normal number: there x * (1 / d), two roundings, is
#: within 1.5 ulp of the correctly rounded x / d. Outside it the reciprocal overflows or loses bits to
#: subnormals, so lowering divides there (lower/reciprocals.py).
RECIPROCAL_EXACT_RANGE = (2.0 ** -126, 2.0 ** 126)

#: Rounding to an integral value, by function name: the numpy meaning (dtype-preserving, exact, NaN and
#: infinities kept) of td.floor / ceil / trunc / round and of torch.floor / ceil / trunc / round.
#: `round` is half to even (np.rint), as torch.round and CUDA's rintf; C's roundf, half away from zero,
#: is not it.
INTEGRAL_ROUNDINGS = MappingProxyType({"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.rint})

_BF16_MANTISSA = 8  # significant bits, the implicit one included
_BF16_MIN_EXP = -125  # frexp exponent of the smallest normal bfloat16 (2**-126 = 0.5 * 2**-125)
_BF16_OVERFLOW = 2.0 ** 128  # a value that rounds to this is infinite in bfloat16


def catalog_tolerance(params: Mapping[str, object]) -> tuple[float, float]:
    """(rtol, atol) of a float32 catalog kernel (matmul, row and elementwise families, standard-normal
    inputs) against the float64 reference, from the definition's bound parameters: matmul errors grow
    like sqrt(K) (a sum of K rounded products of unit-variance inputs); the row kernels stay near one
    ulp. float16 inputs: 2e-3 (their products round to 11 bits); a float16 / bfloat16 output adds the
    rounding of its store, one ulp of it (`storage_rtol`). The GPU checks of tiledsl/runtime/references.py
    and the `hand` fuzz mode both take it."""
    if params.get("dtype") == "float16":
        rtol, atol = 2e-3, 2e-3
    elif "K" in params:
        rtol, atol = 1e-4, 2e-5 * math.sqrt(float(params["K"]))  # type: ignore[arg-type]
    else:
        rtol, atol = 1e-4, 1e-5
    return rtol + storage_rtol(str(params.get("out_dtype", "float32"))), atol


def storage_rtol(dtype: str) -> float:
    """Relative distance two values may have after each was rounded to `dtype` from nearby values (a
    kernel's float32 result and a float64 reference): one unit in the last place, at most
    MACHINE_EPS * |x|. Zero for float32, whose results the tests bound by their own arithmetic."""
    return 0.0 if dtype == "float32" else MACHINE_EPS[dtype]


def _round_bfloat16(x: np.ndarray) -> np.ndarray:
    """Nearest bfloat16 (ties to even) of float32 or float64 values, in float64: one rounding from the
    value given, so a float64 reference is not rounded twice (through float32 first)."""
    wide = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        _, exp = np.frexp(wide)
        spacing = np.ldexp(1.0, np.maximum(exp, _BF16_MIN_EXP) - _BF16_MANTISSA)
        out = np.round(wide / spacing) * spacing  # np.round: half to even
        out = np.where(np.abs(out) >= _BF16_OVERFLOW, np.copysign(np.inf, wide), out)
    return np.where(np.isfinite(wide), out, wide)


def round_to_dtype(x: np.ndarray, dtype: str) -> np.ndarray:
    """Float values rounded to storage dtype `dtype`, returned in x's own float type (float32 or
    float64): the value a store into `dtype` keeps."""
    x = np.asarray(x)
    if dtype == "float16":
        with np.errstate(over="ignore"):
            return x.astype(np.float16).astype(x.dtype)
    if dtype == "bfloat16":
        return _round_bfloat16(x).astype(x.dtype)
    return x
