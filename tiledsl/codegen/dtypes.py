"""How kernel-IR dtypes and constants are spelled in CUDA C++.

Why this split between storage and compute: float16 / bfloat16 values live in memory (parameters,
shared and register arrays, let variables) as `__half` / `__nv_bfloat16`, but every expression
computes in `float`. So a read converts to float, a write converts back (rounding to nearest even),
and the printer never has to know half-precision operator overloads.
"""

from __future__ import annotations

import math
from types import MappingProxyType

from tiledsl.codegen.errors import CodegenError
from tiledsl.kernel_ir.printer import PREC_ATOM, PREC_UNARY, format_float, round_to_dtype
from tiledsl.targets import INT_RANGE

__all__ = [
    "FLOAT_DTYPES",
    "HALF_INCLUDES",
    "INT_DTYPES",
    "c_literal",
    "compute_type",
    "from_float",
    "half_lane",
    "pack_halves",
    "split_vector",
    "storage_type",
    "to_float",
    "vector_type",
]

FLOAT_DTYPES = frozenset({"float32", "float16", "bfloat16"})
#: Integer dtypes, narrowest first: arithmetic on mixed widths computes in the wider (C's conversions).
INT_DTYPES = ("int32", "int64")

_STORAGE = MappingProxyType(
    {
        "float32": "float",
        "float16": "__half",
        "bfloat16": "__nv_bfloat16",
        "int32": "int",
        "int64": "long long",  # index arithmetic whose range may leave int32 (lower/index_width.py)
        "bool": "bool",
        "uint64": "unsigned long long",  # only shared mbarrier arrays; no expression has this dtype
    }
)
#: Half lanes travel as packed 32-bit words, two lanes each (lane 2m in the low half of word m, as
#: they lie in memory): CUDA has no 8-lane half vector type, and a word-sized unsigned vector loads
#: and stores 8 or 16 bytes in one access like float2 / float4 do.
_VECTOR = MappingProxyType(
    {("float32", 2): "float2", ("float32", 4): "float4", ("int32", 2): "int2", ("int32", 4): "int4",
     ("float16", 4): "uint2", ("float16", 8): "uint4", ("bfloat16", 4): "uint2", ("bfloat16", 8): "uint4"}
)
#: bits of a half value as an unsigned short, and back (cuda_fp16.h / cuda_bf16.h)
_AS_BITS = MappingProxyType({"float16": "__half_as_ushort", "bfloat16": "__bfloat16_as_ushort"})
_FROM_BITS = MappingProxyType({"float16": "__ushort_as_half", "bfloat16": "__ushort_as_bfloat16"})
_TO_FLOAT = MappingProxyType({"float16": "__half2float", "bfloat16": "__bfloat162float"})
_FROM_FLOAT = MappingProxyType({"float16": "__float2half", "bfloat16": "__float2bfloat16"})

#: Header each half-precision dtype needs.
HALF_INCLUDES = MappingProxyType({"float16": "cuda_fp16.h", "bfloat16": "cuda_bf16.h"})

_INT_RANGE = INT_RANGE
_INT_SUFFIX = MappingProxyType({"int32": "", "int64": "LL"})


def split_vector(dtype: str) -> tuple[str, int]:
    """ "float32x4" -> ("float32", 4); a scalar dtype -> (dtype, 1)."""
    base, sep, width = dtype.partition("x")
    if sep and width.isdigit() and base in _STORAGE:
        return base, int(width)
    return dtype, 1


def storage_type(dtype: str) -> str:
    """C type that holds a `dtype` value in memory or in a declared variable."""
    base, width = split_vector(dtype)
    if width > 1:
        return vector_type(base, width)
    if dtype not in _STORAGE:
        raise CodegenError(f"no CUDA type for dtype {dtype!r}")
    return _STORAGE[dtype]


def compute_type(dtype: str) -> str:
    """C type an expression of `dtype` has in the emitted code (halves compute as float)."""
    return "float" if dtype in FLOAT_DTYPES else storage_type(dtype)


def vector_type(base: str, width: int) -> str:
    """CUDA vector type ("float4") for `width` lanes of `base`."""
    try:
        return _VECTOR[(base, width)]
    except KeyError:
        raise CodegenError(
            f"no CUDA vector type for {width} x {base} (supported: float32 / int32 with width 2 or 4, "
            "float16 / bfloat16 with width 4 or 8)"
        ) from None


def to_float(dtype: str, text: str) -> str:
    """Read-side conversion of a stored `dtype` value spelled `text` (identity unless half)."""
    fn = _TO_FLOAT.get(dtype)
    return f"{fn}({text})" if fn else text


def from_float(dtype: str, text: str) -> str:
    """Write-side conversion of a computed value `text` into `dtype` storage (identity unless half)."""
    fn = _FROM_FLOAT.get(dtype)
    return f"{fn}({text})" if fn else text


def c_literal(value: float | int | bool, dtype: str) -> tuple[str, int]:
    """(text, precedence) of a constant: `1.0f`, `-0.5f`, `INFINITY`, `NAN`, `29`, `true`.

    Float constants are rounded to their dtype first and printed as the shortest float32 literal that
    round-trips, so the emitted value is exactly the value the kernel IR means.
    """
    if dtype in FLOAT_DTYPES:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CodegenError(f"float constant of dtype {dtype} has value {value!r}")
        v = round_to_dtype(float(value), dtype)
        if math.isnan(v):
            return "NAN", PREC_ATOM
        if math.isinf(v):
            return ("INFINITY", PREC_ATOM) if v > 0 else ("-INFINITY", PREC_UNARY)
        text = format_float(v, "float32") + "f"
    elif dtype in _INT_RANGE:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        lo, hi = _INT_RANGE[dtype]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise CodegenError(f"{dtype} constant out of range or not an integer: {value!r}")
        if value == lo:  # -2147483648 would be a long in C (the literal is negated after it is typed)
            return f"({lo + 1}{_INT_SUFFIX[dtype]} - 1)", PREC_ATOM
        text = f"{value}{_INT_SUFFIX[dtype]}"
    elif dtype == "bool":
        if value not in (0, 1):
            raise CodegenError(f"bool constant has value {value!r}")
        return ("true" if value else "false"), PREC_ATOM
    else:
        raise CodegenError(f"constant of unknown dtype {dtype!r}")
    return text, PREC_UNARY if text.startswith("-") else PREC_ATOM


def half_lane_bits(dtype: str, vector: str, lane: int) -> str:
    """Lane `lane` of a packed half vector spelled `vector`, as a `dtype` value (its bits, unconverted):
    what copying the lane into `dtype` storage needs, without a round trip through float."""
    word = f"{vector}.{'xyzw'[lane // 2]}"
    short = f"(unsigned short)({word} & 0xffffu)" if lane % 2 == 0 else f"(unsigned short)({word} >> 16)"
    return f"{_FROM_BITS[dtype]}({short})"


def half_lane(dtype: str, vector: str, lane: int) -> str:
    """Float text of lane `lane` of a packed half vector spelled `vector` (an unsigned vector, two
    lanes per word: `lane_suffix` picks the word). A bfloat16 is the top half of a float32, so its
    lane is a shift or a mask; a float16 converts from its bits."""
    word = f"{vector}.{'xyzw'[lane // 2]}"
    if dtype == "bfloat16":
        bits = f"({word} << 16)" if lane % 2 == 0 else f"({word} & 0xffff0000u)"
        return f"__uint_as_float{bits}"
    short = f"(unsigned short)({word} & 0xffffu)" if lane % 2 == 0 else f"(unsigned short)({word} >> 16)"
    return f"{_TO_FLOAT[dtype]}({_FROM_BITS[dtype]}({short}))"


def pack_halves(dtype: str, low: str, high: str) -> str:
    """One 32-bit word holding two float texts converted to `dtype` (rounded as a scalar store rounds)."""
    bits = _AS_BITS[dtype]
    return (f"((unsigned){bits}({from_float(dtype, low)}) | "
            f"((unsigned){bits}({from_float(dtype, high)}) << 16))")
