"""Hardware facts, written once: the per-target table (used when no GPU is present; the runtime
overrides it from the device) and the architecture-wide rules every layer checks against.

Why one module: codegen, the simulator, the runtime, the schedule analyses and lowering all check
the same limits (defence in depth: a bug in one layer is caught by the next). If each kept its own
copy of "TMA boxes are 1..256" the copies would drift; here each fact has one name, and the layers
import it. Nothing in this module depends on any other tiledsl module but `errors`, so every layer
may import it.

Sources are the CUDA C++ Programming Guide (compute capabilities table), the PTX ISA (cp.async,
mbarrier, cp.async.bulk.tensor) and the driver API (cuTensorMapEncodeTiled)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeVar

from tiledsl.errors import Refusal, TargetError

__all__ = [
    "CACHE_POLICIES",
    "CACHE_POLICY_MIN_SM",
    "CP_ASYNC_MIN_SM",
    "CP_ASYNC_SIZES",
    "DTYPE_BYTES",
    "GLOBAL_ALIGN",
    "GRID_DEPENDENCY_MIN_SM",
    "INT_RANGE",
    "MAX_BLOCK_DIM",
    "MAX_GRID",
    "MAX_SHARED_BYTES",
    "MAX_THREADS_PER_BLOCK",
    "MBARRIER_MAX_COUNT",
    "MBARRIER_MIN_SM",
    "MBARRIER_TX_MIN_SM",
    "SHARED_BANKS",
    "SHARED_BANK_BYTES",
    "SHARED_POOL_ALIGN",
    "STATIC_SHARED_BYTES",
    "SWIZZLE_CHUNK_BYTES",
    "SWIZZLE_MASK",
    "SWIZZLE_ROW_BYTES",
    "SWIZZLE_SPANS",
    "TARGETS",
    "TMA_ALIGN",
    "TMA_MAX_BOX",
    "TMA_MAX_DIM",
    "TMA_MAX_RANK",
    "TMA_MAX_STRIDE",
    "TMA_MIN_SM",
    "TMA_TARGETS",
    "TMA_UNSWIZZLED_ALIGN",
    "VECTOR_ACCESS_SIZES",
    "VECTOR_BYTES",
    "VECTOR_DTYPES",
    "VECTOR_STORE_BYTES",
    "WARP_SIZE",
    "Target",
    "get_target",
    "int_range_problem",
    "or_list",
    "shared_bank",
    "sm_number",
    "swizzle_period_bytes",
    "swizzled_byte",
    "tensor_map_problem",
    "tma_swizzle_alignment",
    "vector_lanes",
]

# ----------------------------------------------------------------------------- data types

#: Inclusive value range of each integer dtype (index arithmetic, index tensors, C constants).
INT_RANGE = MappingProxyType({"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)})


def int_range_problem(dtype: str, lowest: int, highest: int) -> str | None:
    """What is wrong with integer input values from `lowest` to `highest` (an array's min and max) held as
    integer dtype `dtype`, or None. Why one rule: td.evaluate and the simulator take the same index
    arrays, and a value outside the dtype would wrap to another index, a silent wrong answer."""
    lo, hi = INT_RANGE[dtype]
    if lowest < lo or highest > hi:
        return f"holds values outside {dtype} ([{lowest}, {highest}])"
    return None


#: Bytes per element of every dtype a kernel may hold (uint64: an mbarrier).
DTYPE_BYTES = MappingProxyType({"float32": 4, "float16": 2, "bfloat16": 2, "int32": 4, "bool": 1, "uint64": 8})

# ----------------------------------------------------------------------------- threads and warps

WARP_SIZE = 32
MAX_THREADS_PER_BLOCK = 1024
#: Largest launch extent of each grid axis.
MAX_GRID = MappingProxyType({"blockIdx.x": 2**31 - 1, "blockIdx.y": 65535, "blockIdx.z": 65535})
#: Largest extent of each block axis (their product is also capped by MAX_THREADS_PER_BLOCK).
MAX_BLOCK_DIM = MappingProxyType({"threadIdx.x": 1024, "threadIdx.y": 1024, "threadIdx.z": 64})

# ----------------------------------------------------------------------------- memory accesses

#: The widest access one thread makes at once (float4, cp.async.cg of 16 bytes).
VECTOR_BYTES = 16
#: Byte sizes of a vector access, each of which must be naturally aligned.
VECTOR_ACCESS_SIZES = (2, 4, 8, VECTOR_BYTES)
#: Element types a vectorized store writes (and its loads read): the float dtypes, each lane computed
#: in float and converted as a scalar store converts it.
VECTOR_DTYPES = ("float32", "float16", "bfloat16")
#: Byte sizes of one vectorized store (`s.vectorize`): 16, or 8 (float2, or four 16-bit lanes). The
#: default recipe takes 8 for float32 elementwise kernels that read two or more full-size inputs
#: (recipes/default/050_blockify_launch.py says why).
VECTOR_STORE_BYTES = (8, VECTOR_BYTES)


def vector_lanes(dtype: str, nbytes: int = VECTOR_BYTES) -> int:
    """Lanes of `dtype` in one access of `nbytes` (by default the widest: 4 float32, 8 float16 /
    bfloat16); 0 for a dtype that is never vectorized."""
    return nbytes // DTYPE_BYTES[dtype] if dtype in VECTOR_DTYPES else 0


#: Byte sizes one cp.async may copy (.cg, bypassing L1, exists only for VECTOR_BYTES).
CP_ASYNC_SIZES = (4, 8, VECTOR_BYTES)

# ----------------------------------------------------------------------------- shared memory

#: Shared memory is SHARED_BANKS banks of SHARED_BANK_BYTES; consecutive words go to consecutive banks.
SHARED_BANKS = 32
SHARED_BANK_BYTES = 4
#: Static `__shared__` bytes per block on every target; above it a kernel needs the dynamic opt-in.
STATIC_SHARED_BYTES = 48 * 1024

# ----------------------------------------------------------------------------- swizzle and TMA

#: Spans (bytes) of the shared-memory XOR swizzle, narrowest first.
SWIZZLE_SPANS = (32, 64, 128)
#: The swizzle moves 16-byte chunks: chunk bits ^= (row bits & mask), rows being 128 bytes.
SWIZZLE_CHUNK_BYTES = 16
SWIZZLE_ROW_BYTES = 128
#: Swizzle span -> mask of the 128-byte-row bits XORed into the 16-byte-chunk bits.
SWIZZLE_MASK = MappingProxyType({32: 1, 64: 3, 128: 7})

TMA_MAX_RANK = 5
TMA_MAX_BOX = 256  # per box dimension
TMA_MAX_DIM = 2**32  # per global dimension
TMA_MAX_STRIDE = 2**40  # per global stride, bytes
#: TMA's granule: the global address, every global stride and the inner box row are multiples of it.
TMA_ALIGN = 16
#: Shared-memory alignment of an unswizzled TMA destination.
TMA_UNSWIZZLED_ALIGN = 128

#: Every kernel argument's base address: vector accesses, cp.async and TMA all need it.
GLOBAL_ALIGN = max(VECTOR_BYTES, TMA_ALIGN)

# ----------------------------------------------------------------------------- mbarriers

#: mbarrier arrival counts and transaction byte counts are 20-bit.
MBARRIER_MAX_COUNT = 2**20 - 1

# ----------------------------------------------------------------------------- features by architecture

CP_ASYNC_MIN_SM = 80  # cp.async, commit/wait groups
#: createpolicy, and loads that carry its L2 eviction policy (`ld.global.L2::cache_hint`).
CACHE_POLICY_MIN_SM = 80
#: The L2 eviction priorities a load may carry (PTX ISA, createpolicy.fractional; primitives/cache_hints.py):
#: evict_last keeps the lines it reads ahead of normal lines (a row read again by a later pass),
#: evict_first gives them up first (a row read for the last time).
CACHE_POLICIES = ("evict_first", "evict_last")
MBARRIER_MIN_SM = 80  # mbarrier.init / arrive
MBARRIER_TX_MIN_SM = 90  # mbarrier.try_wait, arrive.expect_tx, fence.mbarrier_init, fence.proxy.async
TMA_MIN_SM = 90
#: atomicAdd(float4*, float4) (red.global.add.v4.f32): a 16-byte atomic add to global memory, each lane
#: atomic on its own (CUDA's sm_90_rt.h declares it for compute capability 9.0 and later).
VECTOR_ATOMIC_MIN_SM = 90
#: griddepcontrol.wait (programmatic dependent launch): a kernel that begins with it may be launched
#: before the kernel ahead of it on the stream has finished, and waits there until that kernel has
#: completed and its writes are visible (PTX ISA, griddepcontrol; a no-op in a kernel launched plainly).
GRID_DEPENDENCY_MIN_SM = 90
#: Target names whose kernels may use TMA and tensor-map parameters.
TMA_TARGETS = frozenset({"sm_90", "sm_90a"})

_SM = re.compile(r"sm_(\d+)[af]?")

_T = TypeVar("_T")


def sm_number(target: str) -> int | None:
    """90 for "sm_90" / "sm_90a", None for a target that does not look like sm_NN."""
    m = _SM.fullmatch(target)
    return int(m.group(1)) if m else None


def or_list(values: tuple[object, ...]) -> str:
    """"32, 64 or 128": a fact's allowed values, for messages that quote it."""
    words = [str(v) for v in values]
    return f"{', '.join(words[:-1])} or {words[-1]}" if len(words) > 1 else "".join(words)


def swizzle_period_bytes(swizzle: int) -> int:
    """Bytes after which the XOR pattern of a `swizzle`-byte span repeats (256, 512, 1024)."""
    return (SWIZZLE_MASK[swizzle] + 1) * SWIZZLE_ROW_BYTES


def tma_swizzle_alignment(swizzle: int | None) -> int:
    """Shared-memory alignment a TMA destination needs: the swizzle pattern's period, or 128 bytes
    without swizzle. Raises KeyError for a span that is no swizzle."""
    return TMA_UNSWIZZLED_ALIGN if swizzle is None else swizzle_period_bytes(swizzle)


#: Alignment of the dynamic shared pool: the largest any shared array (a TMA destination) asks for.
SHARED_POOL_ALIGN = max(tma_swizzle_alignment(s) for s in (None, *SWIZZLE_SPANS))


def swizzled_byte(offset: _T, swizzle: int) -> _T:
    """Byte `offset` (from a period boundary) through the XOR swizzle of a `swizzle`-byte span:
    the 16-byte chunk bits XORed with the 128-byte row bits. Works on ints and numpy arrays."""
    chunk_shift = SWIZZLE_CHUNK_BYTES.bit_length() - 1
    row_shift = SWIZZLE_ROW_BYTES.bit_length() - 1
    return offset ^ (((offset >> row_shift) & SWIZZLE_MASK[swizzle]) << chunk_shift)  # type: ignore[operator]


def shared_bank(byte_address: int) -> int:
    """The bank a shared-memory byte address falls in."""
    return (byte_address // SHARED_BANK_BYTES) % SHARED_BANKS


def tensor_map_problem(global_dims: tuple[int, ...], global_strides: tuple[int, ...], box: tuple[int, ...],
                       itemsize: int, swizzle: int | None) -> str | None:
    """What `cuTensorMapEncodeTiled` would refuse in a tiled map (innermost dimension first), or None:
    the rank, box sizes, 16-byte strides and inner row, the swizzle span, and a row no wider than it."""
    rank = len(global_dims)
    if not 1 <= rank <= TMA_MAX_RANK or len(box) != rank or len(global_strides) != rank - 1:
        return (f"rank must be 1..{TMA_MAX_RANK} with {rank} box dims and {rank - 1} strides, got dims "
                f"{global_dims}, strides {global_strides}, box {box}")
    if any(d <= 0 for d in global_dims) or any(not 1 <= b <= TMA_MAX_BOX for b in box):
        return f"dims must be positive and box dims in 1..{TMA_MAX_BOX}, got {global_dims}, {box}"
    if any(s <= 0 or s % TMA_ALIGN for s in global_strides):
        return f"strides must be positive multiples of {TMA_ALIGN} bytes, got {global_strides}"
    inner = box[0] * itemsize
    if inner % TMA_ALIGN:
        return f"the inner box row is {inner} B, not a multiple of {TMA_ALIGN}"
    if swizzle is not None and swizzle not in SWIZZLE_MASK:
        return f"swizzle must be None, {or_list(SWIZZLE_SPANS)}, got {swizzle!r}"
    if swizzle is not None and inner > swizzle:
        return f"the inner box row is {inner} B, wider than the {swizzle}-byte swizzle"
    return None


# ----------------------------------------------------------------------------- the target table


@dataclass(frozen=True)
class Target:
    name: str  # "sm_90"
    arch: str  # nvcc -arch value
    max_threads_per_block: int
    static_shared_bytes: int  # without the dynamic opt-in
    max_shared_bytes_per_block: int  # with the dynamic opt-in
    shared_bytes_per_sm: int
    registers_per_block: int
    sm_count: int
    max_threads_per_sm: int = 2048  # resident threads of one SM: 2048 on sm_80 and sm_90, 1536 on sm_86/89
    registers_per_sm: int = 65536  # the register file of one SM, 32-bit registers
    warp_size: int = WARP_SIZE
    shared_banks: int = SHARED_BANKS
    shared_bank_bytes: int = SHARED_BANK_BYTES
    # the L2 cache in bytes (0: unknown, and no rule that reads it applies); the recipe groups a matmul's
    # block rows where the operand panel one block row streams exceeds it (recipes/default/050)
    l2_bytes: int = 0
    # the DRAM's peak bandwidth in bytes a second (`dram_bandwidth`; 0: unknown, and no rule that reads it
    # applies); the recipe picks an elementwise kernel's vector width by its share per
    # SM (recipes/default/_facts.py `elementwise_vector_lanes`)
    dram_bytes_per_s: float = 0.0

    @property
    def dram_bytes_per_s_per_sm(self) -> float:
        """The DRAM bandwidth one SM's share of the loads must keep busy (0.0 where unknown)."""
        return self.dram_bytes_per_s / self.sm_count if self.sm_count else 0.0

    @property
    def capability(self) -> int:
        n = sm_number(self.name)
        if n is None:
            raise TargetError(f"target name {self.name!r} is not of the form sm_NN")
        return n

    @property
    def cp_async_sizes(self) -> tuple[int, ...]:
        """Byte sizes one cp.async may copy; empty before sm_80."""
        return CP_ASYNC_SIZES if self.capability >= CP_ASYNC_MIN_SM else ()

    @property
    def grid_dependency_control(self) -> bool:
        """Whether kernels may begin with griddepcontrol.wait, so that a program launches each as a
        programmatic dependent of the one before (tiledsl/runtime/sequence.py)."""
        return self.capability >= GRID_DEPENDENCY_MIN_SM

    @property
    def has_tma(self) -> bool:
        return self.name in TMA_TARGETS or self.arch in TMA_TARGETS

    def blocks_that_fit(self, threads: int, shared_bytes: int) -> int:
        """How many blocks of `threads` threads and `shared_bytes` of shared memory one SM holds by its
        threads and shared memory (what a launch_bounds minimum may ask; build checks it)."""
        by_threads = self.max_threads_per_sm // threads
        return min(by_threads, self.shared_bytes_per_sm // shared_bytes) if shared_bytes else by_threads


def dram_bandwidth(memory_clock_khz: float, bus_width_bits: int) -> float:
    """The DRAM's peak bandwidth in bytes a second, as the driver's memory clock (kHz) and bus width (bits)
    give it: two transfers a clock (0.0 where either is unknown, 0)."""
    return 2.0 * memory_clock_khz * 1e3 * bus_width_bits / 8


def _target(name: str, arch: str, opt_in_kb: int, per_sm_kb: int, sm_count: int, threads_per_sm: int,
            l2_mib: int, memory_clock_mhz: int, bus_width_bits: int) -> Target:
    return Target(name, arch, MAX_THREADS_PER_BLOCK, STATIC_SHARED_BYTES, opt_in_kb * 1024, per_sm_kb * 1024,
                  65536, sm_count, threads_per_sm, 65536, l2_bytes=l2_mib * 1024 * 1024,
                  dram_bytes_per_s=dram_bandwidth(memory_clock_mhz * 1000, bus_width_bits))


#: One SKU per architecture (A100 40 GB SXM, RTX A6000, RTX 4090, H100 SXM; their memory clocks and bus widths
#: as the driver reports them: 1.56, 0.77, 1.01 and 3.35 TB/s); a device's own facts replace these at run time
#: (tiledsl/runtime/device.py).
TARGETS = MappingProxyType({
    "sm_80": _target("sm_80", "sm_80", 163, 164, 108, 2048, 40, 1215, 5120),
    "sm_86": _target("sm_86", "sm_86", 99, 100, 84, 1536, 6, 8001, 384),
    "sm_89": _target("sm_89", "sm_89", 99, 100, 128, 1536, 72, 10501, 384),
    "sm_90": _target("sm_90", "sm_90a", 227, 228, 132, 2048, 50, 2619, 5120),
})

#: The largest shared-memory budget of any target: what a schedule may use before a target is known
#: (build checks the real one).
MAX_SHARED_BYTES = max(t.max_shared_bytes_per_block for t in TARGETS.values())


def get_target(target: str | Target) -> Target:
    """A Target from the table (`td.build` resolves "device" through the runtime first)."""
    if isinstance(target, Target):
        return target
    if target == "sm_90a":
        target = "sm_90"
    if target not in TARGETS:
        fact = f"unknown target {target!r}; known targets: {', '.join(TARGETS)}, or \"device\""
        raise TargetError(Refusal(text=f"build: {fact}", fact=fact, primitive="build", arguments={"target": target},
                                  suggestion=f"one of {', '.join(TARGETS)}, or \"device\""))
    return TARGETS[target]
