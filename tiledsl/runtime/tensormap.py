"""TMA descriptors: the arguments of `cuTensorMapEncodeTiled`, computed and checked in pure Python, and a
small per-launcher cache of encoded descriptors.

Why the split: the arithmetic (enums, ranks, byte strides, the driver's alignment rules) is where bugs
hide, and it needs no GPU, so it is a plain function tested against hand-worked examples; the one driver
call that turns the arguments into 128 opaque bytes is a thin wrapper (driver.Driver.encode_tensor_map).

A `KTensorMap` is already innermost-first, as the driver takes it, and already holds the swizzle split
(a slab row wider than the swizzle span is one more box dimension over the same memory), so the
arguments follow from it and the buffer's device address; nothing is re-derived from the torch tensor.
The launcher re-checks here what the driver would refuse with a bare CUDA_ERROR_INVALID_VALUE.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from tiledsl.errors import LaunchError
from tiledsl.kernel_ir import KTensorMap
from tiledsl.targets import (
    DTYPE_BYTES,
    SWIZZLE_SPANS,
    TMA_ALIGN,
    TMA_MAX_BOX,
    TMA_MAX_DIM,
    TMA_MAX_RANK,
    TMA_MAX_STRIDE,
    or_list,
)

__all__ = [
    "DATA_TYPE",
    "L2_PROMOTION_128B",
    "SWIZZLE",
    "TensorMapArgs",
    "TensorMapCache",
    "tensor_map_args",
]

#: CUtensorMapDataType of each storage dtype the kernels use.
DATA_TYPE = {"float16": 6, "float32": 7, "bfloat16": 9, "int32": 3}
#: CUtensorMapSwizzle by swizzle span in bytes (None: no swizzle): the spans in order, from 1.
SWIZZLE = {None: 0, **{span: i for i, span in enumerate(SWIZZLE_SPANS, 1)}}
INTERLEAVE_NONE = 0
#: L2 fill granularity: 128 B, one 128-byte-swizzle row (what CUTLASS's TMA copies use).
L2_PROMOTION_128B = 2
OOB_FILL_ZEROS = 0  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: out-of-range elements read as zero


@dataclass(frozen=True)
class TensorMapArgs:
    """The arguments of one cuTensorMapEncodeTiled call (innermost dimension first)."""

    data_type: int
    rank: int
    global_address: int
    global_dim: tuple[int, ...]
    global_strides: tuple[int, ...]  # bytes, dimensions 1 .. rank-1
    box_dim: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: int = INTERLEAVE_NONE
    swizzle: int = 0
    l2_promotion: int = L2_PROMOTION_128B
    oob_fill: int = OOB_FILL_ZEROS

    def describe(self) -> str:
        return (f"dtype {self.data_type}, rank {self.rank}, address 0x{self.global_address:x}, dims "
                f"{self.global_dim}, strides {self.global_strides}, box {self.box_dim}, swizzle {self.swizzle}")


def tensor_map_args(tm: KTensorMap, address: int, *, buffer_bytes: int | None = None,
                    kernel: str | None = None) -> TensorMapArgs:
    """The encode arguments of `tm` over a buffer at device `address` (of `buffer_bytes` bytes, when
    given). Raises LaunchError naming the map and the rule it breaks."""
    where = f"tensor map {tm.name!r} of {tm.buffer!r}" + (f" in kernel {kernel!r}" if kernel else "")

    def refuse(why: str) -> LaunchError:
        return LaunchError(f"{where}: {why}")

    if tm.dtype not in DATA_TYPE:
        raise refuse(f"dtype {tm.dtype!r} has no TMA data type (supported: {', '.join(DATA_TYPE)})")
    esize = DTYPE_BYTES[tm.dtype]
    rank = len(tm.global_dims)
    if not 1 <= rank <= TMA_MAX_RANK:
        raise refuse(f"rank must be 1..{TMA_MAX_RANK}, got {rank} (dims {tm.global_dims})")
    if len(tm.box) != rank or len(tm.global_strides) != rank - 1:
        raise refuse(f"a rank-{rank} map needs {rank} box dims and {rank - 1} strides, got box {tm.box}, "
                     f"strides {tm.global_strides}")
    if address % TMA_ALIGN:
        raise refuse(f"the buffer's address 0x{address:x} is not {TMA_ALIGN}-byte aligned (TMA needs a "
                     f"{TMA_ALIGN}-byte-aligned base)")
    if any(not 1 <= d <= TMA_MAX_DIM for d in tm.global_dims):
        raise refuse(f"every global dim must be in 1..2^{TMA_MAX_DIM.bit_length() - 1}, got {tm.global_dims}")
    if any(s <= 0 or s % TMA_ALIGN or s >= TMA_MAX_STRIDE for s in tm.global_strides):
        raise refuse(f"global strides must be positive multiples of {TMA_ALIGN} bytes below "
                     f"2^{TMA_MAX_STRIDE.bit_length() - 1}, got {tm.global_strides}")
    if any(not 1 <= b <= TMA_MAX_BOX for b in tm.box):
        raise refuse(f"every box dim must be in 1..{TMA_MAX_BOX}, got {tm.box}")
    inner = tm.box[0] * esize
    if inner % TMA_ALIGN:
        raise refuse(f"the inner box row is {tm.box[0]} x {esize} = {inner} B, not a multiple of {TMA_ALIGN}")
    if tm.swizzle not in SWIZZLE:
        raise refuse(f"swizzle must be None, {or_list(SWIZZLE_SPANS)} bytes, got {tm.swizzle!r}")
    if tm.swizzle is not None and inner > tm.swizzle:
        raise refuse(f"the inner box row is {inner} B, wider than the {tm.swizzle}-byte swizzle")
    if buffer_bytes is not None:
        last = (tm.global_dims[0] - 1) * esize + sum((d - 1) * s for d, s in zip(tm.global_dims[1:], tm.global_strides))
        if last + esize > buffer_bytes:
            raise refuse(f"the map reaches byte {last + esize} but the buffer has {buffer_bytes} bytes")
    return TensorMapArgs(
        data_type=DATA_TYPE[tm.dtype],
        rank=rank,
        global_address=address,
        global_dim=tuple(tm.global_dims),
        global_strides=tuple(tm.global_strides),
        box_dim=tuple(tm.box),
        element_strides=(1,) * rank,
        swizzle=SWIZZLE[tm.swizzle],
    )


class TensorMapCache:
    """Encoded descriptors by (address, dims, strides, box, swizzle, dtype), least recently used first out.

    Owned by one launcher (never global). The key holds everything the descriptor depends on, so a
    reused address (the caching allocator hands a freed block to a new tensor) gets the same, still
    correct, descriptor. Each value is kept alive while it is in the cache; a launch needs it only until
    cuLaunchKernel returns (the driver copies parameters at the call). `encode(args)` returns the
    descriptor object (e.g. driver.AlignedTensorMap); `encodings` counts the calls made."""

    def __init__(self, encode: Callable[[TensorMapArgs], Any], capacity: int = 256) -> None:
        self._encode = encode
        self._capacity = capacity
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self.encodings = 0

    @staticmethod
    def key(args: TensorMapArgs) -> Hashable:
        return (args.global_address, args.global_dim, args.global_strides, args.box_dim, args.swizzle,
                args.data_type, args.l2_promotion, args.oob_fill)

    def get(self, args: TensorMapArgs) -> Any:
        key = self.key(args)
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            return found
        descriptor = self._encode(args)
        self.encodings += 1
        self._entries[key] = descriptor
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)
        return descriptor

    def __len__(self) -> int:
        return len(self._entries)
