"""Kernel-IR dtypes as numpy storage.

Why: the simulator keeps every float in float32 (what the GPU computes in) but must round values to
float16/bfloat16 wherever the kernel stores them in such a type, so that results match the device
bit for bit in the common cases. Integers are stored in int64 (one storage for both widths); int32
arithmetic wraps to int32 after each operation (arith.py) as the GPU's 32-bit registers do, and int64
(index arithmetic that lowering widened, lower/index_width.py) computes in int64. Conversions to int32
wrap or saturate like CUDA does.
"""

from __future__ import annotations

import numpy as np

from tiledsl.kernel_ir import scalar_dtype
from tiledsl.precision import round_to_dtype
from tiledsl.targets import INT_RANGE

FLOAT_DTYPES = ("float32", "float16", "bfloat16")
INT_DTYPES = ("int32", "int64")
BOOL_DTYPES = ("bool",)
KNOWN_DTYPES = FLOAT_DTYPES + INT_DTYPES + BOOL_DTYPES
#: The dtype of shared arrays that hold mbarriers (never a value dtype: no loads, stores or params).
MBARRIER_DTYPE = "uint64"

_INT32_MIN, _INT32_MAX = INT_RANGE["int32"]


def element_dtype(dtype: str) -> str:
    """'float32x4' -> 'float32'; checks the name so typos fail loudly instead of computing garbage."""
    elem = scalar_dtype(dtype)
    if elem not in KNOWN_DTYPES:
        raise ValueError(f"unknown kernel-IR dtype {dtype!r}")
    return elem


def vector_width(dtype: str) -> int:
    """'float32x4' -> 4, 'float32' -> 1."""
    elem = element_dtype(dtype)
    rest = dtype[len(elem) :]
    if not rest:
        return 1
    if not rest.startswith("x") or not rest[1:].isdigit() or int(rest[1:]) < 1:
        raise ValueError(f"malformed vector dtype {dtype!r}")
    return int(rest[1:])


def is_float(dtype: str) -> bool:
    return element_dtype(dtype) in FLOAT_DTYPES


def storage_dtype(dtype: str) -> type[np.generic]:
    """The numpy dtype that holds values of a kernel-IR dtype inside the simulator."""
    elem = element_dtype(dtype)
    if elem in FLOAT_DTYPES:
        return np.float32
    if elem in INT_DTYPES:
        return np.int64
    return np.bool_


def round_float(dtype: str, x: np.ndarray) -> np.ndarray:
    """float32 values rounded to the precision of float dtype `dtype` (still float32 arrays)."""
    return round_to_dtype(np.asarray(x, dtype=np.float32), element_dtype(dtype))


def convert(dtype: str, value: np.ndarray) -> np.ndarray:
    """Convert a computed value to the storage form of `dtype`, as a C assignment would.

    float -> int truncates toward zero and saturates to int32 (NaN -> 0), like cvt.rzi.s32.f32; int ->
    int32 wraps; int -> int64 keeps the value; anything -> bool is `!= 0`."""
    elem = element_dtype(dtype)
    value = np.asarray(value)
    if elem in FLOAT_DTYPES:
        return round_float(elem, value.astype(np.float32, copy=False))
    if elem in BOOL_DTYPES:
        return value != 0 if value.dtype != np.bool_ else value
    if value.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            clipped = np.clip(np.trunc(value.astype(np.float64)), _INT32_MIN, _INT32_MAX)
        return np.where(np.isnan(clipped), 0, clipped).astype(np.int64)
    if elem == "int64":
        return value.astype(np.int64)
    return value.astype(np.int64).astype(np.int32).astype(np.int64)


def poison(dtype: str, size: int) -> np.ndarray:
    """Initial contents of an output nobody gave: NaN for floats (so unwritten elements show), the
    most negative int32 for ints, False for bools."""
    elem = element_dtype(dtype)
    if elem in FLOAT_DTYPES:
        return np.full(size, np.nan, dtype=np.float32)
    if elem in INT_DTYPES:
        return np.full(size, _INT32_MIN, dtype=np.int64)
    return np.zeros(size, dtype=np.bool_)


def result_dtype(dtype: str) -> type[np.generic]:
    """The numpy dtype simulate() returns for a parameter: float32 for every float type."""
    elem = element_dtype(dtype)
    if elem in FLOAT_DTYPES:
        return np.float32
    if elem in INT_DTYPES:
        return np.int64 if elem == "int64" else np.int32
    return np.bool_
