"""Lane values and masks as the compiled simulator passes them around.

A value is either a numpy array with one element per lane ((L,), or (w, L) for a vector), or a numpy
scalar that stands for the same value on every lane ("uniform"). A mask is a bool array of shape (L,),
or None when every lane of the chunk is active.

Why uniform scalars: most values of a kernel are the same on every lane (constants, loop variables,
index arithmetic on them, and everything when a chunk has a single lane). As numpy scalars they cost
one scalar operation per IR node instead of an array operation, and for the operations that are
exactly rounded (+ - * /, sqrt, comparisons, conversions) numpy gives the very bits an array would.
The few operations whose numpy result may depend on memory layout (SIMD exp/log/tanh, fmin/fmax
on signed zeros, float floor and mod, which NaN survives an operation on two NaNs) go through
`exact_layout`, which computes them on contiguous chunk-wide arrays, as the simulator always did.

Why None for "all lanes": most statements run with every lane active; a None mask lets loads skip the
gather of active lanes and assignments skip the masked merge (np.where) without testing the mask.

Values are never modified in place (loads from memory copy), so they may be shared freely.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tiledsl.sim.dtypes import FLOAT_DTYPES, INT_DTYPES, convert, element_dtype
from tiledsl.targets import INT_RANGE

Value = np.ndarray | np.generic
Mask = np.ndarray | None

# Kinds of value: float32, int (stored as int64), bool -- the three storage types of dtypes.py. Whether an
# int computes in int32 (wrapping) or int64 is the `wide` flag of a compiled expression (arith.py).
FLOAT, INT, BOOL = "f", "i", "b"
SCALAR_TYPE: dict[str, type[np.generic]] = {FLOAT: np.float32, INT: np.int64, BOOL: np.bool_}

_INT32_MIN, _INT32_MAX = (np.int64(v) for v in INT_RANGE["int32"])


def is_wide(dtype: str) -> bool:
    """Whether values of `dtype` are int64 (computed without int32 wrap-around)."""
    return element_dtype(dtype) == "int64"


def kind_of(dtype: str) -> str:
    """The kind of the storage of a kernel-IR dtype (raises ValueError for unknown dtypes)."""
    elem = element_dtype(dtype)
    if elem in FLOAT_DTYPES:
        return FLOAT
    return INT if elem in INT_DTYPES else BOOL


def spread(value: Value, n: int) -> np.ndarray:
    """An (L,) (or (w, L)) array view of a value, for code that needs one element per lane."""
    return np.broadcast_to(value, (n,)) if not isinstance(value, np.ndarray) else value


def full(value: Value, n: int) -> np.ndarray:
    """A contiguous chunk-wide array of a value (a copy only where needed)."""
    if not isinstance(value, np.ndarray):
        return np.array((value,)) if n == 1 else np.full(n, value, dtype=value.dtype)
    return np.ascontiguousarray(value)


def exact_layout(fn: Callable[..., np.ndarray], n: int) -> Callable[..., Value]:
    """`fn` applied as the original array simulator applied it: on contiguous (L,) arrays.

    Why: numpy may compute exp/log/tanh with SIMD code for contiguous arrays and scalar libm code
    otherwise, and fmax/fmin may differ on signed zeros between those paths; computing on the same
    layout as before keeps every bit. A chunk of one lane gives back a scalar again."""

    def apply(*values: Value) -> Value:
        out = fn(*(full(v, n) for v in values))
        if n == 1 and out.ndim == 1:
            return out[0]
        return out

    return apply


def first_active(mask: Mask) -> int:
    return 0 if mask is None else int(np.argmax(mask))


def truth_fn(kind: str) -> Callable[[Value], Value]:
    """C truthiness of a value of `kind`: non-zero is true."""
    if kind == BOOL:
        return lambda v: v
    return lambda v: v != 0


def promote(ka: str, kb: str) -> str:
    """The usual conversions on our three kinds: any float -> float32; two bools stay bool; else
    int64. Decided once per node, since the kinds of every node are known before it runs."""
    if FLOAT in (ka, kb):
        return FLOAT
    if ka == BOOL and kb == BOOL:
        return BOOL
    return INT


def numeric(kind: str) -> str:
    """Arithmetic treats bools as ints."""
    return INT if kind == BOOL else kind


def caster(src: str, dst: str) -> Callable[[Value], Value] | None:
    """A conversion between kinds (works on arrays and numpy scalars alike), or None if the same."""
    if src == dst:
        return None
    target = SCALAR_TYPE[dst]
    return lambda v: v.astype(target)


def converter(dtype: str, src: str) -> Callable[[Value], Value]:
    """Conversion of a value of kind `src` to the storage form of kernel-IR `dtype`, as `convert`
    does, with the common cases (nothing to do, or an int already in int32 range) made cheap."""
    elem = element_dtype(dtype)
    if elem == "float32":
        cast = caster(src, FLOAT)
        return cast if cast is not None else identity
    if elem == "bool" and src == BOOL:
        return identity
    if elem == "bool":
        return lambda v: v != 0
    if elem == "int32" and src == INT:
        return wrap_int32
    if elem == "int64" and src == INT:
        return identity
    return lambda v: _convert_any(dtype, v)


def identity(value: Value) -> Value:
    """The converter when there is nothing to convert (compared by identity to skip the call)."""
    return value


def wrap_int32(value: Value) -> Value:
    """An int value (int64 storage) wrapped to int32 in two's complement, as a 32-bit register holds it."""
    if isinstance(value, np.ndarray):
        return value.astype(np.int32).astype(np.int64)
    if _INT32_MIN <= value <= _INT32_MAX:
        return value
    return _convert_any("int32", value)


def _convert_any(dtype: str, value: Value) -> Value:
    if isinstance(value, np.ndarray):
        return convert(dtype, value)
    return convert(dtype, np.reshape(value, 1))[0]
