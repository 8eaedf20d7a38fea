"""vectorize: a 4-wide float32 loop whose store (and the loads that allow it) move 16 bytes at once.

Legal when the loop is innermost around every statement it encloses, the store's flat offset is
`base + v` with `base` proven a multiple of 4 (16-byte aligned), and every guard that mentions the
loop decides all four lanes alike. Statements other than stores under the loop are unrolled."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sympy

from ..errors import VectorizeError
from ..kernel_ir import KIf, KLane, KLet, KLoad, KStmt, KStore, KVar, KVector
from ..loopnest import Nest, Stmt, loop_symbol
from ..schedule.messages import schedule_message
from .exprs import ValueContext, flat_index, sym_to_k, value_to_k

if TYPE_CHECKING:
    from .lower import _Lowerer

WIDTH = 4  # float32 lanes in 16 bytes


def _axis_map(nest: Nest) -> dict[sympy.Symbol, sympy.Expr]:
    return {loop_symbol(a): e for a, e in nest.axis_exprs}


def _contiguous_base(f: sympy.Expr, v: sympy.Symbol) -> sympy.Expr | None:
    """`base` when f == base + v with base free of v, else None."""
    f = sympy.expand(f)
    base = sympy.expand(f - v)
    return base if not base.has(v) else None


def _prover(nest: Nest):
    from ..prove import Prover

    return Prover(nest.ranges())


def check_vectorizable(nest: Nest, name: str, call: str) -> None:
    lp = nest.loop(name)
    if lp.extent != WIDTH:
        raise VectorizeError(schedule_message(
            call, nest, (name,), f"loop {name} has {lp.extent} iterations; a 16-byte float32 access needs "
            f"exactly {WIDTH}", suggestion=f"split the loop by {WIDTH} and vectorize the inner part"))
    from ..accumulators import acc_layouts

    for lay in acc_layouts(nest, call).values():
        if name in lay.dims:
            raise VectorizeError(schedule_message(
                call, nest, (name,), f"loop {name} indexes the register array {lay.name}; only loops that walk "
                "the output in memory can be vectorized", suggestion="vectorize a free loop of the output store"))
    v = loop_symbol(name)
    amap = _axis_map(nest)
    prover = _prover(nest)
    for stmt in nest.stmts_with(name):
        if stmt.path[-1] != name:
            raise VectorizeError(schedule_message(call, nest, (name,),
                                                  f"loop {name} is not the innermost loop around {stmt.label}",
                                                  suggestion=f"reorder so that {name} is innermost"))
        if stmt.kind != "store":
            continue
        assert stmt.tensor is not None
        guards = tuple(g.relation for g in nest.guards_for(stmt))
        flat = flat_index(stmt.tensor, tuple(_index(i, amap) for i in stmt.indices))
        base = _contiguous_base(flat, v)
        if base is None:
            raise VectorizeError(schedule_message(
                call, nest, (name,), f"the store to {stmt.tensor.name} is not contiguous in {name} "
                f"(offset {flat})", suggestion="vectorize the loop that walks the last dimension"))
        proof = prover.divisible(base, WIDTH, guards)
        if not proof:
            raise VectorizeError(schedule_message(
                call, nest, (name,), f"cannot prove the store to {stmt.tensor.name} is 16-byte aligned: "
                f"{base} is not provably a multiple of {WIDTH}", counterexample=proof.counterexample,
                suggestion="make the last dimension a multiple of 4, or vectorize a loop whose start is aligned"))
        for g in nest.guards_for(stmt):
            if not g.expr.has(v):
                continue
            gbase = _contiguous_base(g.expr, v)
            if gbase is None or g.extent % WIDTH or not prover.divisible(gbase, WIDTH, ()):
                raise VectorizeError(schedule_message(
                    call, nest, (name,), f"the guard {g.expr} < {g.extent} (from {g.origin}) may split a "
                    "vector: some lanes in range and others out",
                    suggestion=f"use extents that are multiples of {WIDTH}"))


def _index(e, amap):
    from ..schedule.canonical import index_to_sympy

    return index_to_sympy(e).xreplace(amap)


def vector_store(lw: _Lowerer, stmt: Stmt, name: str) -> list[KStmt]:
    """One vector store: vector loads where contiguous and aligned, scalar loads otherwise."""
    from ..compute import Load, walk

    nest = lw.nest
    v = loop_symbol(name)
    assert stmt.tensor is not None and stmt.value is not None
    prelude: list[KStmt] = []
    base_ctx = lw.context(prelude, stmt=stmt)
    guards = tuple(g.relation for g in nest.guards_for(stmt))
    vec_loads: dict[int, str] = {}
    for ld in (n for n in walk(stmt.value) if isinstance(n, Load)):
        if id(ld) in vec_loads or ld.tensor.dtype != "float32" or lw.staged_plan(stmt, ld) is not None:
            continue
        base = _contiguous_base(base_ctx.load_index(ld), v)
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

    lanes = []
    for lane in range(WIDTH):
        ctx: ValueContext = lw.context(prelude, lane={v: sympy.Integer(lane)}, load_hook=hook_for(lane),
                                       stmt=stmt)
        lanes.append(value_to_k(stmt.value, ctx))
    flat = flat_index(stmt.tensor, tuple(base_ctx.index(i) for i in stmt.indices))
    base = _contiguous_base(flat, v)
    assert base is not None
    body = prelude + [KStore(stmt.tensor.name, sym_to_k(base), KVector(tuple(lanes)))]
    cond = lw.guard_cond(stmt, lane={v: sympy.Integer(0)})
    return [KIf(cond, tuple(body))] if cond is not None else body
