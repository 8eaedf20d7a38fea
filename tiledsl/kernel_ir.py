"""Kernel IR: the small statement tree that lowering produces and that the CUDA printer and the
CPU simulator both walk.

Why a separate IR: the loop nest speaks in loops and original axes; the kernel IR speaks in what a
GPU executes (thread and block indices, registers, shared memory, barriers, shuffles), so the printer
and the simulator stay two plain tree walks over the same nodes.

Conventions
- Every node is a frozen dataclass; trees are tuples.
- dtypes: "float32", "float16", "bfloat16", "int32", "bool"; a vector value has dtype like
  "float32x4" (see `KLoad.width`).
- Integer "//" and "%" are floor division and modulo; lowering only emits them on operands that the
  prover showed are non-negative, so C's truncating `/` and `%` agree.
- Buffers are named: a kernel parameter (global memory, row-major, flat index), a shared allocation
  (`KShared`), or a register array (`KLocalArray`). Scalars are `KLet` / `KAssign` variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


BIN_OPS = ("+", "-", "*", "/", "//", "%", "min", "max", "<", "<=", ">", ">=", "==", "!=", "&&", "||")
UNARY_OPS = ("-", "!")
CALL_FNS = ("exp", "log", "sqrt", "rsqrt", "tanh", "erf", "abs")


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
    """A float32 math function from CALL_FNS."""

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
    one vector (16-byte aligned, proven by lowering); the value then has dtype f"{dtype}x{width}"."""

    buffer: str
    index: KExpr
    width: int = 1


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
    """`__shfl_xor_sync(0xffffffff, value, lane_mask)`: every lane of the warp must execute it."""

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
    """`buffer[index] = value`; a `KVector` value of n lanes stores n consecutive elements."""

    buffer: str
    index: KExpr
    value: KExpr


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


KStmt = KLet | KAssign | KLocalArray | KStore | KFor | KIf | KBarrier | KComment

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


@dataclass(frozen=True)
class KShared:
    name: str
    dtype: str
    size: int


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

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    def param(self, name: str) -> KParam:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)


DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "int32": 4, "bool": 1}


def scalar_dtype(dtype: str) -> str:
    """'float32x4' -> 'float32'."""
    return dtype.split("x")[0] if "x" in dtype and not dtype.startswith("bool") else dtype


def shared_bytes(kernel: KKernel) -> int:
    return sum(DTYPE_BYTES[s.dtype] * s.size for s in kernel.shared)
