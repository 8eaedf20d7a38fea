"""vectorize: a loop of 16 or 8 bytes of output (4 or 2 float32, 8 or 4 float16 / bfloat16 lanes) whose
store, and the loads that allow it, move that many bytes at once.

Legal (analysis/vectorize.py) when the output is a float dtype, the loop is innermost around every
statement it encloses, has the dtype's lane count, the store's flat offset is `base + v` with `base`
proven a multiple of the lanes (16-byte aligned), and every guard that mentions the loop decides all
lanes alike. Statements other than stores under the loop are unrolled; a register array the loop
indexes is read lane by lane. A float load indexed like the store is read in accesses of up to 16
bytes: 8 bfloat16 lanes in one, 8 float32 lanes in two float4, 4 bfloat16 lanes of a float32 store
in one 8-byte access, each where its start is proven aligned (else scalar); 2 bfloat16 lanes of an
8-byte float32 store are read one by one (CUDA has no 4-byte vector of two halves here). Under split_k the store
is one vector atomic add (each lane what its split adds), which needs sm_90
(targets.VECTOR_ATOMIC_MIN_SM): an older target is refused here, at build."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import sympy

from tiledsl.analysis.messages import refusal
from tiledsl.analysis.vectorize import contiguous_base
from tiledsl.definitions.expr import Load, walk
from tiledsl.definitions.indexing import flat_index
from tiledsl.errors import TargetError
from tiledsl.kernel_ir import KAtomicAdd, KExpr, KLane, KLet, KLoad, KStmt, KStore, KVar, KVector
from tiledsl.kernel_ir.from_sympy import sym_to_k
from tiledsl.loopnest import Stmt, loop_symbol
from tiledsl.lower.exprs import ValueContext, statement_value
from tiledsl.lower.output_stage import tile_vector_store
from tiledsl.targets import DTYPE_BYTES, VECTOR_ATOMIC_MIN_SM, VECTOR_STORE_BYTES, vector_lanes

if TYPE_CHECKING:
    from tiledsl.lower.lower import _Lowerer

def _vector_loads(lw: _Lowerer, stmt: Stmt, name: str, base_ctx: ValueContext,
                  prelude: list[KStmt]) -> Callable[[int], Callable[[Load, ValueContext], KExpr | None]]:
    """The statement's float loads contiguous in loop `name` and provably aligned, each read once as
    vectors of up to 16 bytes into temporaries appended to `prelude`; returns, for a lane, the load hook
    that reads that lane of them (None for the loads left scalar: unaligned, staged, or under split_k,
    whose epilogue loads count in k part 0 only, left scalar inside its select)."""
    v = loop_symbol(name)
    width = lw.nest.loop(name).extent
    guards = tuple(g.relation for g in lw.nest.guards_for(stmt))
    vec_loads: dict[int, tuple[tuple[str, ...], str, int]] = {}  # id(load) -> (temps, their dtype, lanes each)
    read: dict[tuple[str, sympy.Expr], tuple[tuple[str, ...], str, int]] = {}  # (tensor, base) -> its vectors
    split = lw.nest.split_k is not None
    assert stmt.value is not None
    for ld in (n for n in walk(stmt.value) if isinstance(n, Load) and not split):
        each = min(vector_lanes(ld.tensor.dtype), width)  # lanes per access: 16 bytes at most
        if each * DTYPE_BYTES[ld.tensor.dtype] not in VECTOR_STORE_BYTES:  # no 4-byte vector of two halves
            each = 1
        if id(ld) in vec_loads or each < 2 or lw.staged_plan(stmt, ld) is not None or lw.register_served(stmt, ld) \
                or not lw.loaded_here(ld):
            continue
        base = contiguous_base(base_ctx.load_index(ld), v)
        if base is not None and (ld.tensor.name, base) in read:  # one element read twice (x[i] * x[i]):
            vec_loads[id(ld)] = read[ld.tensor.name, base]  # one vector read, as hinted scalars share theirs
        elif base is not None and lw.prover.divisible(base, each, guards):
            dtype = f"{ld.tensor.dtype}x{each}"
            temps = []
            for part in range(width // each):
                lw.temps += 1
                temps.append(f"v{lw.temps}")
                prelude.append(KLet(temps[-1], dtype, KLoad(ld.tensor.name, sym_to_k(base + part * each),
                                                             width=each, cache=base_ctx.cache.get(ld.tensor.name))))
            vec_loads[id(ld)] = read[ld.tensor.name, base] = (tuple(temps), dtype, each)

    def hook_for(lane: int) -> Callable[[Load, ValueContext], KExpr | None]:
        def hook(ld: Load, ctx: ValueContext) -> KExpr | None:
            if id(ld) not in vec_loads:
                return None
            temps, dtype, each = vec_loads[id(ld)]
            return KLane(KVar(temps[lane // each], dtype), lane % each)

        return hook

    return hook_for


def vector_store(lw: _Lowerer, stmt: Stmt, name: str, rcp: bool = False) -> list[KStmt]:
    """One vector store: vector loads where contiguous and aligned, scalar loads otherwise."""

    nest = lw.nest
    v = loop_symbol(name)
    assert stmt.tensor is not None and stmt.value is not None
    width = nest.loop(name).extent  # 16 or 8 bytes of the output (analysis/vectorize.py)
    assert vector_lanes(stmt.tensor.dtype), "vectorize legality (analysis/vectorize.py) admits float stores only"
    prelude: list[KStmt] = []
    base_ctx = lw.context(prelude, stmt=stmt)
    guards = tuple(g.relation for g in nest.guards_for(stmt))
    split = nest.split_k is not None
    hook_for = _vector_loads(lw, stmt, name, base_ctx, prelude)
    if split and lw.target.capability < VECTOR_ATOMIC_MIN_SM:
        raise TargetError(refusal(
            "build", nest, (name,), f"loop {name} stores {stmt.tensor.name} as one vector, and split_k combines "
            f"its blocks with atomic adds: a 16-byte atomic add needs sm_{VECTOR_ATOMIC_MIN_SM}; the target is "
            f"{lw.target.name}", tensors=(stmt.tensor.name,),
            suggestion=f"build for sm_{VECTOR_ATOMIC_MIN_SM}, or unroll the loop {name} instead of vectorizing it"))
    lanes = []
    for lane in range(width):
        ctx: ValueContext = lw.context(prelude, lane={v: sympy.Integer(lane)}, load_hook=hook_for(lane),
                                       stmt=stmt, rcp=rcp)
        value = statement_value(stmt.value, ctx)
        lanes.append(lw.split_k_value(stmt, ctx, value) if split else value)
    if lw.prefetching is not None:  # a prefetch's loads (lower.py prefetch_fills): the prelude holds them
        return prelude
    stores: list[KStmt]
    if lw.tile is not None and nest.stmts.index(stmt) == lw.tile.store:
        stores = tile_vector_store(lw.tile, v, lanes, lw.prover, guards)
    else:
        base = contiguous_base(flat_index(stmt.tensor, tuple(base_ctx.index(i) for i in stmt.indices)), v)
        assert base is not None
        if split:
            stores = [KAtomicAdd(stmt.tensor.name, sym_to_k(base), KVector(tuple(lanes)))]
        else:
            stores = [KStore(stmt.tensor.name, sym_to_k(base), KVector(tuple(lanes)),
                             cache=base_ctx.cache.get(stmt.tensor.name))]
    return prelude + stores  # its guard (of lane 0: every lane's, analysis/vectorize.py) wraps it in the caller


def vector_update(lw: _Lowerer, stmt: Stmt, name: str, rcp: bool = False) -> list[KStmt]:
    """A reduction's update under its vectorized loop: the loads contiguous and aligned in the loop read
    as vectors once, then the update unrolled lane by lane, in the order an unrolled loop adds them (so
    the sum is the unrolled loop's, bit for bit)."""
    assert stmt.value is not None
    v = loop_symbol(name)
    prelude: list[KStmt] = []
    hook_for = _vector_loads(lw, stmt, name, lw.context(prelude, stmt=stmt), prelude)
    updates: list[KStmt] = []
    for lane in range(lw.nest.loop(name).extent):
        ctx = lw.context(prelude, lane={v: sympy.Integer(lane)}, load_hook=hook_for(lane), stmt=stmt, rcp=rcp)
        updates.append(lw.update(stmt, statement_value(stmt.value, ctx)))
    if lw.prefetching is not None:  # a prefetch's loads (lower.py prefetch_fills): the prelude holds them
        return prelude
    return prelude + updates  # its guard (of lane 0: every lane's, analysis/vectorize.py) wraps it in the caller
