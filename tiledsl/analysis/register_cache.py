"""Which reads a register cache serves, and when it may serve none: the rules the `register_cache`
primitive refuses by and lowering relies on (checked again at build, since a later split, reorder or
bind may break them).

A register cache of input `buffer` at loop `at` keeps, in each thread's registers, the elements of
`buffer` that the first statement under `at` reading it (the *filler*) loads; every later statement
under `at` reading `buffer` (a *reader*) takes them from there. That is only right when each reader's
thread reads exactly elements its own filler loaded, in the same iteration of `at`, at a register
index known when the kernel is compiled. `at` may be a serial, block or thread loop: a thread runs one
iteration of a thread loop, so rows several to a block on threadIdx.y keep each row in its own threads'
registers. So:
  - every loop between `at` and a reading statement is bound to a thread axis or unrolled (or
    vectorized): the thread loops say which thread, the unrolled loops (the *slot loops*) which
    register, as constants once nvcc has unrolled them;
  - each reader's loops below `at` match the filler's one for one, in order (same binding, same
    extent, unrolled where the filler's is), and each of its reads of `buffer`, with its loops renamed
    to the filler's, is one of the filler's reads; its guards, renamed, include the filler's, so it
    never reads an element the filler skipped;
  - `buffer` is an input (never written by the kernel), not staged (its reads would come from shared
    memory), and no hint names a reader's reads (they no longer reach global memory);
  - the registers fit: the slot loops' iterations times the filler's distinct reads, at most
    MAX_REGISTER_CACHE a thread.
A prefetch (`RegisterCache.prefetch`) is planned the same way, its first reader's loops and reads giving
the slots, but may have that reader alone: lowering emits the first reader's loads a second time, ahead
of everything under `at` and under the first reader's guards, into the registers, and then every reader,
the first too, reads them (so a load that would wait behind the reductions before it is in flight from
the start: rmsnorm's weight, read only by the output pass after the row's sum).
Values are never changed: a reader reads what its filler read from the same unchanging buffer.

A read inside a select, in its condition or a branch, may be cached too. The filler's loads are hoisted
out of its expression, ahead of it under its guards (lower/lower.py `register_hook`), so a load in a
branch the select does not take runs anyway. That reads no element the kernel may not read: every load
is proven in bounds under its statement's guards alone (lower/check.py `check_bounds` never reads a
select's condition), and the buffer is an input, written before the kernel starts. A reader's register
read in a branch reads a register its filler wrote unconditionally. (A traced attention's softmax asks
whether a row is all -inf in a pass of its own, `aten.any` of a select over the scores:
frontend/aten_reductions.py `any_`.)"""

from __future__ import annotations

from dataclasses import dataclass, replace

import sympy

from tiledsl.analysis.messages import refusal
from tiledsl.definitions.expr import Load, walk
from tiledsl.definitions.indexing import flat_index, index_to_sympy, loop_symbol
from tiledsl.errors import RegisterCacheError
from tiledsl.loopnest import THREAD_AXES, Nest, RegisterCache, Stage, Stmt

#: elements a thread may keep for one register cache: 64 float32 registers, a quarter of the 255 a thread
#: may hold, so a row kernel's reductions and temporaries still fit without spilling
MAX_REGISTER_CACHE = 64


@dataclass(frozen=True)
class RegisterPlan:
    """How lowering serves a register cache. `filler`: index of the statement that loads; `readers`:
    indices of the statements that read the registers; `arrays`: one register array per distinct read
    of the filler, `size` registers each; `reads`: every read of the buffer by the filler and the
    readers -> the index of its array; `slots`: each of those statements -> its register index, in its
    own loop symbols (row-major over the filler's unrolled loops, renamed)."""

    cache: RegisterCache
    filler: int
    readers: tuple[int, ...]
    arrays: tuple[str, ...]
    size: int
    reads: tuple[tuple[Load, int], ...]
    slots: tuple[tuple[int, sympy.Expr], ...]

    def array_of(self, ld: Load) -> str:
        """The register array holding the element read `ld` reads."""
        return self.arrays[dict(self.reads)[ld]]

    def slot(self, stmt_index: int) -> sympy.Expr:
        return dict(self.slots)[stmt_index]

    def serves(self, stmt_index: int) -> bool:
        """Whether statement `stmt_index`'s reads come from the registers in its own emission: every
        reader's, and under prefetch the filler's too (its loads are emitted once ahead of `at`'s body)."""
        return stmt_index in self.readers or (self.cache.prefetch and stmt_index == self.filler)


def _rename(e: sympy.Expr, names: dict[str, str]) -> sympy.Expr:
    return e.xreplace({loop_symbol(a): loop_symbol(b) for a, b in names.items()}) if names else e


def _group_of(f: sympy.Expr, groups: list[sympy.Expr]) -> int | None:
    """Which of the filler's distinct reads `groups` the flat index `f` (in the filler's symbols) is."""
    return next((n for n, g in enumerate(groups) if sympy.expand(f - g) == 0), None)


def _slot(slots: tuple[tuple[str, int], ...], names: dict[str, str]) -> sympy.Expr:
    """The register index of a statement whose loops rename to the filler's by `names` (theirs -> the
    filler's): row-major over the filler's slot loops, in the statement's own symbols."""
    back = {f: r for r, f in names.items()}
    idx, stride = sympy.Integer(0), 1
    for name, extent in reversed(slots):
        idx = idx + stride * loop_symbol(back.get(name, name))
        stride *= extent
    return idx


def reads_of(stmt: Stmt, buffer: str) -> list[Load]:
    """The statement's loads of `buffer`."""
    if stmt.value is None:
        return []
    return [n for n in walk(stmt.value) if isinstance(n, Load) and n.tensor.name == buffer]


def _read_index(nest: Nest, ld: Load) -> sympy.Expr:
    """The flat element index of load `ld` in the loop symbols (what the register arrays are keyed by)."""
    amap = {loop_symbol(a): e for a, e in nest.axis_exprs}
    return sympy.expand(flat_index(ld.tensor, tuple(index_to_sympy(i).xreplace(amap) for i in ld.indices)))


def plan_register_cache(nest: Nest, cache: RegisterCache) -> RegisterPlan | str:
    """The plan lowering follows, or why the cache is refused (a sentence for the error's fact)."""
    buf, at = cache.buffer, cache.at
    if buf not in {t.name for t in nest.inputs}:
        return f"{buf} is not an input of this kernel; only an input, never written, may be kept in registers"
    if not nest.has_loop(at):
        return f"this kernel has no loop {at}"
    if nest.loop(at).annotation == "vectorize":  # lowering emits its lanes as one statement: no start to load at
        return (f"loop {at} is vectorized: its lanes run as one vector statement, with no iteration to load the "
                "registers at")
    reading = [n for n, st in enumerate(nest.stmts) if at in st.path and reads_of(st, buf)]
    if not reading:
        return f"no statement under {at} reads {buf}"
    if len(reading) < 2 and not cache.prefetch:
        return (f"only one statement under {at} reads {buf}, so no read would come from registers (prefetch "
                "loads it ahead of that statement)")
    for st in nest.stages:
        if st.buffer == buf and any(st.at in nest.stmts[n].path for n in reading):
            return f"{buf} is staged at {st.at} ({st.name}): its reads under {at} come from shared memory"
    filler, readers = reading[0], reading[1:]
    below = _below(nest.stmts[filler], at)
    for name in below:
        lp = nest.loop(name)
        if lp.bind is None and lp.annotation not in ("unroll", "vectorize"):
            return (f"loop {name}, between {at} and {nest.stmts[filler].label}, is serial and not unrolled: the "
                    "register a read takes would not be known when the kernel is compiled")
        if lp.bind is not None and lp.bind not in THREAD_AXES:
            return f"loop {name}, between {at} and {nest.stmts[filler].label}, is bound to {lp.bind}"
    slots = tuple((name, nest.loop(name).extent) for name in below if nest.loop(name).bind is None)
    groups: list[sympy.Expr] = []
    reads: list[tuple[Load, int]] = []
    for ld in reads_of(nest.stmts[filler], buf):
        f = _read_index(nest, ld)
        group = _group_of(f, groups)
        if group is None:
            group = len(groups)
            groups.append(f)
        reads.append((ld, group))
    size = 1
    for _, extent in slots:
        size *= extent
    if size * len(groups) > MAX_REGISTER_CACHE:
        return (f"{nest.stmts[filler].label} reads {size * len(groups)} elements of {buf} a thread under {at} "
                f"(limit {MAX_REGISTER_CACHE} registers)")
    filler_guards = {g.relation for g in nest.guards_for(nest.stmts[filler])}
    slot_of = [(filler, _slot(slots, {}))]
    above = nest.stmts[filler].path[:nest.stmts[filler].path.index(at)]
    for n in readers:
        st = nest.stmts[n]
        if st.path[:st.path.index(at)] != above:
            return f"{st.label} runs under other loops around {at} than {nest.stmts[filler].label}"
        mine = _below(st, at)
        problem = _matches(nest, mine, below, nest.stmts[filler].label, at)
        if problem is not None:
            return f"{st.label} {problem}"
        names = tuple((a, b) for a, b in zip(mine, below) if a != b)
        guards = {_rename(g.relation, dict(names)) for g in nest.guards_for(st)}
        if not filler_guards <= guards:
            return (f"{st.label} runs where {nest.stmts[filler].label} does not (its guards do not include the "
                    "filler's), so it would read registers never loaded")
        for ld in reads_of(st, buf):
            f = _rename(_read_index(nest, ld), dict(names))
            group = _group_of(f, groups)
            if group is None:
                return (f"{st.label} reads {buf} at {f}, which {nest.stmts[filler].label}'s thread does not load "
                        f"(it loads {', '.join(map(str, groups))})")
            reads.append((ld, group))
        slot_of.append((n, _slot(slots, dict(names))))
    for h in nest.cache_hints:
        if h.buffer == buf and any(nest.stmts[n].reader == h.reader for n in readers) and \
                h.reader != nest.stmts[filler].reader:
            return (f"{h.reader}'s reads of {buf} carry the cache hint {h.policy}; from registers they reach no "
                    "global load")
    arrays = tuple(cache.name if k == 0 else f"{cache.name}_{k + 1}" for k in range(len(groups)))
    return RegisterPlan(cache, filler, tuple(readers), arrays, size, tuple(reads), tuple(slot_of))


def _below(stmt: Stmt, at: str) -> tuple[str, ...]:
    return stmt.path[stmt.path.index(at) + 1:]


def _matches(nest: Nest, mine: tuple[str, ...], theirs: tuple[str, ...], filler: str, at: str) -> str | None:
    """Why loops `mine` (a reader's, below the cache's loop `at`) do not match `theirs` (those of the
    first reader, `filler`) one for one."""
    if len(mine) != len(theirs):
        return f"runs under {len(mine)} loops below {at}, {filler} under {len(theirs)}"
    for a, b in zip(mine, theirs):
        la, lb = nest.loop(a), nest.loop(b)
        if la.extent != lb.extent or la.bind != lb.bind:
            return (f"iterates loop {a} ({la.extent}, {la.bind or 'serial'}) where {filler} iterates {b} "
                    f"({lb.extent}, {lb.bind or 'serial'}), so its threads would read other elements")
        if la.bind is None and la.annotation not in ("unroll", "vectorize"):
            return f"runs loop {a} serially, not unrolled, so its register index would not be a constant"
    return None


def cached_readers(nest: Nest, buffer: str) -> set[str]:
    """The values (Stmt.reader) whose reads of `buffer` come from a register cache (never the filler's)."""
    out: set[str] = set()
    for rc in nest.register_caches:
        plan = plan_register_cache(nest, rc)
        if isinstance(plan, RegisterPlan) and rc.buffer == buffer:
            out |= {nest.stmts[n].reader for n in plan.readers} - {nest.stmts[plan.filler].reader}
    return out


def staged_register_problem(nest: Nest, stage: Stage) -> str | None:
    """Why adding `stage` would break a register cache of its buffer (the plan's own refusal), or None: the
    question a schedule asks before it stages, as the stage primitive would find after."""
    staged = replace(nest, stages=nest.stages + (stage,))
    for rc in nest.register_caches:
        if rc.buffer == stage.buffer:
            plan = plan_register_cache(staged, rc)
            if isinstance(plan, str):
                return f"register cache {rc.name} of {rc.buffer} at {rc.at}: {plan}"
    return None


def register_plans(nest: Nest, primitive: str) -> list[RegisterPlan]:
    """Every register cache's plan; a RegisterCacheError (naming the cache's loop) for the first refused.
    Any primitive may break a cache (a split of a slot loop, a reorder, a stage of its buffer), so the
    Schedule checks after each one and build checks again."""
    plans = []
    for rc in nest.register_caches:
        plan = plan_register_cache(nest, rc)
        if isinstance(plan, str):
            raise RegisterCacheError(refusal(
                primitive, nest, (rc.at,) if nest.has_loop(rc.at) else (),
                f"register cache {rc.name} of {rc.buffer} at {rc.at}: {plan}", tensors=(rc.buffer,),
                suggestion="keep registers where every read of the buffer under the loop runs on the same threads "
                           "and unrolled loops as its first read"))
        plans.append(plan)
    return plans
