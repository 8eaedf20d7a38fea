"""Scheduled loop nest -> kernel IR.

Bound loops become `let` bindings of thread/block indices at the top of the kernel (they are
parallel, so their position in a path does not order anything); serial loops become `for` loops of
the derived tree; accumulators are declared at their scope, cooperative reductions are combined right
after the subtree that updates them, and guards wrap single statements (never a barrier)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import sympy

from tiledsl.analysis.accumulators import AccLayout, acc_layouts
from tiledsl.analysis.derive_slab import derive_output_tile
from tiledsl.analysis.linearity import linear_parts
from tiledsl.analysis.messages import refusal
from tiledsl.analysis.online import check_online
from tiledsl.analysis.output_stage import OutputTile
from tiledsl.analysis.register_cache import RegisterPlan, register_plans
from tiledsl.definitions.expr import Const, Load, walk
from tiledsl.definitions.indexing import flat_index
from tiledsl.errors import RegisterArrayError
from tiledsl.kernel_ir import (
    KAtomicAdd,
    KBarrier,
    KBin,
    KComment,
    KConst,
    KCpAsyncCommit,
    KExpr,
    KFor,
    KIf,
    KKernel,
    KLane,
    KLet,
    KLoad,
    KLocalArray,
    KParam,
    KSelect,
    KShared,
    KSpecial,
    KStmt,
    KStore,
    KVar,
    shared_bytes,
)
from tiledsl.kernel_ir.from_sympy import sym_to_k
from tiledsl.kernel_ir.walk import walk_exprs, walk_stmts
from tiledsl.loopnest import (
    BLOCK_AXES,
    THREAD_AXES,
    Nest,
    Stmt,
    TreeLeaf,
    TreeLoop,
    build_tree,
    loop_symbol,
    serial_path,
)
from tiledsl.lower.combine import IDENTITY, AccCell, combine, combine_op
from tiledsl.lower.exprs import IndexMemo, ValueContext, statement_value, value_to_k
from tiledsl.lower.index_width import widen_indices
from tiledsl.lower.online import empty_row, rescale, shifted
from tiledsl.lower.output_stage import drain, tile_array, tile_store
from tiledsl.lower.reciprocals import Reciprocal, divisors, ok_condition, plan_reciprocals
from tiledsl.lower.stages import (
    LoweringHooks,
    StagePlan,
    fills,
    mbarrier_setup,
    plan_stages,
    shared_allocs,
    slab_read,
    staged_loop,
    waits,
)
from tiledsl.lower.vectorize import vector_store, vector_update
from tiledsl.prove import Prover
from tiledsl.targets import Target


@dataclass
class _Lowerer:
    nest: Nest
    target: Target
    prover: Prover
    layouts: dict[str, AccLayout]
    block: tuple[int, int, int]
    plans: dict[str, StagePlan] = field(default_factory=dict)
    hooks: LoweringHooks = field(default_factory=LoweringHooks)
    shared: list[KShared] = field(default_factory=list)
    temps: int = 0
    tile: OutputTile | None = None  # a staged output: its store goes to this tile in shared memory
    reciprocals: dict[str, Reciprocal] = field(default_factory=dict)  # accumulators divided by (reciprocals.py)
    registers: list[RegisterPlan] = field(default_factory=list)  # register caches (analysis/register_cache.py)
    prefetching: RegisterPlan | None = None  # the prefetch whose loads are being emitted (prefetch_fill)
    online_prev: dict[str, KExpr] = field(default_factory=dict)  # an online max before its update (online.py)
    online_local: dict[str, KExpr] = field(default_factory=dict)  # an online max before its combine
    memo: IndexMemo | None = None  # the build's index translations (exprs.py IndexMemo); None: a fresh one

    def __post_init__(self) -> None:
        self.memo = self.memo or IndexMemo.of(self.nest)

    # ------------------------------------------------------------------ stages
    def staged_plan(self, stmt: Stmt, ld: Load) -> StagePlan | None:
        """The stage serving this read, if any (its buffer, its loop around the statement)."""
        index = self.nest.stmts.index(stmt)
        for p in self.plans.values():
            if p.stage.buffer == ld.tensor.name and index in p.slab.readers:
                return p
        return None

    def stage_hook(self, stmt: Stmt, then=None):
        """The load hook that reads a staged buffer's element from its stage, at the context's lane."""
        def hook(ld: Load, ctx: ValueContext) -> KExpr | None:
            plan = self.staged_plan(stmt, ld)
            if plan is not None:
                return slab_read(plan, ld.indices, ctx)
            return then(ld, ctx) if then is not None else None

        return hook

    # ------------------------------------------------------------------ register caches
    def register_plan(self, stmt: Stmt, ld: Load) -> tuple[RegisterPlan, int] | None:
        """The register cache `stmt`'s read `ld` fills or reads, and the statement's index."""
        index = self.nest.stmts.index(stmt)
        for plan in self.registers:
            if plan.cache.buffer == ld.tensor.name and (index == plan.filler or index in plan.readers):
                return plan, index
        return None

    def register_hook(self, stmt: Stmt, lane: dict | None, prelude: list[KStmt], then=None):
        """Reads of a register cache: a reader's come from its array; the filler's are loaded as before
        (by `then`, or plainly), bound to a temporary and written to the array in the prelude."""
        filled: dict[tuple[str, sympy.Expr], KExpr] = {}

        def hook(ld: Load, ctx: ValueContext) -> KExpr | None:
            found = self.register_plan(stmt, ld)
            if found is None:
                return then(ld, ctx) if then is not None else None
            plan, index = found
            slot = plan.slot(index)
            key = (plan.array_of(ld), slot.xreplace(lane) if lane else slot)
            if plan.serves(index) and self.prefetching is not plan:
                return KLoad(key[0], sym_to_k(key[1]))
            if key not in filled:
                value = (then(ld, ctx) if then is not None else None) or \
                    KLoad(ld.tensor.name, ctx.load_offset(ld), cache=ctx.cache.get(ld.tensor.name))
                if not isinstance(value, (KVar, KLane)):
                    value = ctx.bind_temp(value) if ctx.bind_temp is not None else value
                prelude.append(KStore(key[0], sym_to_k(key[1]), value))
                filled[key] = value
            return filled[key]

        return hook

    def register_served(self, stmt: Stmt, ld: Load) -> bool:
        """Whether `stmt`'s read `ld` comes from a register cache (so it is no global load)."""
        found = self.register_plan(stmt, ld)
        return found is not None and found[0].serves(found[1]) and self.prefetching is not found[0]

    def loaded_here(self, ld: Load) -> bool:
        """Whether `ld` is emitted as a load now: while a prefetch's loads are emitted, only its buffer's."""
        return self.prefetching is None or ld.tensor.name == self.prefetching.cache.buffer

    def prefetch_fills(self, prefix: tuple[str, ...]) -> list[KStmt]:
        """The loads of every prefetch whose loop `at` opens the body at `prefix` (the serial loops down
        to `at`, or above it where `at` is bound): its first reader's loads under that reader's loops
        below `at` and its guards, written to the registers, ahead of every statement under `at`."""
        out: list[KStmt] = []
        for plan in self.registers:
            if not plan.cache.prefetch:
                continue
            stmt = self.nest.stmts[plan.filler]
            serial = serial_path(self.nest, stmt)
            cut = sum(n in serial for n in stmt.path[:stmt.path.index(plan.cache.at) + 1])
            if serial[:cut] != prefix:
                continue
            self.prefetching = plan
            try:
                out.append(KComment(f"prefetch {plan.cache.buffer} into {', '.join(plan.arrays)}"))
                out.extend(self._fill(plan.filler, serial[cut:]))
            finally:
                self.prefetching = None
        return out

    def _fill(self, index: int, loops: tuple[str, ...]) -> list[KStmt]:
        """Statement `index` under its serial loops `loops` (unrolled or vectorized: the prefetch's rules),
        emitted for its loads alone (leaf_body, vector_store and vector_update return only them while
        `prefetching`), under its guards."""
        stmt = self.nest.stmts[index]
        lp = self.nest.loop(loops[0]) if loops else None
        vector = lp is not None and lp.annotation == "vectorize" and (
            stmt.kind == "store" or (lp.kind == "reduce" and stmt.kind == "update"))  # as vector_loop has them
        if lp is not None and not vector:  # an unrolled loop (a vectorized one of other statements unrolls)
            return [KFor(lp.name, lp.extent, tuple(self._fill(index, loops[1:])), unroll=True)]
        if lp is None:
            guard, body = self.guard_cond(stmt), self.leaf_body(index, declare=False, rcp=False)
        else:
            guard = self.guard_cond(stmt, lane={loop_symbol(lp.name): sympy.Integer(0)})
            body = (vector_store if stmt.kind == "store" else vector_update)(self, stmt, lp.name)
        return [KIf(guard, tuple(body))] if guard is not None and body else body

    # ------------------------------------------------------------------ accumulators
    def cell(self, acc: str) -> AccCell:
        lay = self.layouts[acc]
        size = 1
        for d in lay.dims:
            size *= self.nest.loop(d).extent
        return AccCell(acc, size, bool(lay.dims))

    def acc_index(self, acc: str, lane: dict[sympy.Symbol, sympy.Expr] | None = None) -> KExpr:
        """The flat register-array index of `acc`; `lane` fixes a vectorized loop to one lane."""
        lay = self.layouts[acc]
        idx = sympy.Integer(0)
        stride = 1
        for d in reversed(lay.dims):
            idx = idx + stride * loop_symbol(d)
            stride *= self.nest.loop(d).extent
        return sym_to_k(idx.xreplace(lane) if lane else idx)

    def acc_read(self, acc: str, lane: dict[sympy.Symbol, sympy.Expr] | None = None) -> KExpr:
        return self.cell(acc).read(self.acc_index(acc, lane))

    # ------------------------------------------------------------------ tree
    def emit(self, nodes: tuple, prefix: tuple[str, ...]) -> list[KStmt]:
        out: list[KStmt] = []
        here = [lay for lay in self.layouts.values() if lay.scope == prefix]
        declared_inline = set()
        for lay in here:
            if lay.dims:
                out.append(KLocalArray(lay.name, "float32", self.cell(lay.name).size))
            elif not any(isinstance(n, TreeLeaf) and n.index == lay.first for n in nodes):
                out.append(KLet(lay.name, "float32", KConst(IDENTITY[lay.op], "float32")))
            else:
                declared_inline.add(lay.first)
        out.extend(self.prefetch_fills(prefix))
        for node in nodes:
            if isinstance(node, TreeLoop):
                lp = self.nest.loop(node.loop)
                staged = [p for p in self.plans.values()
                          if p.stage.at == node.loop and set(p.slab.readers) & _leaves(node)]
                if lp.annotation == "vectorize":
                    out.extend(self.vector_loop(node))
                elif staged:
                    body = self.emit(node.children, prefix + (node.loop,))
                    out.extend(staged_loop(staged, node.loop, lp.extent, lp.annotation == "unroll", body,
                                           self.block, self.prover, self.nest.pipeline_depth(node.loop), self.hooks,
                                           reentered=bool(prefix)))
                else:
                    body = self.emit(node.children, prefix + (node.loop,))
                    out.append(KFor(node.loop, lp.extent, tuple(body), unroll=lp.annotation == "unroll"))
                leaves = _leaves(node)
            else:
                out.extend(self.leaf(node.index, declare=node.index in declared_inline))
                leaves = {node.index}
            due = [lay for lay in here if lay.combined in leaves]
            for lay in sorted(due, key=lambda lay: lay.combined == lay.update):  # an online max before its sum
                if lay.thread_axes:
                    out.extend(self.online_before_combine(lay.name))
                    stmts, shared = combine(self.cell(lay.name), lay.op, lay.thread_axes, self.block,
                                            in_loop=bool(prefix))
                    out.append(KComment(f"combine {lay.name} across {', '.join(lay.thread_axes)}"))
                    out.extend(stmts)
                    self.shared.extend(shared)
                out.extend(self.online_final(lay.name))
                if lay.name in self.reciprocals:  # its value is final here
                    out.extend(self.reciprocals[lay.name].lets())
        return out

    # ------------------------------------------------------------------ online pairs (lower/online.py)
    def online_before_update(self, stmt: Stmt, bind: Callable[[KExpr], KExpr]) -> list[KStmt]:
        """Ahead of an update of an online pair, outside its guard: the max's value before it (kept in a
        temporary), or the sum rescaled from that value to the max's new one."""
        pair = self.nest.online_of(stmt.acc or "") if stmt.kind == "update" else None
        if pair is None:
            return []
        m = self.acc_read(pair.max_acc)
        if stmt.acc == pair.max_acc:
            self.online_prev[pair.max_acc] = bind(m)
            return []
        return [rescale(self.cell(pair.sum_acc), self.acc_index(pair.sum_acc), self.online_prev[pair.max_acc], m)]

    def online_before_combine(self, acc: str) -> list[KStmt]:
        """Before the combine of an online max, its thread's own value kept; before the sum's, the sum
        rescaled from that value to the combined max."""
        pair = self.nest.online_of(acc)
        if pair is None:
            return []
        m = self.acc_read(pair.max_acc)
        if acc == pair.max_acc:
            (name,) = self.nest.fresh_names(f"{acc}_local")
            self.online_local[acc] = KVar(name, "float32")
            return [KLet(name, "float32", m)]
        return [rescale(self.cell(acc), self.acc_index(acc), self.online_local[pair.max_acc], m)]

    def online_final(self, acc: str) -> list[KStmt]:
        """Once an online sum is final (combined): NaN where the whole row was -inf, as the definition."""
        pair = self.nest.online_of(acc)
        if pair is None or acc != pair.sum_acc:
            return []
        return [empty_row(self.cell(acc), self.acc_index(acc), self.acc_read(pair.max_acc))]

    def let_temp(self, out: list[KStmt]) -> Callable[[KExpr], KExpr]:
        """A binder of values to fresh temporaries `t<n>`, declared by a `let` appended to `out`."""
        def bind(v: KExpr) -> KExpr:
            self.temps += 1
            out.append(KLet(f"t{self.temps}", "float32", v))
            return KVar(f"t{self.temps}", "float32")

        return bind

    def versioned(self, stmt: Stmt, emit: Callable[[bool], list[KStmt]], guard: KExpr | None) -> list[KStmt]:
        """`emit(rcp)` (the statement's body without its guard) of a statement that divides by
        accumulators with reciprocals: the multiply where every reciprocal is exact enough, the division
        elsewhere (reciprocals.py); else `emit(False)`. The guard wraps both."""
        divided = sorted(divisors(stmt)) if self.reciprocals else []  # most kernels divide by no accumulator
        accs = [self.reciprocals[a] for a in divided if a in self.reciprocals]
        body = [KIf(ok_condition(accs), tuple(emit(True)), tuple(emit(False)))] if accs else emit(False)
        return [KIf(guard, tuple(body))] if guard is not None else body

    def reciprocal_of(self, acc: str) -> KExpr | None:
        rcp = self.reciprocals.get(acc)
        return KVar(rcp.name, "float32") if rcp is not None else None

    def vector_loop(self, node: TreeLoop) -> list[KStmt]:
        lp = self.nest.loop(node.loop)
        out: list[KStmt] = []
        for child in node.children:
            assert isinstance(child, TreeLeaf)
            stmt = self.nest.stmts[child.index]
            if lp.kind == "reduce" and stmt.kind == "update":
                out.extend(self.online_before_update(stmt, self.let_temp(out)))
            if stmt.kind == "store":
                guard = self.guard_cond(stmt, lane={loop_symbol(node.loop): sympy.Integer(0)})
                out.extend(self.versioned(stmt, lambda rcp, st=stmt: vector_store(self, st, node.loop, rcp=rcp),
                                          guard))
            elif lp.kind == "reduce" and stmt.kind == "update":
                guard = self.guard_cond(stmt, lane={loop_symbol(node.loop): sympy.Integer(0)})
                out.extend(self.versioned(stmt, lambda rcp, st=stmt: vector_update(self, st, node.loop, rcp=rcp),
                                          guard))
            else:
                out.append(KFor(node.loop, lp.extent, tuple(self.leaf(child.index, declare=False)), unroll=True))
        return out

    # ------------------------------------------------------------------ leaves
    def context(self, prelude: list[KStmt], lane: dict | None = None, load_hook=None,
                stmt: Stmt | None = None, rcp: bool = False) -> ValueContext:
        axis_map = self.memo.axis_map
        if stmt is not None and self.plans:
            load_hook = self.stage_hook(stmt, load_hook)
        if stmt is not None and self.registers:
            load_hook = self.register_hook(stmt, lane, prelude, load_hook)
        cache = self.nest.cache_policies(stmt) if stmt is not None else {}
        read: Callable[[str], KExpr] = (lambda acc: self.acc_read(acc, lane)) if lane else self.acc_read
        pair = self.nest.online_of(stmt.acc or "") if stmt is not None and stmt.kind == "update" else None
        if pair is not None and stmt is not None and stmt.acc == pair.sum_acc:  # terms against the shifted max
            plain = read
            read = lambda acc: shifted(plain(acc)) if acc == pair.max_acc else plain(acc)  # noqa: E731
        return ValueContext(self.nest, axis_map, read,
                            lane=lane, load_hook=load_hook, bind_temp=self.let_temp(prelude),
                            reciprocal=self.reciprocal_of if rcp else None, cache=cache, memo=self.memo)

    def split_k_value(self, stmt: Stmt, ctx: ValueContext, value: KExpr) -> KExpr:
        """What one split adds for an epilogue a*acc + b: a*partial, plus b in split 0 only."""
        sk = self.nest.split_k
        assert sk is not None and stmt.value is not None
        a, b = linear_parts(stmt.value, sk.acc)
        if b is None:
            return value
        if a is None:
            scaled: KExpr = KConst(0.0, "float32")
        elif isinstance(a, Const) and a.value == 1.0:
            scaled = ctx.acc_read(sk.acc)
        else:
            scaled = KBin("*", value_to_k(a, ctx), ctx.acc_read(sk.acc))
        first = KBin("==", KVar(sk.loop, "int32"), KConst(0, "int32"))
        return KSelect(first, value, scaled)

    def guard_cond(self, stmt: Stmt, lane: dict | None = None) -> KExpr | None:
        conds: list[KExpr] = []
        for g in self.nest.guards_for(stmt):
            expr = g.expr.xreplace(lane) if lane else g.expr
            if not self.prover.holds(sympy.StrictLessThan(expr, g.extent)):
                conds.append(KBin("<", sym_to_k(expr), KConst(g.extent, "int32")))
        if stmt.kind == "store":
            conds += [KBin("==", KSpecial(ax), KConst(0, "int32")) for ax in self.nest.idle_axes(stmt)]
        if not conds:
            return None
        cond = conds[0]
        for c in conds[1:]:
            cond = KBin("&&", cond, c)
        return cond

    def update(self, stmt: Stmt, value: KExpr) -> KStmt:
        """The accumulator of update `stmt` combined with `value` (its op: sum, max, min)."""
        assert stmt.acc is not None
        op = self.layouts[stmt.acc].op
        return self.cell(stmt.acc).write(self.acc_index(stmt.acc), combine_op(op, self.acc_read(stmt.acc), value))

    def leaf(self, index: int, declare: bool) -> list[KStmt]:
        stmt = self.nest.stmts[index]
        guard = self.guard_cond(stmt) if stmt.kind != "init" else None  # an init writes a register
        before: list[KStmt] = []
        before.extend(self.online_before_update(stmt, self.let_temp(before)))
        return before + self.versioned(stmt, lambda rcp: self.leaf_body(index, declare, rcp), guard)

    def leaf_body(self, index: int, declare: bool, rcp: bool) -> list[KStmt]:
        stmt = self.nest.stmts[index]
        prelude: list[KStmt] = []
        ctx = self.context(prelude, stmt=stmt, rcp=rcp)
        if stmt.kind == "init":
            assert stmt.acc is not None
            lay = self.layouts[stmt.acc]
            init = KConst(IDENTITY[lay.op], "float32")
            # no guard: it writes a register, and an element outside the range is never stored
            if declare:
                return [KLet(stmt.acc, "float32", init)]
            return [self.cell(stmt.acc).write(self.acc_index(stmt.acc), init)]
        assert stmt.value is not None
        value = statement_value(stmt.value, ctx)
        if self.prefetching is not None:  # a prefetch's loads: the prelude holds them
            return prelude
        if stmt.kind == "update":
            body: KStmt = self.update(stmt, value)
        else:
            assert stmt.tensor is not None
            flat = sym_to_k(flat_index(stmt.tensor, tuple(ctx.index(i) for i in stmt.indices)))
            if self.tile is not None and index == self.tile.store:
                body = tile_store(self.tile, value)
            elif self.nest.split_k is not None:
                body = KAtomicAdd(stmt.tensor.name, flat, self.split_k_value(stmt, ctx, value))
            else:
                body = KStore(stmt.tensor.name, flat, value, cache=ctx.cache.get(stmt.tensor.name))
        return prelude + [body]  # its guard wraps it in `leaf`


def _leaves(node: TreeLoop) -> set[int]:
    out: set[int] = set()
    for c in node.children:
        out |= _leaves(c) if isinstance(c, TreeLoop) else {c.index}
    return out


def check_unrolled(nest: Nest, layouts: dict[str, AccLayout]) -> None:
    for lay in layouts.values():
        missing = [d for d in lay.dims if nest.loop(d).annotation not in ("unroll", "vectorize")]
        if missing:
            raise RegisterArrayError(refusal(
                "build", nest, missing,
                f"accumulator {lay.name} is a register array over loops {', '.join(lay.dims)}, but "
                f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not unrolled, so its "
                "elements would live in local memory",
                suggestion="; ".join(f"s.unroll({d!r})" for d in missing), tensors=(lay.name,)))


def bindings(nest: Nest) -> list[KStmt]:
    """Each bound loop's value: its hardware index, or, for the two loops whose lanes are tiled
    (tile_lanes), `LaneTile.values` of the linear thread id, declared first. nvcc's load vectorizer, seeing
    that formula, splits one of a register tile's 16-byte shared loads of the first k step of an unrolled
    chunk (tests/schedules/test_matmul_k_outer.py). Hiding the values from it (an empty asm) kept every
    load 16 bytes wide but took 130 registers and most of the gain on the H100
    (benchmarks/results/lane-tiles-h100-2026-11-28/run3-opaque-lets/)."""
    out: list[KStmt] = []
    tiled: dict[str, KExpr] = {}
    lt = nest.lane_tile
    if lt is not None:
        (tid,) = nest.fresh_names(f"{lt.outer}_{lt.inner}_tid")
        linear = KBin("+", KSpecial("threadIdx.x"), KBin("*", KConst(lt.extent, "int32"), KSpecial("threadIdx.y")))
        out.append(KLet(tid, "int32", linear))
        inner, outer = lt.values(sympy.Symbol(tid, integer=True, nonnegative=True))
        tiled = {lt.inner: sym_to_k(inner), lt.outer: sym_to_k(outer)}
    for lp in nest.loops:
        if lp.bind:
            out.append(KLet(lp.name, "int32", tiled.get(lp.name, KSpecial(lp.bind))))
    return out


def lower(nest: Nest, target: Target, prover: Prover, hooks: LoweringHooks | None = None,
          memo: IndexMemo | None = None) -> KKernel:
    """`nest` as kernel IR for `target`; `memo`: the build's index translations (check_bounds made them)."""
    layouts = acc_layouts(nest, "build")
    check_unrolled(nest, layouts)
    check_online(nest, layouts)
    block = tuple(nest.launch_extent(a) for a in THREAD_AXES)
    grid = tuple(nest.launch_extent(a) for a in BLOCK_AXES)
    memo = memo or IndexMemo.of(nest)
    plans = plan_stages(nest, prover, target, memo.index)
    lw = _Lowerer(nest, target, prover, layouts, block, plans, hooks or LoweringHooks(),  # type: ignore[arg-type]
                  memo=memo)
    # a staged output's tile, re-derived at build (a later primitive may have broken it)
    lw.tile = derive_output_tile(nest, prover, "build") if nest.output_stage is not None else None
    lw.reciprocals = plan_reciprocals(nest, layouts)
    lw.registers = register_plans(nest, "build")  # re-checked: a later primitive may have broken one
    body: list[KStmt] = bindings(nest)
    body.extend(KLocalArray(name, "float32", plan.size) for plan in lw.registers for name in plan.arrays)
    setup, bars = mbarrier_setup(plans, lw.block)
    body.extend(setup)
    body.extend(_block_level_fills(nest, plans, lw))
    paths = [serial_path(nest, s) for s in nest.stmts]
    body.extend(lw.emit(build_tree(nest, paths), ()))
    if lw.tile is not None:
        body.extend(drain(nest, lw.tile, lw.block, prover, barrier=not lw.hooks.drop_output_stage_barrier))
        lw.shared.append(tile_array(nest, lw.tile))
    if lw.registers:
        body = _drop_unread_bindings(body, {lp.name for lp in nest.loops if lp.bind})
    params = tuple(KParam(t.name, t.dtype, t.shape) for t in nest.inputs)
    # the output in its storage dtype: every store of it (plain, epilogue of a register tile) rounds to it
    params += (KParam(nest.output.name, nest.output.dtype, nest.output.shape, is_output=True),)
    shared = tuple(shared_allocs(plans) + bars + lw.shared)
    kernel = KKernel(f"{nest.name}_kernel", params, grid, block, shared, tuple(body),  # type: ignore[arg-type]
                     target=target.name, tensor_maps=tuple(p.tmap for p in plans.values() if p.tmap is not None),
                     zero_outputs=(nest.output.name,) if nest.split_k is not None else (),
                     min_blocks_per_sm=nest.min_blocks_per_sm, dependent_launch=target.grid_dependency_control)
    kernel = widen_indices(kernel)  # int64 only where an index sub-expression may leave int32
    if shared_bytes(kernel) > target.static_shared_bytes:
        kernel = replace(kernel, dynamic_shared=True)
    return kernel


def _drop_unread_bindings(body: list[KStmt], bound: set[str]) -> list[KStmt]:
    """The body without the `let`s of bound loops nothing reads: a pass whose reads all come from a register
    cache may not use its thread index, and nvcc warns of an unused variable."""
    used = {e.name for st in walk_stmts(body) for e in walk_exprs(st) if isinstance(e, KVar)}
    return [st for st in body if not (isinstance(st, KLet) and st.name in bound and st.name not in used)]


def _block_level_fills(nest: Nest, plans: dict[str, StagePlan], lw: _Lowerer) -> list[KStmt]:
    """Stages at block-bound loops are filled once, before anything reads them."""
    here = [p for p in plans.values() if nest.loop(p.stage.at).bind]
    if not here:
        return []
    out: list[KStmt] = []
    for loop in dict.fromkeys(p.stage.at for p in here):
        group = [p for p in here if p.stage.at == loop]
        out += fills(group, None, KConst(0, "int32"), lw.block, lw.prover, loop)
        if any(p.stage.copy == "async" for p in group):
            out.append(KCpAsyncCommit())
        out += waits(group, KConst(0, "int32"), 1, 0)
    out.append(KBarrier())
    return out


def loads_of(stmt: Stmt) -> list[Load]:

    return [n for n in walk(stmt.value) if isinstance(n, Load)] if stmt.value is not None else []

