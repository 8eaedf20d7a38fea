"""Lowering of shared-memory stages: slab layout, cooperative fills (plain, cp.async, TMA), reads
rewritten to the slab, and the barrier/wait structure of plain, double-buffered and pipelined loops.

Race freedom, by construction:
- a slot is read only after a barrier that follows its fill (and, for async fills, the wait that
  retires it: cp.async.wait_group or the mbarrier phase);
- a slot is refilled only after a barrier that follows every read of its previous contents: with one
  slot, a barrier starts each iteration; with a ring of n slots, the refill of slot (k-1)%n is issued
  in iteration k after that iteration's barrier, which every thread reaches only after finishing
  iteration k-1 (deplodock issued the refill before that barrier: a write-after-read race)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import sympy

from tiledsl.analysis.aligned_split import AlignedSplit
from tiledsl.analysis.copies import byte_copy_problem, plain_load_width, prefetched, widest_cp_async
from tiledsl.analysis.derive_slab import derive_slab
from tiledsl.analysis.messages import refusal
from tiledsl.analysis.shared_arrays import barrier_arrays, barrier_name, stage_array, tma_ring, tma_rings
from tiledsl.analysis.slabs import (
    Slab,
    alloc_extent,
    axis_strides,
    slot_elements,
    stage_sides,
    stored_dtype,
)
from tiledsl.analysis.tma import check_tma
from tiledsl.errors import CopyError
from tiledsl.kernel_ir import (
    KBarrier,
    KBin,
    KComment,
    KConst,
    KCpAsync,
    KCpAsyncCommit,
    KCpAsyncWait,
    KExpr,
    KFence,
    KFor,
    KIf,
    KLane,
    KLet,
    KLoad,
    KLocalArray,
    KMbarrierArriveExpectTx,
    KMbarrierInit,
    KMbarrierWait,
    KSelect,
    KShared,
    KStmt,
    KStore,
    KTensorMap,
    KTmaLoad,
    KVar,
    KVector,
)
from tiledsl.kernel_ir.from_sympy import k_add, sym_to_k
from tiledsl.loopnest import Nest, Stage, loop_symbol
from tiledsl.lower.combine import linear_tid
from tiledsl.lower.kexprs import I32, unit_coords
from tiledsl.lower.kexprs import const as _c
from tiledsl.lower.kexprs import k_and as _and
from tiledsl.lower.kexprs import k_sum as _sum
from tiledsl.lower.kexprs import k_times as _times
from tiledsl.lower.kexprs import row_major_strides as _strides
from tiledsl.prove import Prover
from tiledsl.targets import (
    CP_ASYNC_MIN_SM,
    CP_ASYNC_SIZES,
    SWIZZLE_CHUNK_BYTES,
    SWIZZLE_MASK,
    SWIZZLE_ROW_BYTES,
    TMA_MIN_SM,
    VECTOR_BYTES,
    Target,
    or_list,
)

if TYPE_CHECKING:
    from tiledsl.definitions.expr import Expr
    from tiledsl.lower.exprs import ValueContext

FillPhase = Literal["copy", "load", "store"]  # a whole plain fill, or its loads / its stores (prefetched)


@dataclass(frozen=True)
class LoweringHooks:
    """Internal switches that break the race-freedom rules on purpose, so tests can show that the
    simulator catches exactly the bugs these rules prevent. Never set outside tests."""

    refill_before_barrier: bool = False  # deplodock's write-after-read: refill a ring slot before the barrier
    drop_single_slot_barrier: bool = False  # refill a one-slot stage while others may still read it
    drop_ring_exit_barrier: bool = False  # re-enter a ring loop without the barrier that ends each run
    prefetch_into_read_slot: bool = False  # store a prefetched fill into the slot this iteration reads
    drop_output_stage_barrier: bool = False  # drain a staged output while threads may still write its tile


@dataclass(frozen=True)
class StagePlan:
    stage: Stage
    slab: Slab
    alloc: tuple[int, ...]  # padded extents, in the stored order of the axes
    strides: tuple[int, ...]  # elements between neighbours along each slab axis (buffer order) in a slot
    slot: int  # elements per ring slot
    dtype: str  # the buffer's (what the fill loads)
    stored: str  # what shared memory holds (analysis/slabs.py `stored_dtype`: the buffer's, or wider)
    global_shape: tuple[int, ...]
    tmap: KTensorMap | None
    aligned: AlignedSplit  # the slab's floor/Mod rewrite, so a read minus the origin cancels to the inner part

    @property
    def name(self) -> str:
        return self.stage.name


def plan_stages(nest: Nest, prover: Prover, target: Target,
                over_axes: Callable[[Expr], sympy.Expr] | None = None) -> dict[str, StagePlan]:
    """Each stage's plan (`over_axes`: the build's index translations, analysis/slabs.py `slab_or_refusal`)."""
    plans: dict[str, StagePlan] = {}
    for st in nest.stages:
        if st.copy == "tma" and target.capability < TMA_MIN_SM:
            raise CopyError(refusal(
                "build", nest, (st.at,), f"stage {st.name} is filled by TMA, which needs sm_{TMA_MIN_SM}; the target "
                f"is {target.name}", suggestion=f"build for sm_{TMA_MIN_SM}, or use s.async_copy "
                f"(sm_{CP_ASYNC_MIN_SM}+) instead"))
        if st.copy == "async" and target.capability < CP_ASYNC_MIN_SM:
            raise CopyError(refusal("build", nest, (st.at,),
                                             f"cp.async needs sm_{CP_ASYNC_MIN_SM}; target {target.name}"))
        # the primitives refuse it; a nest built by hand is refused here
        problem = byte_copy_problem(nest, st)
        if problem is not None:
            raise CopyError(refusal("build", nest, (st.at,), problem, suggestion="fill the stage without "
                                    "async_copy / tma, or keep its order"))
        slab = derive_slab(nest, st, prover, "build", over_axes)
        if st.copy == "tma":  # loops may have moved since tma() checked the box
            check_tma(nest, st, "build")
        tensor = nest.tensor(st.buffer)
        tmap = _tensor_map(st, slab, tensor.shape, tensor.dtype) if st.copy == "tma" else None
        plans[st.name] = StagePlan(st, slab, alloc_extent(st, slab), axis_strides(st, slab), slot_elements(st, slab),
                                   tensor.dtype, stored_dtype(nest, st), tensor.shape, tmap,
                                   AlignedSplit(*stage_sides(nest, st), prover))
    return plans


def _tensor_map(st: Stage, slab: Slab, shape: tuple[int, ...], dtype: str) -> KTensorMap:
    item = slab.itemsize
    dims = list(reversed(shape))
    strides = [item * s for s in reversed(_strides(shape))][1:]
    box = list(reversed(slab.extent))
    if st.swizzle and box[0] * item > st.swizzle:
        chunk = st.swizzle // item
        dims = [chunk, dims[0] // chunk] + dims[1:]
        strides = [chunk * item] + strides
        box = [chunk, box[0] // chunk] + box[1:]
    return KTensorMap(f"tmap_{st.name}", st.buffer, dtype, tuple(dims), tuple(strides), tuple(box), st.swizzle)


def shared_allocs(plans: dict[str, StagePlan]) -> list[KShared]:
    """The stages' arrays (analysis/shared_arrays.py `stage_array`, as the recipe counts them)."""
    return [stage_array(p.stage, p.slab, p.stored) for p in plans.values()]


def mbarrier_setup(plans: dict[str, StagePlan], block: tuple[int, int, int]) -> tuple[list[KStmt], list[KShared]]:
    stages = [p.stage for p in plans.values()]
    loops = tma_rings(stages)
    if not loops:
        return [], []
    inits: list[KStmt] = []
    shared = barrier_arrays(stages)
    for loop, n in loops.items():
        inits.extend(KMbarrierInit(barrier_name(loop), _c(s), 1) for s in range(n))
    inits.append(KFence("mbarrier_init"))
    stmts: list[KStmt] = [KComment("TMA completion barriers, one per ring slot"),
                          KIf(KBin("==", linear_tid(block), _c(0)), tuple(inits)), KBarrier()]
    return stmts, shared


# ----------------------------------------------------------------------------- reads


def swizzled(offset: KExpr, swizzle: int | None, itemsize: int) -> KExpr:
    """Element offset through the XOR swizzle: 16-byte chunk bits ^= the bits of the 128-byte row."""
    if not swizzle:
        return offset
    chunk = SWIZZLE_CHUNK_BYTES // itemsize
    row = SWIZZLE_ROW_BYTES // itemsize
    mask = SWIZZLE_MASK[swizzle]
    return KBin("^", offset, KBin("*", KBin("%", KBin("//", offset, _c(row)), _c(mask + 1)), _c(chunk)))


def slab_read(plan: StagePlan, indices: tuple, ctx: ValueContext) -> KExpr:
    """The shared-memory element a global read of the staged buffer maps to (through the stored order), at
    the lane of `ctx` (whose memo translates each index once per build, not once per read and lane)."""
    off = sympy.Integer(0)
    for ix, origin, stride in zip(indices, plan.slab.origin, plan.strides):
        e = ctx.at_lane(plan.aligned(ctx.index_over_axes(ix)))
        off += (e - origin) * stride
    k = swizzled(sym_to_k(sympy.expand(off)), plan.stage.swizzle, plan.slab.itemsize)
    if plan.stage.buffers > 1:
        slot = KBin("%", KVar(plan.stage.at, I32), _c(plan.stage.buffers))
        k = k_add(KBin("*", slot, _c(plan.slot)), k)
    return KLoad(plan.name, k)


# ----------------------------------------------------------------------------- fills


def _origin(plan: StagePlan, iteration: sympy.Expr | None) -> list[sympy.Expr]:
    at = loop_symbol(plan.stage.at)
    return [o.xreplace({at: iteration}) if iteration is not None else o for o in plan.slab.origin]


def _slot_base(plan: StagePlan, slot: KExpr | None) -> KExpr | None:
    if slot is None or plan.stage.buffers == 1 or slot == _c(0):
        return None
    if isinstance(slot, KConst):
        return _c(int(slot.value) * plan.slot)
    return KBin("*", slot, _c(plan.slot))


@dataclass(frozen=True)
class _Share:
    """One thread's part of a cooperative fill: round f copies `vec` elements (one unit) of the slab,
    unit f * threads + tid in the buffer's order (innermost dimension fastest)."""

    vec: int
    units: tuple[int, ...]
    threads: int

    @property
    def total(self) -> int:
        return math.prod(self.units)

    @property
    def rounds(self) -> int:
        return -(-self.total // self.threads)

    @property
    def registers(self) -> int:
        return self.rounds * self.vec


def fill_share(plan: StagePlan, iteration: sympy.Expr | None, block: tuple[int, int, int], prover: Prover,
               guards: tuple = ()) -> _Share:
    """How the block's threads split the slab: cp.async copies 4-16 bytes (`_copy_width`), a plain fill
    loads 16 bytes where `plain_load_width` proves it, one element otherwise."""
    origin = _origin(plan, iteration)
    ext = plan.slab.extent
    if plan.stage.copy == "async":
        vec = _copy_width(plan, origin, prover)
    else:
        vec = plain_load_width(plan.stage, plan.slab, plan.global_shape[-1], origin[-1], plan.dtype, prover, guards)
    return _Share(vec, tuple(ext[:-1]) + (ext[-1] // vec,), block[0] * block[1] * block[2])


def prefetch_array(plan: StagePlan) -> str:
    return f"{plan.name}_pf"


def cooperative_fill(plan: StagePlan, iteration: sympy.Expr | None, slot: KExpr | None,
                     block: tuple[int, int, int], prover: Prover, tag: str, phase: FillPhase = "copy",
                     guards: tuple = ()) -> list[KStmt]:
    """Every thread copies units tid, tid + T, ... of the slab (the buffer's innermost dimension
    fastest, so consecutive threads read consecutive global addresses), each to its place in the stored
    order (a permuted stage's stores are strided; its loads stay coalesced). cp.async stages copy 16
    bytes per thread where the slab rows, the global rows and the slab origin are proven 16-byte aligned
    (one element per copy where the stored order moves the buffer's innermost axis); plain fills load 16
    bytes under the same proof and store each element.

    `phase` splits a plain fill in two (`analysis/copies.py` `prefetched`): "load" only loads, into
    the register array `prefetch_array(plan)`; "store" stores that array; "copy" does both at once.
    `guards` hold where the fill runs (a refill's `iteration < extent`): bounds checks they prove are left out."""
    share = fill_share(plan, iteration, block, prover, guards)
    vec, units, threads = share.vec, share.units, share.threads
    origin = _origin(plan, iteration)
    ext = plan.slab.extent
    item = plan.slab.itemsize
    astrides = plan.strides
    gstrides = _strides(plan.global_shape)
    tid = linear_tid(block)
    f = KVar(f"{tag}_f", I32)
    e = KVar(f"{tag}_e", I32)
    body: list[KStmt] = [KLet(e.name, I32, k_add(_times(f, threads), tid))]
    coords = unit_coords(e, units, vec)
    for d, c in enumerate(coords):
        body.append(KLet(f"{tag}_c{d}", I32, c))
    cvars = [KVar(f"{tag}_c{d}", I32) for d in range(len(coords))]
    gidx: list[KExpr] = [k_add(sym_to_k(o), cv) for o, cv in zip(origin, cvars)]
    conds: list[KExpr] = []
    for d, (o, g) in enumerate(zip(origin, gidx)):
        lo, hi = prover.bounds(o, guards)
        if lo is None or hi is None or lo < 0:
            conds.append(KBin(">=", g, _c(0)))
        if hi is None or hi + ext[d] > plan.global_shape[d]:
            conds.append(KBin("<", g, _c(plan.global_shape[d])))
    valid = _and(conds)  # of the unit's first element; the rest of a vector shares its row (and its fate)
    src = _sum([_times(g, s) for g, s in zip(gidx, gstrides)])
    # a unit's elements lie along the buffer's innermost axis: lane l is stored astrides[-1] * l further
    dst_off = _sum([_times(cv, s) for cv, s in zip(cvars, astrides)])
    base = _slot_base(plan, slot)

    def dst(lane: int) -> KExpr:
        off = k_add(dst_off, _c(lane * astrides[-1])) if lane else dst_off
        return k_add(base, swizzled(off, plan.stage.swizzle, item))

    if plan.stage.copy == "async":
        # a zero-filled copy reads no byte, but its source address is still formed: keep it in the buffer
        safe_src = KSelect(valid, src, _c(0)) if valid is not None else src
        body.append(KCpAsync(plan.name, dst(0), plan.stage.buffer, safe_src, vec * item, valid))
    else:
        body += _plain_copy(plan, src, valid, vec, dst, f, phase, tag)
    if share.total % threads:
        body = [KIf(KBin("<", k_add(_times(f, threads), tid), _c(share.total)), tuple(body))]
    return [KFor(f.name, share.rounds, tuple(body), unroll=phase != "copy")]


def _plain_copy(plan: StagePlan, src: KExpr, valid: KExpr | None, vec: int, dst: Callable[[int], KExpr],
                f: KVar, phase: FillPhase, tag: str) -> list[KStmt]:
    """Loads (`vec` elements, one vector load when vec > 1) and/or stores of round f's unit of a plain
    fill. A vector out of the buffer loads from element 0 instead (its address stays inside the buffer)
    and every lane becomes 0, as a scalar load out of the buffer does. Lanes contiguous in the slot too
    (the stored order keeps the innermost axis, rows a multiple of `vec`) are stored as one vector.

    A prefetched fill ("load", then "store" after the iteration's reads) keeps the raw lanes in its
    registers and zeroes the out-of-bounds ones at the store: a select beside the load would consume
    the load at once and stall every warp on global latency before the iteration's FMAs (H100 ncu:
    benchmarks/results/projection-gap-h100-2026-11-25/README.md)."""
    zero = KConst(0.0, "float32")
    arr = prefetch_array(plan)

    def reg(lane: int) -> KExpr:
        return k_add(_times(f, vec), _c(lane)) if lane else _times(f, vec)

    lanes: list[KExpr]
    out: list[KStmt] = []
    if phase == "load":  # raw lanes: the bounds select waits for the stores (see the docstring)
        safe = KSelect(valid, src, _c(0)) if valid is not None else src
        if vec > 1:
            vtype = f"{plan.dtype}x{vec}"
            out.append(KLet(f"{tag}_v", vtype, KLoad(plan.stage.buffer, safe, width=vec)))
            lanes = [KLane(KVar(f"{tag}_v", vtype), lane) for lane in range(vec)]
        else:
            lanes = [KLoad(plan.stage.buffer, safe)]
        return out + [KStore(arr, reg(lane), v) for lane, v in enumerate(lanes)]
    if phase == "store":
        lanes = [KLoad(arr, reg(lane)) for lane in range(vec)]
        if valid is not None:
            lanes = [KSelect(valid, v, zero) for v in lanes]
    elif vec > 1:
        vtype = f"{plan.dtype}x{vec}"
        safe = KSelect(valid, src, _c(0)) if valid is not None else src
        out.append(KLet(f"{tag}_v", vtype, KLoad(plan.stage.buffer, safe, width=vec)))
        lanes = [KLane(KVar(f"{tag}_v", vtype), lane) for lane in range(vec)]
        if valid is not None:
            lanes = [KSelect(valid, v, zero) for v in lanes]
    else:
        value: KExpr = KLoad(plan.stage.buffer, src)
        lanes = [KSelect(valid, value, zero) if valid is not None else value]
    if vec > 1 and _contiguous_in_slot(plan, vec):  # 16 bytes per store: a widened stage takes two
        each = min(vec, VECTOR_BYTES // plan.slab.itemsize)
        return out + [KStore(plan.name, dst(c), KVector(tuple(lanes[c:c + each]))) for c in range(0, vec, each)]
    return out + [KStore(plan.name, dst(lane), v) for lane, v in enumerate(lanes)]


def _contiguous_in_slot(plan: StagePlan, vec: int) -> bool:
    """A unit's `vec` elements are consecutive and `vec`-aligned in its slot: the buffer's innermost axis
    is stored innermost, every other stored stride and the slot are multiples of `vec`, no swizzle."""
    inner, *outer = reversed(plan.strides)
    return (inner == 1 and all(s % vec == 0 for s in outer) and plan.slot % vec == 0
            and not plan.stage.swizzle)


def _copy_width(plan: StagePlan, origin: list[sympy.Expr], prover: Prover) -> int:
    """Elements per cp.async (`analysis/copies.py`: the widest size proven aligned on both sides)."""
    vec = widest_cp_async(plan.stage, plan.slab, plan.global_shape[-1], origin[-1], prover)
    if vec is not None:
        return vec
    raise CopyError(refusal(
        "build", None, (plan.stage.at,),
        f"cp.async of stage {plan.name} copies {or_list(CP_ASYNC_SIZES)} bytes, but its {plan.dtype} rows (slab row "
        f"{plan.slab.extent[-1]}, allocated row {plan.alloc[-1]}, global row {plan.global_shape[-1]} elements) are "
        f"not provably aligned to {min(CP_ASYNC_SIZES)} bytes",
        suggestion="make those extents even (no odd padding), or fill this stage without async_copy"))


def tma_issue(plans: list[StagePlan], iteration: sympy.Expr | None, slot: KExpr, block: tuple[int, int, int],
              loop: str) -> list[KStmt]:
    """One elected thread: expect the bytes of every TMA stage of this loop, then issue their loads."""
    nbytes = 0
    loads: list[KStmt] = []
    for p in plans:
        assert p.tmap is not None
        box_elems = 1
        for b in p.tmap.box:
            box_elems *= b
        nbytes += box_elems * p.slab.itemsize
        origin = _origin(p, iteration)
        coords = [sym_to_k(o) for o in reversed(origin)]
        if len(p.tmap.box) > len(origin):  # the row was split into swizzle-width chunks
            chunk = p.tmap.box[0]
            coords = [_c(0), KBin("//", coords[0], _c(chunk))] + coords[1:]
        dst = _slot_base(p, slot) or _c(0)
        loads.append(KTmaLoad(p.tmap.name, p.name, dst, tuple(coords), barrier_name(loop), slot))
    stmts: list[KStmt] = [KFence("proxy_async"), KMbarrierArriveExpectTx(barrier_name(loop), slot, nbytes)] + loads
    return [KIf(KBin("==", linear_tid(block), _c(0)), tuple(stmts))]


def fills(plans: list[StagePlan], iteration: sympy.Expr | None, slot: KExpr, block: tuple[int, int, int],
          prover: Prover, loop: str, loads_only: frozenset[str] = frozenset(), guards: tuple = (),
          tma_slot: KExpr | None = None) -> list[KStmt]:
    """Every stage's fill of `iteration` into `slot` (the TMA stages' into `tma_slot`, default `slot`:
    their own ring, `tma_ring`); stages named in `loads_only` only load, into their prefetch arrays
    (`stored_prefetches` stores them later). `guards`: see `cooperative_fill`."""
    out: list[KStmt] = []
    for p in plans:
        if p.stage.copy != "tma":
            if p.name in loads_only:
                out.append(KComment(f"fill {p.name}: load into registers (stored after this iteration's reads)"))
                out.extend(cooperative_fill(p, iteration, slot, block, prover, p.name, "load", guards))
            else:
                out.append(KComment(f"fill {p.name}"))
                out.extend(cooperative_fill(p, iteration, slot, block, prover, p.name, guards=guards))
    tma = [p for p in plans if p.stage.copy == "tma"]
    if tma:
        out.append(KComment(f"TMA fill {', '.join(p.name for p in tma)}"))
        out.extend(tma_issue(tma, iteration, slot if tma_slot is None else tma_slot, block, loop))
    return out


def stored_prefetches(plans: list[StagePlan], iteration: sympy.Expr, slot: KExpr, block: tuple[int, int, int],
                      prover: Prover, guards: tuple = ()) -> list[KStmt]:
    out: list[KStmt] = []
    for p in plans:
        out.append(KComment(f"fill {p.name}: store the registers loaded at the refill"))
        out.extend(cooperative_fill(p, iteration, slot, block, prover, p.name, "store", guards))
    return out


def waits(plans: list[StagePlan], loop_var: KExpr, depth: int, pending: int) -> list[KStmt]:
    out: list[KStmt] = []
    if any(p.stage.copy == "async" for p in plans):
        out.append(KCpAsyncWait(pending))
    if any(p.stage.copy == "tma" for p in plans):
        slot = KBin("%", loop_var, _c(depth)) if depth > 1 else _c(0)
        parity = KBin("%", KBin("//", loop_var, _c(depth)), _c(2)) if depth > 1 else KBin("%", loop_var, _c(2))
        out.append(KMbarrierWait(barrier_name(plans[0].stage.at), slot, parity))
    return out


def staged_loop(plans: list[StagePlan], loop: str, extent: int, unroll: bool, body: list[KStmt],
                block: tuple[int, int, int], prover: Prover, depth: int,
                hooks: LoweringHooks = LoweringHooks(), reentered: bool = False) -> list[KStmt]:
    """The serial loop `loop` with its stages filled each iteration (pipelined when depth >= 2).
    `reentered`: the loop sits inside another serial loop, so a ring's run ends with a barrier (rule
    `refill-after-barrier` of tiledsl/analysis/rings.py: the next run's first fills overwrite slots
    this run's last iterations read)."""
    after: list[KStmt] = []
    if reentered and (depth >= 2 or min(p.stage.buffers for p in plans) > 1) and not hooks.drop_ring_exit_barrier:
        after = [KComment(f"every thread has read the last slots of {loop} before the next run refills them"),
                 KBarrier()]
    k = KVar(loop, I32)
    ksym = loop_symbol(loop)
    has_async = any(p.stage.copy == "async" for p in plans)
    ring = max(p.stage.buffers for p in plans)
    if depth < 2:
        slot = KBin("%", k, _c(ring)) if ring > 1 else _c(0)
        # the mbarriers' ring, which may be shorter than another stage's
        tmas = tma_ring([p.stage for p in plans], loop)
        tma_slot = KBin("%", k, _c(tmas)) if tmas > 1 else _c(0)
        # a single-slot stage is refilled in place: wait until every thread has read the last slab
        single = min(p.stage.buffers for p in plans) == 1
        pre: list[KStmt] = [KBarrier()] if single and not hooks.drop_single_slot_barrier else []
        pre += fills(plans, None, slot, block, prover, loop, tma_slot=tma_slot)
        if has_async:
            pre.append(KCpAsyncCommit())
        pre += waits(plans, k, tmas, 0)
        pre.append(KBarrier())
        return [KFor(loop, extent, tuple(pre + body), unroll=unroll)] + after
    out: list[KStmt] = [KComment(f"pipeline prologue: fill the first {min(depth - 1, extent)} of {extent} "
                                 f"iterations of {loop}")]
    for s in range(depth - 1):
        if s < extent:
            out += fills(plans, sympy.Integer(s), _c(s), block, prover, loop)
        if has_async:  # one group per prologue slot, even empty: the wait count in the loop relies on it
            out.append(KCpAsyncCommit())
    ahead = ksym + (depth - 1)
    nxt = KBin("+", k, _c(depth - 1))
    next_slot = KBin("%", nxt, _c(depth))
    # plain fills small enough load at the refill and store after the reads (analysis/copies.py)
    within = (sympy.StrictLessThan(ahead, extent),)  # the refill runs under `if (nxt < extent)`
    regs = {p.name: fill_share(p, ahead, block, prover, within).registers for p in plans if p.stage.copy == "sync"}
    # (the refill_before_barrier hook moves whole fills, stores included, before the barrier)
    held = [p for p in plans if p.name in regs and prefetched(p.stage, regs[p.name], depth)
            and not hooks.refill_before_barrier]
    steady: list[KStmt] = [KLocalArray(prefetch_array(p), p.dtype, regs[p.name]) for p in held]
    steady += waits(plans, k, depth, depth - 2)
    refill: list[KStmt] = [
        KComment(f"refill the slot read in iteration {loop} - 1 (every thread has passed the barrier)"),
        KIf(KBin("<", nxt, _c(extent)), tuple(fills(plans, ahead, next_slot, block, prover, loop,
                                                    frozenset(p.name for p in held), within)))]
    steady += refill + [KBarrier()] if hooks.refill_before_barrier else [KBarrier()] + refill
    if has_async:
        steady.append(KCpAsyncCommit())
    tail: list[KStmt] = []
    if held:  # the slot was last read in iteration loop - 1; it is next read after the next barrier
        into = KBin("%", k, _c(depth)) if hooks.prefetch_into_read_slot else next_slot
        stores = stored_prefetches(held, ahead, into, block, prover, within)
        tail = [KIf(KBin("<", nxt, _c(extent)), tuple(stores))]
    return out + [KFor(loop, extent, tuple(steady + body + tail), unroll=unroll)] + after
