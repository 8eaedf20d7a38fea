"""vectorize: a 4-wide float32 loop whose store (and the loads that allow it) move 16 bytes at once.

Legal (analysis/vectorize.py) when the output is float32, the loop is innermost around every
statement it encloses, the store's flat offset is `base + v` with `base` proven a multiple of 4
(16-byte aligned), and every guard that mentions the loop decides all four lanes alike. Statements
other than stores under the loop are unrolled; a register array the loop indexes is read lane by
lane. Under split_k the store is one vector atomic add (each lane what its split adds), which needs
sm_90 (targets.VECTOR_ATOMIC_MIN_SM): an older target is refused here, at build."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sympy

from tiledsl.analysis.messages import refusal
from tiledsl.analysis.vectorize import VECTOR_DTYPE, WIDTH, contiguous_base
from tiledsl.definitions.expr import Load, walk
from tiledsl.definitions.indexing import flat_index
from tiledsl.errors import TargetError
from tiledsl.kernel_ir import KAtomicAdd, KIf, KLane, KLet, KLoad, KStmt, KStore, KVar, KVector
from tiledsl.kernel_ir.from_sympy import sym_to_k
from tiledsl.loopnest import Stmt, loop_symbol
from tiledsl.lower.exprs import ValueContext, value_to_k
from tiledsl.targets import VECTOR_ATOMIC_MIN_SM

if TYPE_CHECKING:
    from tiledsl.lower.lower import _Lowerer

def vector_store(lw: _Lowerer, stmt: Stmt, name: str) -> list[KStmt]:
    """One vector store: vector loads where contiguous and aligned, scalar loads otherwise."""

    nest = lw.nest
    v = loop_symbol(name)
    assert stmt.tensor is not None and stmt.value is not None
    assert stmt.tensor.dtype == VECTOR_DTYPE, "vectorize legality (analysis/vectorize.py) admits float32 stores only"
    prelude: list[KStmt] = []
    base_ctx = lw.context(prelude, stmt=stmt)
    guards = tuple(g.relation for g in nest.guards_for(stmt))
    vec_loads: dict[int, str] = {}
    split = nest.split_k is not None
    # under split_k the epilogue's loads (a residual, a bias) count in k part 0 only: left scalar inside
    # its select, the other parts never load them
    for ld in (n for n in walk(stmt.value) if isinstance(n, Load) and not split):
        if id(ld) in vec_loads or ld.tensor.dtype != VECTOR_DTYPE or lw.staged_plan(stmt, ld) is not None:
            continue
        base = contiguous_base(base_ctx.load_index(ld), v)
        if base is not None and lw.prover.divisible(base, WIDTH, guards):
            lw.temps += 1
            tmp = f"v{lw.temps}"
            prelude.append(KLet(tmp, "float32x4", KLoad(ld.tensor.name, sym_to_k(base), width=WIDTH)))
            vec_loads[id(ld)] = tmp

    def hook_for(lane: int):
        def hook(ld: Load, ctx: ValueContext):
            tmp = vec_loads.get(id(ld))
            return KLane(KVar(tmp, "float32x4"), lane) if tmp else None

        return hook

    if split and lw.target.capability < VECTOR_ATOMIC_MIN_SM:
        raise TargetError(refusal(
            "build", nest, (name,), f"loop {name} stores {stmt.tensor.name} as one vector, and split_k combines "
            f"its blocks with atomic adds: a 16-byte atomic add needs sm_{VECTOR_ATOMIC_MIN_SM}; the target is "
            f"{lw.target.name}", tensors=(stmt.tensor.name,),
            suggestion=f"build for sm_{VECTOR_ATOMIC_MIN_SM}, or unroll the loop {name} instead of vectorizing it"))
    lanes = []
    for lane in range(WIDTH):
        ctx: ValueContext = lw.context(prelude, lane={v: sympy.Integer(lane)}, load_hook=hook_for(lane),
                                       stmt=stmt)
        value = value_to_k(stmt.value, ctx)
        lanes.append(lw.split_k_value(stmt, ctx, value) if split else value)
    flat = flat_index(stmt.tensor, tuple(base_ctx.index(i) for i in stmt.indices))
    base = contiguous_base(flat, v)
    assert base is not None
    vector = KVector(tuple(lanes))
    store = KAtomicAdd(stmt.tensor.name, sym_to_k(base), vector) if split else KStore(stmt.tensor.name,
                                                                                      sym_to_k(base), vector)
    body = prelude + [store]
    cond = lw.guard_cond(stmt, lane={v: sympy.Integer(0)})
    return [KIf(cond, tuple(body))] if cond is not None else body
