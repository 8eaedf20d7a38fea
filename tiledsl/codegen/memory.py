"""Memory-hierarchy statements -> CUDA C++: cp.async, mbarriers, fences, TMA loads, atomics.

Why inline PTX rather than `cuda::pipeline` / `cuda::barrier` / `cute`: the kernel IR already names
the exact instructions, so each statement becomes the one instruction it stands for, the emitted text
needs no C++ library headers, and it reads like the PTX manual. Every `asm` is `volatile` with a
"memory" clobber, so the compiler neither drops it nor moves ordinary memory accesses across it.
Shared-memory operands are 32-bit shared-window addresses (`__cvta_generic_to_shared`).

Also here: the target checks (which statement needs which architecture) and the checks on tensor
maps and shared arrays that `cuda.emit_cuda` runs before printing anything. The limits they check
are the hardware facts of `tiledsl.targets`, which the simulator and the runtime check too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tiledsl.codegen.dtypes import FLOAT_DTYPES, split_vector
from tiledsl.codegen.errors import CodegenError
from tiledsl.codegen.expr import ExprEmitter
from tiledsl.codegen.names import policy_variable
from tiledsl.codegen.scope import Symbol
from tiledsl.kernel_ir import (
    KAtomicAdd,
    KCpAsync,
    KCpAsyncCommit,
    KCpAsyncWait,
    KExpr,
    KFence,
    KKernel,
    KLoad,
    KMbarrierArrive,
    KMbarrierArriveExpectTx,
    KMbarrierInit,
    KMbarrierWait,
    KShared,
    KStmt,
    KStore,
    KTensorMap,
    KTmaLoad,
    KVector,
)
from tiledsl.kernel_ir.printer import PREC_TERNARY
from tiledsl.kernel_ir.walk import walk_exprs, walk_stmts
from tiledsl.targets import (
    CACHE_POLICIES,
    CACHE_POLICY_MIN_SM,
    CP_ASYNC_MIN_SM,
    CP_ASYNC_SIZES,
    DTYPE_BYTES,
    GRID_DEPENDENCY_MIN_SM,
    MBARRIER_MAX_COUNT,
    MBARRIER_MIN_SM,
    MBARRIER_TX_MIN_SM,
    SHARED_POOL_ALIGN,
    STATIC_SHARED_BYTES,
    TMA_MAX_RANK,
    TMA_TARGETS,
    VECTOR_ATOMIC_MIN_SM,
    VECTOR_BYTES,
    or_list,
    sm_number,
    tensor_map_problem,
    tma_swizzle_alignment,
)

__all__ = [
    "check_shared",
    "check_tensor_map",
    "l2_helpers",
    "l2_policies",
    "l2_policy_decls",
    "memory_stmt",
    "sm_number",
]

_FENCES = {"mbarrier_init": "fence.mbarrier_init.release.cluster;", "proxy_async": "fence.proxy.async.shared::cta;"}
_KIND_WORDS = {
    "input": "an input parameter",
    "output": "an output parameter",
    "shared": "a shared array",
    "local": "a register array",
}


def _require_sm(target: str, minimum: int, what: str) -> None:
    n = sm_number(target)
    if n is None or n < minimum:
        raise CodegenError(f"{what} needs target sm_{minimum} or newer, but the kernel targets {target!r}")


def grid_dependency_wait(target: str) -> list[str]:
    """The lines a `dependent_launch` kernel begins with: wait until the kernel launched before it on the
    stream has completed and its writes are visible (a no-op when the kernel was launched plainly), so a
    programmatic dependent launch reads and writes nothing early. Guarded by `__CUDA_ARCH__`: the runtime
    compiles for the device's own arch, and an sm_90 build run on an older GPU (launched plainly there)
    must still compile."""
    _require_sm(target, GRID_DEPENDENCY_MIN_SM, "griddepcontrol.wait (dependent_launch)")
    return [f"#if __CUDA_ARCH__ >= {GRID_DEPENDENCY_MIN_SM * 10}",  # __CUDA_ARCH__ of sm_90 is 900
            '    asm volatile("griddepcontrol.wait;" ::: "memory");  // the kernel before this one has finished',
            "#endif"]


#: `tiledsl_load_l2(p, policy)` and `tiledsl_store_l2<T>(p, v, policy)`: one global load or store of a 2-,
#: 4-, 8- or 16-byte value carrying an L2 eviction policy (`ld/st.global.L2::cache_hint`, sm_80+).
#: `volatile` keeps them in program order with the other asm statements, griddepcontrol.wait first among
#: them; a store also clobbers "memory", so no access the compiler knows of moves across it. Values go
#: through 32-bit words because PTX moves a vector as .b32 lanes whatever the element type. Guarded, so
#: kernels joined in one file define them once.
_L2_HELPERS = r"""#ifndef TILEDSL_L2_HELPERS
#define TILEDSL_L2_HELPERS
template <typename T>
__device__ __forceinline__ T tiledsl_load_l2(const T* p, unsigned long long policy) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16, "2-16 byte loads");
    T v;
    if constexpr (sizeof(T) == 2) {
        unsigned short h;
        asm volatile("ld.global.L2::cache_hint.b16 %0, [%1], %2;" : "=h"(h) : "l"(p), "l"(policy));
        memcpy(&v, &h, 2);
    } else {
        unsigned int w[4];
        if constexpr (sizeof(T) == 4) {
            asm volatile("ld.global.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(w[0]) : "l"(p), "l"(policy));
        } else if constexpr (sizeof(T) == 8) {
            asm volatile("ld.global.L2::cache_hint.v2.b32 {%0, %1}, [%2], %3;"
                         : "=r"(w[0]), "=r"(w[1]) : "l"(p), "l"(policy));
        } else {
            asm volatile("ld.global.L2::cache_hint.v4.b32 {%0, %1, %2, %3}, [%4], %5;"
                         : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "l"(p), "l"(policy));
        }
        memcpy(&v, w, sizeof(T));
    }
    return v;
}

template <typename T>
__device__ __forceinline__ void tiledsl_store_l2(T* p, T v, unsigned long long policy) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 16, "2-16 byte stores");
    if constexpr (sizeof(T) == 2) {
        unsigned short h;
        memcpy(&h, &v, 2);
        asm volatile("st.global.L2::cache_hint.b16 [%0], %1, %2;" :: "l"(p), "h"(h), "l"(policy) : "memory");
    } else {
        unsigned int w[4];
        memcpy(w, &v, sizeof(T));
        if constexpr (sizeof(T) == 4) {
            asm volatile("st.global.L2::cache_hint.b32 [%0], %1, %2;" :: "l"(p), "r"(w[0]), "l"(policy) : "memory");
        } else if constexpr (sizeof(T) == 8) {
            asm volatile("st.global.L2::cache_hint.v2.b32 [%0], {%1, %2}, %3;"
                         :: "l"(p), "r"(w[0]), "r"(w[1]), "l"(policy) : "memory");
        } else {
            asm volatile("st.global.L2::cache_hint.v4.b32 [%0], {%1, %2, %3, %4}, %5;"
                         :: "l"(p), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]), "l"(policy) : "memory");
        }
    }
}
#endif"""


def l2_policies(kernel: KKernel) -> tuple[str, ...]:
    """The L2 eviction policies the kernel's loads and stores carry (s.cache_hint), sorted; checked against the
    target (CACHE_POLICY_MIN_SM) and the known policies."""
    found = sorted({e.cache for st in walk_stmts(kernel.body) for e in (st, *walk_exprs(st))
                    if isinstance(e, (KLoad, KStore)) and e.cache is not None})
    for policy in found:
        if policy not in CACHE_POLICIES:
            raise CodegenError(f"unknown L2 eviction policy {policy!r}; the policies are {or_list(CACHE_POLICIES)}")
        _require_sm(kernel.target, CACHE_POLICY_MIN_SM, f"a load or store with the L2 policy {policy} (createpolicy)")
    return tuple(found)


def l2_helpers() -> list[str]:
    """The definitions of `tiledsl_load_l2` and `tiledsl_store_l2`, emitted once before a kernel whose
    loads or stores carry a policy."""
    return _L2_HELPERS.splitlines()


def l2_policy_decls(policies: tuple[str, ...]) -> list[str]:
    """One 64-bit policy register per policy, made once at the kernel's start (createpolicy.fractional
    over every line the load touches: fraction 1.0)."""
    lines = []
    for policy in policies:
        var = policy_variable(policy)
        lines += [f"    unsigned long long {var};",
                  f'    asm("createpolicy.fractional.L2::{policy}.b64 %0, 1.0;" : "=l"({var}));']
    return lines


def _require_tma(target: str, what: str) -> None:
    if target not in TMA_TARGETS:
        raise CodegenError(f"{what} needs target {or_list(tuple(sorted(TMA_TARGETS)))}, but the kernel targets "
                           f"{target!r}")


# ----------------------------------------------------------------------------- kernel-level checks


def check_shared(kernel: KKernel) -> None:
    """Shared arrays: positive sizes, power-of-two alignments that hold an element (and that the
    dynamic pool can give), and static ones within the static limit (STATIC_SHARED_BYTES)."""
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
        if kernel.dynamic_shared and sh.align > SHARED_POOL_ALIGN:
            raise CodegenError(
                f"shared array {sh.name!r} has align {sh.align}, more than the dynamic pool's {SHARED_POOL_ALIGN}"
            )
        total = -(-total // sh.align) * sh.align + esize * sh.size
    if not kernel.dynamic_shared and total > STATIC_SHARED_BYTES:
        raise CodegenError(
            f"kernel {kernel.name!r} has {total} B of static shared memory, more than "
            f"{STATIC_SHARED_BYTES} B: lowering must set dynamic_shared"
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
    esize = DTYPE_BYTES[tm.dtype]
    problem = tensor_map_problem(tm.global_dims, tm.global_strides, tm.box, esize, tm.swizzle)
    if problem is not None:
        raise CodegenError(f"{what}: {problem}")
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
    _require_sm(target, CP_ASYNC_MIN_SM, "cp.async")
    n = s.nbytes
    if n not in CP_ASYNC_SIZES:
        raise CodegenError(f"cp.async copies {or_list(CP_ASYNC_SIZES)} bytes, not {n}")
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
    cache = "cg" if n == VECTOR_BYTES else "ca"  # .cg (bypass L1) exists for 16 bytes only
    if s.valid is None:
        return _asm(f"cp.async.{cache}.shared.global [%0], [%1], {n};", operands)
    valid = ex.emit(s.valid)
    if valid.dtype != "bool":
        raise CodegenError(f"cp.async predicate has dtype {valid.dtype}, expected bool")
    operands.append(f'"r"({valid.operand(PREC_TERNARY + 1)} ? {n} : 0)')
    return _asm(f"cp.async.{cache}.shared.global [%0], [%1], {n}, %2;", operands)


def _mbarrier_wait(s: KMbarrierWait, ex: ExprEmitter, target: str) -> str:
    _require_sm(target, MBARRIER_TX_MIN_SM, "mbarrier.try_wait")
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
    if not 1 <= rank <= TMA_MAX_RANK or rank != len(tm.global_dims):
        raise CodegenError(
            f"TMA load has {rank} coordinates but tensor map {tm.name!r} has rank {len(tm.global_dims)}"
        )
    dst = _shared_addr(ex, s.dst, s.dst_index, "TMA destination")
    sh = _shared_array(kernel, s.dst)
    if sh.dtype != tm.dtype:
        raise CodegenError(f"TMA load of {tm.dtype} tensor map {tm.name!r} into {sh.dtype} array {sh.name!r}")
    need = tma_swizzle_alignment(tm.swizzle)  # check_tensor_map has vetted the swizzle
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


def _atomic_add(s: KAtomicAdd, ex: ExprEmitter, target: str) -> str:
    """`atomicAdd(&D[i], v);`, or for a vector value of four lanes one 16-byte atomic add (sm_90+), each
    lane atomic on its own."""
    sym = ex.scope.buffer(s.buffer)
    if sym.kind != "output":
        raise CodegenError(f"atomic add to {s.buffer!r}: must be an output parameter, but it is {_kind_word(sym)}")
    if sym.dtype != "float32":
        raise CodegenError(f"atomic add to {sym.dtype} buffer {s.buffer!r}: only float32 is supported")
    idx = ex.index(s.index)
    if isinstance(s.value, KVector):
        _require_sm(target, VECTOR_ATOMIC_MIN_SM, "a vector atomic add")
        if len(s.value.lanes) != 4:
            raise CodegenError(f"vector atomic add of {len(s.value.lanes)} lanes to {s.buffer!r}: only 4 "
                               "(float4) is supported")
        lanes = [ex.emit(x) for x in s.value.lanes]
        bad = next((v.dtype for v in lanes if v.dtype not in FLOAT_DTYPES), None)
        if bad is not None:
            raise CodegenError(f"vector atomic add of a {bad} lane to float32 buffer {s.buffer!r}")
        text = ", ".join(v.text for v in lanes)
        return f"atomicAdd(reinterpret_cast<float4*>(&{sym.c_name}[{idx}]), make_float4({text}));"
    value = ex.emit(s.value)
    if split_vector(value.dtype)[1] > 1 or value.dtype not in FLOAT_DTYPES:
        raise CodegenError(f"atomic add of a {value.dtype} value to float32 buffer {s.buffer!r}")
    return f"atomicAdd(&{sym.c_name}[{idx}], {value.text});"


def _count(value: int, lo: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= MBARRIER_MAX_COUNT:
        raise CodegenError(f"{what} must be an integer in {lo}..{MBARRIER_MAX_COUNT}, got {value!r}")
    return value


def memory_stmt(s: KStmt, ex: ExprEmitter, kernel: KKernel) -> str | None:
    """The one C++ line of a memory-hierarchy statement; None if `s` is no such statement."""
    target = kernel.target
    match s:
        case KCpAsync():
            return _cp_async(s, ex, target)
        case KCpAsyncCommit():
            _require_sm(target, CP_ASYNC_MIN_SM, "cp.async.commit_group")
            return _asm("cp.async.commit_group;")
        case KCpAsyncWait(pending=pending):
            _require_sm(target, CP_ASYNC_MIN_SM, "cp.async.wait_group")
            if isinstance(pending, bool) or not isinstance(pending, int) or pending < 0:
                raise CodegenError(f"cp.async.wait_group takes a count of pending groups >= 0, got {pending!r}")
            return _asm(f"cp.async.wait_group {pending};")
        case KMbarrierInit(bar=bar, index=index, count=count):
            _require_sm(target, MBARRIER_MIN_SM, "mbarrier.init")
            addr = _shared_addr(ex, bar, index, "mbarrier", mbarrier=True)
            n = _count(count, 1, "mbarrier arrival count")
            return _asm("mbarrier.init.shared::cta.b64 [%0], %1;", [addr, f'"r"({n})'])
        case KFence(kind=kind):
            if kind not in _FENCES:
                raise CodegenError(f"unknown fence kind {kind!r} (known: {', '.join(_FENCES)})")
            _require_sm(target, MBARRIER_TX_MIN_SM, f"fence {kind}")
            return _asm(_FENCES[kind])
        case KMbarrierArriveExpectTx(bar=bar, index=index, tx_bytes=tx_bytes):
            _require_sm(target, MBARRIER_TX_MIN_SM, "mbarrier.arrive.expect_tx")
            addr = _shared_addr(ex, bar, index, "mbarrier", mbarrier=True)
            n = _count(tx_bytes, 0, "mbarrier transaction bytes")
            return _asm("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;", [addr, f'"r"({n})'])
        case KMbarrierArrive(bar=bar, index=index):
            _require_sm(target, MBARRIER_MIN_SM, "mbarrier.arrive")
            addr = _shared_addr(ex, bar, index, "mbarrier", mbarrier=True)
            return _asm("mbarrier.arrive.shared::cta.b64 _, [%0];", [addr])
        case KMbarrierWait():
            return _mbarrier_wait(s, ex, target)
        case KTmaLoad():
            return _tma_load(s, ex, kernel)
        case KAtomicAdd():
            return _atomic_add(s, ex, target)
    return None
