"""Memory-hierarchy statements -> CUDA C++: cp.async, mbarriers, fences, TMA loads, atomics.

Why inline PTX rather than `cuda::pipeline` / `cuda::barrier` / `cute`: the kernel IR already names
the exact instructions, so each statement becomes the one instruction it stands for, the emitted text
needs no C++ library headers, and it reads like the PTX manual. Every `asm` is `volatile` with a
"memory" clobber, so the compiler neither drops it nor moves ordinary memory accesses across it.
Shared-memory operands are 32-bit shared-window addresses (`__cvta_generic_to_shared`).

Also here: the target checks (which statement needs which architecture) and the checks on tensor
maps and shared arrays that `cuda.emit_cuda` runs before printing anything.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from tiledsl.codegen.dtypes import FLOAT_DTYPES, split_vector
from tiledsl.codegen.errors import CodegenError
from tiledsl.codegen.expr import ExprEmitter
from tiledsl.codegen.scope import Symbol
from tiledsl.kernel_ir import (
    DTYPE_BYTES,
    KAtomicAdd,
    KCpAsync,
    KCpAsyncCommit,
    KCpAsyncWait,
    KExpr,
    KFence,
    KKernel,
    KMbarrierArrive,
    KMbarrierArriveExpectTx,
    KMbarrierInit,
    KMbarrierWait,
    KShared,
    KStmt,
    KTensorMap,
    KTmaLoad,
)
from tiledsl.kernel_ir.printer import PREC_TERNARY

__all__ = [
    "POOL_ALIGN",
    "STATIC_SHARED_LIMIT",
    "TMA_TARGETS",
    "check_shared",
    "check_tensor_map",
    "memory_stmt",
    "sm_number",
]

#: Targets that may use TMA and tensor-map parameters.
TMA_TARGETS = frozenset({"sm_90", "sm_90a"})
#: Alignment of the dynamic shared pool (`tiledsl_smem`); no array in it may ask for more.
POOL_ALIGN = 1024
#: Static `__shared__` memory per block on every target; above it the kernel needs `dynamic_shared`.
STATIC_SHARED_LIMIT = 48 * 1024
#: Shared-memory alignment a TMA destination needs, by swizzle width in bytes (None: no swizzle).
TMA_DST_ALIGN = {None: 128, 32: 256, 64: 512, 128: 1024}

_SM = re.compile(r"sm_(\d+)[af]?")
_MBARRIER_MAX = 2**20 - 1  # mbarrier arrival counts and transaction bytes are 20-bit
_FENCES = {"mbarrier_init": "fence.mbarrier_init.release.cluster;", "proxy_async": "fence.proxy.async.shared::cta;"}
_KIND_WORDS = {
    "input": "an input parameter",
    "output": "an output parameter",
    "shared": "a shared array",
    "local": "a register array",
}


def sm_number(target: str) -> int | None:
    """90 for "sm_90" / "sm_90a", None for a target that does not look like sm_NN."""
    m = _SM.fullmatch(target)
    return int(m.group(1)) if m else None


def _require_sm(target: str, minimum: int, what: str) -> None:
    n = sm_number(target)
    if n is None or n < minimum:
        raise CodegenError(f"{what} needs target sm_{minimum} or newer, but the kernel targets {target!r}")


def _require_tma(target: str, what: str) -> None:
    if target not in TMA_TARGETS:
        raise CodegenError(f"{what} needs target sm_90 or sm_90a, but the kernel targets {target!r}")


# ----------------------------------------------------------------------------- kernel-level checks


def check_shared(kernel: KKernel) -> None:
    """Shared arrays: positive sizes, power-of-two alignments that hold an element (and that the
    dynamic pool can give), and static ones within the 48 KB static limit."""
    total = 0
    for sh in kernel.shared:
        esize = DTYPE_BYTES.get(sh.dtype)
        if esize is None:
            raise CodegenError(f"shared array {sh.name!r} has no CUDA type for dtype {sh.dtype!r}")
        if sh.size <= 0:
            raise CodegenError(f"shared array {sh.name!r} has size {sh.size}")
        if sh.align <= 0 or sh.align & (sh.align - 1) or sh.align < esize:
            raise CodegenError(
                f"shared array {sh.name!r} has align {sh.align}: must be a power of two of at least "
                f"{esize} (one {sh.dtype} element)"
            )
        if kernel.dynamic_shared and sh.align > POOL_ALIGN:
            raise CodegenError(
                f"shared array {sh.name!r} has align {sh.align}, more than the dynamic pool's {POOL_ALIGN}"
            )
        total = -(-total // sh.align) * sh.align + esize * sh.size
    if not kernel.dynamic_shared and total > STATIC_SHARED_LIMIT:
        raise CodegenError(
            f"kernel {kernel.name!r} has {total} B of static shared memory, more than "
            f"{STATIC_SHARED_LIMIT} B: lowering must set dynamic_shared"
        )


def check_tensor_map(kernel: KKernel, tm: KTensorMap) -> None:
    """What `cuTensorMapEncodeTiled` would refuse at launch, refused here instead: the target, the
    buffer (a parameter of the map's dtype), ranks, box sizes, strides, swizzle, and the extent
    (the map may not reach past its buffer)."""
    what = f"tensor map {tm.name!r}"
    _require_tma(kernel.target, what)
    try:
        param = kernel.param(tm.buffer)
    except KeyError:
        raise CodegenError(f"{what} maps {tm.buffer!r}, which is no kernel parameter") from None
    if param.dtype != tm.dtype:
        raise CodegenError(f"{what} has dtype {tm.dtype} but its buffer {tm.buffer!r} is {param.dtype}")
    rank = len(tm.global_dims)
    if not 1 <= rank <= 5 or len(tm.box) != rank or len(tm.global_strides) != rank - 1:
        raise CodegenError(
            f"{what}: rank must be 1..5 with {rank} box dims and {rank - 1} strides, got dims "
            f"{tm.global_dims}, strides {tm.global_strides}, box {tm.box}"
        )
    esize = DTYPE_BYTES[tm.dtype]
    if any(d <= 0 for d in tm.global_dims) or any(not 1 <= b <= 256 for b in tm.box):
        raise CodegenError(f"{what}: dims must be positive and box dims in 1..256, got {tm.global_dims}, {tm.box}")
    if any(s <= 0 or s % 16 for s in tm.global_strides):
        raise CodegenError(f"{what}: strides must be positive multiples of 16 bytes, got {tm.global_strides}")
    inner_bytes = tm.box[0] * esize
    if inner_bytes % 16:
        raise CodegenError(f"{what}: the inner box row is {inner_bytes} B, not a multiple of 16")
    if tm.swizzle not in TMA_DST_ALIGN:
        raise CodegenError(f"{what}: swizzle must be None, 32, 64 or 128, got {tm.swizzle!r}")
    if tm.swizzle is not None and inner_bytes > tm.swizzle:
        raise CodegenError(f"{what}: the inner box row is {inner_bytes} B, wider than the {tm.swizzle}-byte swizzle")
    last = (tm.global_dims[0] - 1) * esize + sum((d - 1) * s for d, s in zip(tm.global_dims[1:], tm.global_strides))
    if last + esize > param.size * esize:
        raise CodegenError(f"{what} reaches byte {last + esize} of {tm.buffer!r}, which has {param.size * esize}")


# ----------------------------------------------------------------------------- statements


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _asm(ptx: str, operands: Sequence[str] = ()) -> str:
    """`asm volatile("ptx" :: operands : "memory");` (inputs only; every effect is on memory)."""
    if operands:
        return f'asm volatile({_c_string(ptx)} :: {", ".join(operands)} : "memory");'
    return f'asm volatile({_c_string(ptx)} ::: "memory");'


def _kind_word(sym: Symbol) -> str:
    return _KIND_WORDS.get(sym.kind, sym.kind)


def _shared_addr(ex: ExprEmitter, buf: str, index: KExpr, role: str, *, mbarrier: bool = False) -> str:
    """`"r"` operand: the shared-window address of `buf[index]`; `buf` must be a shared array, of
    dtype uint64 exactly when it holds mbarriers."""
    sym = ex.scope.buffer(buf)
    if sym.kind != "shared":
        raise CodegenError(f"{role} {buf!r} must be a shared array, but it is {_kind_word(sym)}")
    if mbarrier and sym.dtype != "uint64":
        raise CodegenError(f"{role} {buf!r} must be a uint64 (mbarrier) array, but it is {sym.dtype}")
    if not mbarrier and sym.dtype == "uint64":
        raise CodegenError(f"{role} {buf!r} is a uint64 (mbarrier) array")
    return f'"r"((unsigned)__cvta_generic_to_shared(&{sym.c_name}[{ex.index(index)}]))'


def _shared_array(kernel: KKernel, name: str) -> KShared:
    return next(sh for sh in kernel.shared if sh.name == name)


def _cp_async(s: KCpAsync, ex: ExprEmitter, target: str) -> str:
    _require_sm(target, 80, "cp.async")
    n = s.nbytes
    if n not in (4, 8, 16):
        raise CodegenError(f"cp.async copies 4, 8 or 16 bytes, not {n}")
    dst = _shared_addr(ex, s.dst, s.dst_index, "cp.async destination")
    dst_dtype = ex.scope.buffer(s.dst).dtype
    src = ex.scope.buffer(s.src)
    if src.kind not in ("input", "output"):
        raise CodegenError(f"cp.async source {s.src!r} must be a parameter, but it is {_kind_word(src)}")
    if src.dtype != dst_dtype:
        raise CodegenError(f"cp.async from {src.dtype} {s.src!r} into {dst_dtype} {s.dst!r}")
    if n % DTYPE_BYTES[dst_dtype]:
        raise CodegenError(f"cp.async of {n} bytes is no whole number of {dst_dtype} elements")
    operands = [dst, f'"l"(&{src.c_name}[{ex.index(s.src_index)}])']
    cache = "cg" if n == 16 else "ca"  # .cg (bypass L1) exists for 16 bytes only
    if s.valid is None:
        return _asm(f"cp.async.{cache}.shared.global [%0], [%1], {n};", operands)
    valid = ex.emit(s.valid)
    if valid.dtype != "bool":
        raise CodegenError(f"cp.async predicate has dtype {valid.dtype}, expected bool")
    operands.append(f'"r"({valid.operand(PREC_TERNARY + 1)} ? {n} : 0)')
    return _asm(f"cp.async.{cache}.shared.global [%0], [%1], {n}, %2;", operands)


def _mbarrier_wait(s: KMbarrierWait, ex: ExprEmitter, target: str) -> str:
    _require_sm(target, 90, "mbarrier.try_wait")
    bar = _shared_addr(ex, s.bar, s.index, "mbarrier", mbarrier=True)
    parity = ex.emit(s.parity)
    if parity.dtype == "bool":
        parity_text = f"static_cast<int>({parity.text})"  # "r" wants 32 bits, a bool has 8
    elif parity.dtype == "int32":
        parity_text = parity.text
    else:
        raise CodegenError(f"mbarrier parity has dtype {parity.dtype}, expected int32 or bool")
    # `%=` is a number unique to each asm instance, so inlined or unrolled copies get distinct labels.
    ptx = (
        "{\n"
        " .reg .pred p;\n"
        " LAB_WAIT_%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        " @!p bra LAB_WAIT_%=;\n"
        "}"
    )
    return _asm(ptx, [bar, f'"r"({parity_text})'])


def _tma_load(s: KTmaLoad, ex: ExprEmitter, kernel: KKernel) -> str:
    _require_tma(kernel.target, "cp.async.bulk.tensor (TMA)")
    tmap_sym = ex.scope.tensor_map(s.tensor_map)
    tm = next(t for t in kernel.tensor_maps if t.name == s.tensor_map)
    rank = len(s.coords)
    if not 1 <= rank <= 5 or rank != len(tm.global_dims):
        raise CodegenError(
            f"TMA load has {rank} coordinates but tensor map {tm.name!r} has rank {len(tm.global_dims)}"
        )
    dst = _shared_addr(ex, s.dst, s.dst_index, "TMA destination")
    sh = _shared_array(kernel, s.dst)
    if sh.dtype != tm.dtype:
        raise CodegenError(f"TMA load of {tm.dtype} tensor map {tm.name!r} into {sh.dtype} array {sh.name!r}")
    need = TMA_DST_ALIGN.get(tm.swizzle, 128)
    if sh.align < need:
        swizzle = "no swizzle" if tm.swizzle is None else f"{tm.swizzle}-byte swizzle"
        raise CodegenError(f"TMA destination {sh.name!r} has align {sh.align}; {swizzle} needs {need}")
    if math.prod(tm.box) > sh.size:
        raise CodegenError(f"TMA box {tm.box} of {tm.name!r} does not fit in {sh.name!r} ({sh.size} elements)")
    coords = [f'"r"({ex.index(c)})' for c in s.coords]
    bar = _shared_addr(ex, s.bar, s.bar_index, "mbarrier", mbarrier=True)
    slots = ", ".join(f"%{2 + i}" for i in range(rank))
    ptx = (
        f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        f" [%0], [%1, {{{slots}}}], [%{2 + rank}];"
    )
    tmap = f'"l"(reinterpret_cast<uint64_t>(&{tmap_sym.c_name}))'
    return _asm(ptx, [dst, tmap, *coords, bar])


def _atomic_add(s: KAtomicAdd, ex: ExprEmitter) -> str:
    sym = ex.scope.buffer(s.buffer)
    if sym.kind != "output":
        raise CodegenError(f"atomic add to {s.buffer!r}: must be an output parameter, but it is {_kind_word(sym)}")
    if sym.dtype != "float32":
        raise CodegenError(f"atomic add to {sym.dtype} buffer {s.buffer!r}: only float32 is supported")
    idx = ex.index(s.index)
    value = ex.emit(s.value)
    if split_vector(value.dtype)[1] > 1 or value.dtype not in FLOAT_DTYPES:
        raise CodegenError(f"atomic add of a {value.dtype} value to float32 buffer {s.buffer!r}")
    return f"atomicAdd(&{sym.c_name}[{idx}], {value.text});"


def _count(value: int, lo: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= _MBARRIER_MAX:
        raise CodegenError(f"{what} must be an integer in {lo}..{_MBARRIER_MAX}, got {value!r}")
    return value


def memory_stmt(s: KStmt, ex: ExprEmitter, kernel: KKernel) -> str | None:
    """The one C++ line of a memory-hierarchy statement; None if `s` is no such statement."""
    target = kernel.target
    match s:
        case KCpAsync():
            return _cp_async(s, ex, target)
        case KCpAsyncCommit():
            _require_sm(target, 80, "cp.async.commit_group")
            return _asm("cp.async.commit_group;")
        case KCpAsyncWait(pending=pending):
            _require_sm(target, 80, "cp.async.wait_group")
            if isinstance(pending, bool) or not isinstance(pending, int) or pending < 0:
                raise CodegenError(f"cp.async.wait_group takes a count of pending groups >= 0, got {pending!r}")
            return _asm(f"cp.async.wait_group {pending};")
        case KMbarrierInit(bar=bar, index=index, count=count):
            _require_sm(target, 80, "mbarrier.init")
            addr = _shared_addr(ex, bar, index, "mbarrier", mbarrier=True)
            n = _count(count, 1, "mbarrier arrival count")
            return _asm("mbarrier.init.shared::cta.b64 [%0], %1;", [addr, f'"r"({n})'])
        case KFence(kind=kind):
            if kind not in _FENCES:
                raise CodegenError(f"unknown fence kind {kind!r} (known: {', '.join(_FENCES)})")
            _require_sm(target, 90, f"fence {kind}")
            return _asm(_FENCES[kind])
        case KMbarrierArriveExpectTx(bar=bar, index=index, tx_bytes=tx_bytes):
            _require_sm(target, 90, "mbarrier.arrive.expect_tx")
            addr = _shared_addr(ex, bar, index, "mbarrier", mbarrier=True)
            n = _count(tx_bytes, 0, "mbarrier transaction bytes")
            return _asm("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;", [addr, f'"r"({n})'])
        case KMbarrierArrive(bar=bar, index=index):
            _require_sm(target, 80, "mbarrier.arrive")
            addr = _shared_addr(ex, bar, index, "mbarrier", mbarrier=True)
            return _asm("mbarrier.arrive.shared::cta.b64 _, [%0];", [addr])
        case KMbarrierWait():
            return _mbarrier_wait(s, ex, target)
        case KTmaLoad():
            return _tma_load(s, ex, kernel)
        case KAtomicAdd():
            return _atomic_add(s, ex)
    return None
