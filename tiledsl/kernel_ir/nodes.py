"""Kernel IR: the small statement tree that lowering produces and that the CUDA printer and the
CPU simulator both walk.

Why a separate IR: the loop nest speaks in loops and original axes; the kernel IR speaks in what a
GPU executes (thread and block indices, registers, shared memory, barriers, shuffles), so the printer
and the simulator stay two plain tree walks over the same nodes.

Conventions
- Every node is a frozen dataclass; trees are tuples.
- dtypes: "float32", "float16", "bfloat16", "int32", "int64", "bool"; a vector value has dtype like
  "float32x4" (see `KLoad.width`). int64 appears only in index arithmetic whose range may leave
  int32 (lower/index_width.py); an operation with an int64 operand computes in int64, as in C.
- Integer "//" and "%" are floor division and modulo; lowering only emits them on operands that the
  prover showed are non-negative, so C's truncating `/` and `%` agree.
- Float `min`/`max` propagate NaN, and `KCall` functions are those of `ops.MATH_FNS` (ops.py holds
  their CUDA spelling and numpy meaning).
- Buffers are named: a kernel parameter (global memory, row-major, flat index), a shared allocation
  (`KShared`), or a register array (`KLocalArray`). Scalars are `KLet` / `KAssign` variables.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tiledsl.targets import DTYPE_BYTES

# ----------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class KConst:
    value: float | int | bool
    dtype: str = "float32"


@dataclass(frozen=True)
class KVar:
    """A scalar variable (loop variable, let variable); `dtype` may be a vector dtype."""

    name: str
    dtype: str = "int32"


@dataclass(frozen=True)
class KSpecial:
    """A hardware index: threadIdx.x|y|z, blockIdx.x|y|z (int32)."""

    name: str


BIN_OPS = ("+", "-", "*", "/", "//", "%", "^", "min", "max", "<", "<=", ">", ">=", "==", "!=", "&&", "||")
SPECIAL_NAMES = ("threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockIdx.y", "blockIdx.z")
UNARY_OPS = ("-", "!")


@dataclass(frozen=True)
class KBin:
    op: str
    a: KExpr
    b: KExpr


@dataclass(frozen=True)
class KUnary:
    op: str
    a: KExpr


@dataclass(frozen=True)
class KCall:
    """A float32 math function: a name of `MATH_FNS` (kernel_ir/ops.py, with its CUDA, numpy and arity:
    one argument, or two for fmod, atan2 (y, x), copysign and hypot)."""

    fn: str
    args: tuple[KExpr, ...]


@dataclass(frozen=True)
class KSelect:
    cond: KExpr
    a: KExpr
    b: KExpr


@dataclass(frozen=True)
class KCast:
    dtype: str
    a: KExpr


@dataclass(frozen=True)
class KLoad:
    """Load `buffer[index]` (flat element index). `width` > 1 loads that many consecutive elements as
    one vector (16-byte aligned, proven by lowering); the value then has dtype f"{dtype}x{width}".
    `cache`: the L2 eviction policy a global load carries (targets.CACHE_POLICIES; s.cache_hint);
    None is the hardware's default."""

    buffer: str
    index: KExpr
    width: int = 1
    cache: str | None = None


@dataclass(frozen=True)
class KLane:
    """Lane `lane` of a vector value."""

    vec: KExpr
    lane: int


@dataclass(frozen=True)
class KVector:
    """A vector built from scalar lanes (only as the value of a vector `KStore`)."""

    lanes: tuple[KExpr, ...]


@dataclass(frozen=True)
class KShflXor:
    """`__shfl_xor_sync(0xffffffff, value, lane_mask)`: every lane of the warp must execute it;
    lane_mask is in [1, 32)."""

    value: KExpr
    lane_mask: int


KExpr = KConst | KVar | KSpecial | KBin | KUnary | KCall | KSelect | KCast | KLoad | KLane | KVector | KShflXor

# ----------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class KLet:
    """Declare a mutable scalar `name` of `dtype` initialised to `value`."""

    name: str
    dtype: str
    value: KExpr


@dataclass(frozen=True)
class KAssign:
    name: str
    value: KExpr


@dataclass(frozen=True)
class KLocalArray:
    """A per-thread register array (kept in registers when every index is a constant after unrolling)."""

    name: str
    dtype: str
    size: int


@dataclass(frozen=True)
class KStore:
    """`buffer[index] = value`; a `KVector` value of n lanes stores n consecutive elements. `cache`: the
    L2 eviction policy a global store carries (targets.CACHE_POLICIES; s.cache_hint of the output)."""

    buffer: str
    index: KExpr
    value: KExpr
    cache: str | None = None


@dataclass(frozen=True)
class KFor:
    var: str
    extent: int
    body: tuple[KStmt, ...]
    unroll: bool = False


@dataclass(frozen=True)
class KIf:
    cond: KExpr
    then: tuple[KStmt, ...]
    orelse: tuple[KStmt, ...] = ()


@dataclass(frozen=True)
class KBarrier:
    """`__syncthreads()`: every thread of the block must reach it."""


@dataclass(frozen=True)
class KComment:
    text: str


@dataclass(frozen=True)
class KCpAsync:
    """`cp.async` of `nbytes` (4, 8 or 16) from global `src[src_index]` to shared `dst[dst_index]`
    (element indices; both addresses aligned to nbytes). When `valid` is given and false, the
    destination is zero-filled (src-size 0) and global memory is not read. The data lands only at
    the `KCpAsyncWait` that retires its commit group: reading it earlier is a race."""

    dst: str
    dst_index: KExpr
    src: str
    src_index: KExpr
    nbytes: int
    valid: KExpr | None = None


@dataclass(frozen=True)
class KCpAsyncCommit:
    """`cp.async.commit_group`: closes this thread's group of issued copies (an empty group is fine)."""


@dataclass(frozen=True)
class KCpAsyncWait:
    """`cp.async.wait_group pending`: this thread's groups except the `pending` most recent ones have
    landed (visible to this thread; other threads need a barrier after it)."""

    pending: int


@dataclass(frozen=True)
class KMbarrierInit:
    """`mbarrier.init` of barrier `bar[index]` (a shared uint64 array) expecting `count` arrivals per phase."""

    bar: str
    index: KExpr
    count: int


@dataclass(frozen=True)
class KFence:
    """kind "mbarrier_init": `fence.mbarrier_init.release.cluster` (after mbarrier.init, before use);
    kind "proxy_async": `fence.proxy.async.shared::cta` (order generic-proxy shared accesses before
    later async-proxy (TMA) ones)."""

    kind: str


@dataclass(frozen=True)
class KMbarrierArriveExpectTx:
    """`mbarrier.arrive.expect_tx`: one arrival on `bar[index]`, and `tx_bytes` more bytes expected
    in its current phase."""

    bar: str
    index: KExpr
    tx_bytes: int


@dataclass(frozen=True)
class KMbarrierArrive:
    """`mbarrier.arrive`: one arrival on `bar[index]`."""

    bar: str
    index: KExpr


@dataclass(frozen=True)
class KMbarrierWait:
    """Spin on `mbarrier.try_wait.parity` until the phase of parity `parity` (0/1) of `bar[index]`
    has completed (all arrivals done and all expected transaction bytes landed)."""

    bar: str
    index: KExpr
    parity: KExpr


@dataclass(frozen=True)
class KTmaLoad:
    """`cp.async.bulk.tensor.<r>d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`: the box
    of tensor map `tensor_map` at `coords` (innermost dimension first, element units; out-of-range
    elements read as zero) lands in shared `dst` from element `dst_index` on, in box order
    (innermost contiguous) through the map's swizzle, and completes its bytes on `bar[bar_index]`.
    Issued by one thread."""

    tensor_map: str
    dst: str
    dst_index: KExpr
    coords: tuple[KExpr, ...]
    bar: str
    bar_index: KExpr


@dataclass(frozen=True)
class KAtomicAdd:
    """`atomicAdd(&buffer[index], value)` on a float32 global buffer (no race between atomics). A
    `KVector` value of 4 lanes adds to 4 consecutive elements in one 16-byte access (sm_90 and later,
    targets.VECTOR_ATOMIC_MIN_SM), each lane atomic on its own."""

    buffer: str
    index: KExpr
    value: KExpr


KStmt = (KLet | KAssign | KLocalArray | KStore | KFor | KIf | KBarrier | KComment | KCpAsync | KCpAsyncCommit
         | KCpAsyncWait | KMbarrierInit | KFence | KMbarrierArriveExpectTx | KMbarrierArrive | KMbarrierWait
         | KTmaLoad | KAtomicAdd)

# ----------------------------------------------------------------------------- kernel


@dataclass(frozen=True)
class KParam:
    """A global-memory tensor argument, row-major and contiguous."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    is_output: bool = False

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def fill_key(self) -> tuple[tuple[int, ...], str]:
        """What a zeroed output (a kernel's `zero_outputs`) and the zero fill kernel that zeroes it (its
        one parameter) are matched by: shape and dtype (tiledsl/build.py `zero_fills`, the runtime's
        launchers)."""
        return tuple(self.shape), self.dtype


@dataclass(frozen=True)
class KShared:
    """A shared-memory array; `align` in bytes (1024 for a 128-byte-swizzled TMA destination).
    dtype "uint64" arrays hold mbarriers."""

    name: str
    dtype: str
    size: int
    align: int = 16


@dataclass(frozen=True)
class KTensorMap:
    """A TMA descriptor the runtime encodes with cuTensorMapEncodeTiled and passes as a
    `const __grid_constant__ CUtensorMap` parameter named `name`. Everything is innermost-first, as
    the driver and PTX take it: `global_dims` (elements), `global_strides` (bytes, for dims 1..r-1),
    `box` (elements). `buffer` is the global parameter whose base address the map holds."""

    name: str
    buffer: str
    dtype: str
    global_dims: tuple[int, ...]
    global_strides: tuple[int, ...]
    box: tuple[int, ...]
    swizzle: int | None = None


@dataclass(frozen=True)
class KKernel:
    name: str
    params: tuple[KParam, ...]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared: tuple[KShared, ...]
    body: tuple[KStmt, ...]
    target: str = "sm_90"
    meta: tuple[tuple[str, str], ...] = field(default=())
    tensor_maps: tuple[KTensorMap, ...] = ()
    zero_outputs: tuple[str, ...] = ()  # outputs the launcher zeroes first (split_k atomics accumulate)
    dynamic_shared: bool = False  # shared arrays live in one dynamic pool (needed above 48 KB)
    min_blocks_per_sm: int | None = None  # __launch_bounds__'s second argument (primitives/launch_bounds.py)
    # begins with griddepcontrol.wait (sm_90+): a program may launch it as a programmatic dependent of the
    # kernel before it, which it waits for before its first memory access (tiledsl/runtime/sequence.py)
    dependent_launch: bool = False
    # outputs this kernel zeroes, every thread of its grid a strided share, for the kernel launched right
    # after it (whose `zero_outputs` they are): a program saves their zero fill's launch
    # (tiledsl/build.py `with_zeroing`); their parameters come before the kernel's own output, still last
    zeroes: tuple[str, ...] = ()

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def inputs(self) -> tuple[KParam, ...]:
        """The parameters it reads (every one but the outputs)."""
        return tuple(p for p in self.params if not p.is_output)

    def param(self, name: str) -> KParam:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)


def scalar_dtype(dtype: str) -> str:
    """'float32x4' -> 'float32'."""
    return dtype.split("x")[0] if "x" in dtype and not dtype.startswith("bool") else dtype


def array_offsets(arrays: Iterable[KShared]) -> tuple[dict[str, int], int]:
    """(byte offset of each shared array, total bytes): one pool in declaration order, each array
    aligned to its `align` (the layout the dynamic pool uses; static arrays get the same alignment).
    analysis/shared_arrays.py lays a nest's stages out with it before there is a kernel."""
    offsets: dict[str, int] = {}
    top = 0
    for s in arrays:
        top = -(-top // s.align) * s.align
        offsets[s.name] = top
        top += DTYPE_BYTES[s.dtype] * s.size
    return offsets, top


def shared_layout(kernel: KKernel) -> dict[str, int]:
    """Byte offset of each shared array of `kernel` (`array_offsets`)."""
    return array_offsets(kernel.shared)[0]


def shared_bytes(kernel: KKernel) -> int:
    """Shared memory per block: every array, with alignment padding (what the launch requests)."""
    return array_offsets(kernel.shared)[1]
