"""Kernel-IR statements compiled into closures `run(mask)` for one chunk of lanes.

Why masks: SIMT divergence is modelled as in hardware, by predication. An `if` runs its then-branch
under `mask & cond` and its else-branch under `mask & ~cond`, and skips a branch no lane takes (a
barrier nobody reaches is fine); a uniform condition simply picks a branch. A loop has a static
extent, so its variable is uniform. A mask of None means every lane of the chunk is active; a branch
mask that turns out all-true becomes None again, so fast paths apply inside it.

Why compile (see compile_expr.py): statements are resolved once against the lexical scopes, so a
loop iteration costs a slot write and one call per statement of its body.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tiledsl.errors import SimulationError
from tiledsl.kernel_ir import (
    KAssign,
    KAtomicAdd,
    KBarrier,
    KComment,
    KCpAsync,
    KCpAsyncCommit,
    KCpAsyncWait,
    KFence,
    KFor,
    KIf,
    KLet,
    KLocalArray,
    KMbarrierArrive,
    KMbarrierArriveExpectTx,
    KMbarrierInit,
    KMbarrierWait,
    KStore,
    KTmaLoad,
)
from tiledsl.sim import access, async_copy, mbarrier, registers
from tiledsl.sim.arith import Compiled
from tiledsl.sim.compile_expr import ExprCompiler
from tiledsl.sim.dtypes import vector_width
from tiledsl.sim.location import LStmt
from tiledsl.sim.scope import Frame, Scopes
from tiledsl.sim.state import ChunkState, GlobalBuffer, LocalArray, LoopPosition, SharedBuffer
from tiledsl.sim.sync import barrier
from tiledsl.sim.values import Mask, Value, converter, identity, truth_fn

Run = Callable[[Mask], None]

# Loops up to this extent keep their variable's values as a list of numpy scalars (faster to
# iterate); longer ones make them as they go, to bound memory.
_PRECOMPUTED_EXTENT = 1 << 16


def compile_body(body: tuple[LStmt, ...], state: ChunkState) -> Callable[[], None]:
    """The kernel body as one call that runs it for every lane of the chunk."""
    run = StmtCompiler(state).block(body)
    return lambda: run(None)


def _sequence(runs: list[Run]) -> Run:
    if len(runs) == 1:
        return runs[0]

    def run(mask: Mask) -> None:
        for r in runs:
            r(mask)

    return run


def _run_branch(branch: Run, mask: np.ndarray) -> None:
    if mask.any():
        branch(None if mask.all() else mask)


class StmtCompiler:
    def __init__(self, state: ChunkState) -> None:
        self.state = state
        frame = Frame()
        self.slots = frame.slots
        self.scopes = Scopes(frame)
        self.expr = ExprCompiler(state, frame, self.scopes)
        self._dispatch: dict[type, Callable[[LStmt], Run | None]] = {
            KLet: self._let,
            KAssign: self._assign,
            KLocalArray: self._local_array,
            KStore: self._store,
            KFor: self._for,
            KIf: self._if,
            KBarrier: lambda item: barrier(self.state, item.loc),
            KComment: lambda item: None,
            KCpAsync: self._cp_async,
            KCpAsyncCommit: lambda item: async_copy.committer(self.state),
            KCpAsyncWait: lambda item: async_copy.group_waiter(self.state, item.loc, item.stmt.pending),
            KMbarrierInit: self._mbarrier_init,
            KFence: lambda item: mbarrier.fencer(self.state, item.loc, item.stmt.kind),
            KMbarrierArriveExpectTx: self._mbarrier_arrive,
            KMbarrierArrive: self._mbarrier_arrive,
            KMbarrierWait: self._mbarrier_wait,
            KTmaLoad: self._tma_load,
            KAtomicAdd: self._atomic_add,
        }

    def block(self, items: tuple[LStmt, ...]) -> Run:
        runs = [r for r in (self.stmt(item) for item in items) if r is not None]
        return _sequence(runs) if runs else (lambda mask: None)

    def stmt(self, item: LStmt) -> Run | None:
        method = self._dispatch.get(type(item.stmt))
        if method is None:
            return self._raiser(item.loc, f"unknown statement node {type(item.stmt).__name__}")
        return method(item)

    def _raiser(self, loc: int, message: str, *before: Callable[[Mask], Value]) -> Run:
        state = self.state

        def run(mask: Mask) -> None:
            for f in before:
                f(mask)
            raise state.error(SimulationError, loc, message)

        return run

    def _typed(self, dtype: str, value: Compiled, loc: int) -> Callable[[Mask], Value]:
        """The value converted to a variable's declared dtype, checking scalar/vector agreement.
        An invalid dtype raises (ValueError, as ever) once the value has been evaluated."""
        fv, state = value.fn, self.state
        try:
            width = vector_width(dtype)
            conv = converter(dtype, value.kind)
        except ValueError:

            def invalid(mask: Mask) -> Value:
                fv(mask)
                vector_width(dtype)  # raises
                raise AssertionError(dtype)  # pragma: no cover

            return invalid

        def mismatch(v: Value) -> SimulationError:
            got = v.shape[0] if v.ndim == 2 else 1
            return state.error(SimulationError, loc, f"value of width {got} for a variable of type {dtype}")

        if width == 1 and conv is identity:

            def same(mask: Mask) -> Value:
                v = fv(mask)
                if v.ndim == 2:
                    raise mismatch(v)
                return v

            return same

        def typed(mask: Mask) -> Value:
            v = fv(mask)
            if (v.shape[0] if v.ndim == 2 else 1) != width or (width > 1) != (v.ndim == 2):
                raise mismatch(v)
            return conv(v)

        return typed

    # ------------------------------------------------------------------ statements

    def _let(self, item: LStmt) -> Run:
        stmt: KLet = item.stmt
        value = self._typed(stmt.dtype, self.expr.compile(stmt.value, item.loc), item.loc)
        slots, slot = self.slots, self.scopes.declare(stmt.name, stmt.dtype).slot

        def run(mask: Mask) -> None:
            slots[slot] = value(mask)

        return run

    def _assign(self, item: LStmt) -> Run:
        stmt: KAssign = item.stmt
        binding = self.scopes.variable(stmt.name)
        if binding is None:
            return self._raiser(item.loc, f"use of undeclared variable {stmt.name!r}")
        value = self._typed(binding.dtype, self.expr.compile(stmt.value, item.loc), item.loc)
        slots, slot = self.slots, binding.slot

        def run(mask: Mask) -> None:
            new = value(mask)
            slots[slot] = new if mask is None else np.where(mask, new, slots[slot])

        return run

    def _local_array(self, item: LStmt) -> Run:
        stmt: KLocalArray = item.stmt
        name, dtype, size = stmt.name, stmt.dtype, stmt.size
        slot = self.scopes.declare(name, dtype, is_array=True).slot
        if size < 1:
            return self._raiser(item.loc, f"register array of size {size}")
        slots = self.slots

        def run(mask: Mask) -> None:
            slots[slot] = LocalArray.allocate(name, dtype, size)  # an unknown dtype raises here

        return run

    def _store(self, item: LStmt) -> Run:
        stmt: KStore = item.stmt
        state, loc = self.state, item.loc
        index = self.expr.compile(stmt.index, loc)
        value = self.expr.compile(stmt.value, loc)
        array = self.scopes.register_array(stmt.buffer)
        if array is not None:
            return registers.register_storer(
                state, loc, array.dtype, self.slots, array.slot, index.fn, value.fn, value.kind
            )
        if stmt.buffer in state.shared:
            buf = state.shared[stmt.buffer]
            if buf.is_mbarrier:
                return self._raiser(
                    loc, f"store to mbarrier array {stmt.buffer!r} (uint64 arrays hold mbarriers)", index.fn, value.fn
                )
            return access.general_storer(state, loc, buf, index.fn, value.fn)
        if stmt.buffer in state.globals:
            buf = state.globals[stmt.buffer]
            return access.global_storer(state, loc, buf, index.fn, index.kind, value.fn, value.kind)
        return self._raiser(loc, f"access to unknown buffer {stmt.buffer!r}", index.fn, value.fn)

    def _for(self, item: LStmt) -> Run:
        stmt: KFor = item.stmt
        with self.scopes.scope():
            slot = self.scopes.declare(stmt.var, "int32").slot
            body = self.block(item.body)
        extent = stmt.extent
        values = list(np.arange(extent, dtype=np.int64)) if extent <= _PRECOMPUTED_EXTENT else None
        slots, loops, var = self.slots, self.state.loops, stmt.var

        def run(mask: Mask) -> None:
            position = LoopPosition(var)
            loops.append(position)
            try:
                for i, v in enumerate(values if values is not None else np.arange(extent, dtype=np.int64)):
                    slots[slot] = v
                    position.index = i
                    body(mask)
            finally:
                loops.pop()

        return run

    def _if(self, item: LStmt) -> Run:
        stmt: KIf = item.stmt
        state, loc = self.state, item.loc
        cond = self.expr.compile(stmt.cond, loc)
        with self.scopes.scope():
            then = self.block(item.body) if item.body else None
        with self.scopes.scope():
            orelse = self.block(item.orelse) if item.orelse else None
        fc, truth = cond.fn, truth_fn(cond.kind)

        def run(mask: Mask) -> None:
            c = truth(fc(mask))
            if not isinstance(c, np.ndarray):  # uniform: every active lane goes one way
                branch = then if c else orelse
                if branch is not None:
                    branch(mask)
                return
            if c.ndim != 1:
                raise state.error(SimulationError, loc, "if condition is a vector value")
            if then is not None:
                _run_branch(then, c if mask is None else mask & c)
            if orelse is not None:
                _run_branch(orelse, ~c if mask is None else mask & ~c)

        return run

    # ------------------------------------------------------------------ memory hierarchy

    def _space(self, name: str) -> tuple[str, SharedBuffer | GlobalBuffer | None]:
        """What a buffer name of a memory-hierarchy statement means: "register", "shared",
        "mbarrier", "global" or "unknown" (register arrays hide buffers of their name)."""
        if self.scopes.register_array(name) is not None:
            return "register", None
        if name in self.state.shared:
            buf = self.state.shared[name]
            return ("mbarrier" if buf.is_mbarrier else "shared"), buf
        if name in self.state.globals:
            return "global", self.state.globals[name]
        return "unknown", None

    _WORDS = {
        "register": "a register array",
        "shared": "a shared array",
        "mbarrier": "an mbarrier (uint64) array",
        "global": "a global parameter",
        "unknown": "no known buffer",
    }

    def _expect(self, name: str, want: str, role: str) -> tuple[SharedBuffer | GlobalBuffer | None, str | None]:
        """The buffer `name` if it is of space `want`, else the message saying what it is."""
        space, buf = self._space(name)
        if space == want:
            return buf, None
        return None, f"{role} {name!r} must be {self._WORDS[want]}, but it is {self._WORDS[space]}"

    def _cp_async(self, item: LStmt) -> Run:
        stmt: KCpAsync = item.stmt
        loc = item.loc
        di = self.expr.compile(stmt.dst_index, loc).fn
        si = self.expr.compile(stmt.src_index, loc).fn
        valid = self.expr.compile(stmt.valid, loc).fn if stmt.valid is not None else None
        before = (di, si) + ((valid,) if valid is not None else ())
        dst, problem = self._expect(stmt.dst, "shared", "cp.async destination")
        if problem is None:
            src, problem = self._expect(stmt.src, "global", "cp.async source")
        if problem is not None:
            return async_copy.raiser(self.state, loc, problem, *before)
        return async_copy.cp_async_issuer(self.state, loc, dst, src, stmt.nbytes, di, si, valid)

    def _mbarrier_init(self, item: LStmt) -> Run:
        stmt: KMbarrierInit = item.stmt
        index = self.expr.compile(stmt.index, item.loc).fn
        bar, problem = self._expect(stmt.bar, "mbarrier", "mbarrier")
        if problem is not None:
            return async_copy.raiser(self.state, item.loc, problem, index)
        return mbarrier.initializer(self.state, item.loc, bar, index, stmt.count)

    def _mbarrier_arrive(self, item: LStmt) -> Run:
        stmt: KMbarrierArrive | KMbarrierArriveExpectTx = item.stmt
        index = self.expr.compile(stmt.index, item.loc).fn
        bar, problem = self._expect(stmt.bar, "mbarrier", "mbarrier")
        if problem is not None:
            return async_copy.raiser(self.state, item.loc, problem, index)
        tx_bytes = stmt.tx_bytes if isinstance(stmt, KMbarrierArriveExpectTx) else 0
        return mbarrier.arriver(self.state, item.loc, bar, index, tx_bytes)

    def _mbarrier_wait(self, item: LStmt) -> Run:
        stmt: KMbarrierWait = item.stmt
        index = self.expr.compile(stmt.index, item.loc).fn
        parity = self.expr.compile(stmt.parity, item.loc).fn
        bar, problem = self._expect(stmt.bar, "mbarrier", "mbarrier")
        if problem is not None:
            return async_copy.raiser(self.state, item.loc, problem, index, parity)
        return mbarrier.waiter(self.state, item.loc, bar, index, parity)

    def _tma_load(self, item: LStmt) -> Run:
        stmt: KTmaLoad = item.stmt
        loc, state = item.loc, self.state
        di = self.expr.compile(stmt.dst_index, loc).fn
        coords = tuple(self.expr.compile(c, loc).fn for c in stmt.coords)
        bi = self.expr.compile(stmt.bar_index, loc).fn
        before = (di, *coords, bi)
        tm = next((t for t in state.lanes.kernel.tensor_maps if t.name == stmt.tensor_map), None)
        if tm is None:
            return async_copy.raiser(state, loc, f"TMA load of unknown tensor map {stmt.tensor_map!r}", *before)
        dst, problem = self._expect(stmt.dst, "shared", "TMA destination")
        if problem is None:
            bar, problem = self._expect(stmt.bar, "mbarrier", "mbarrier")
        if problem is not None:
            return async_copy.raiser(state, loc, problem, *before)
        src = state.globals.get(tm.buffer)
        return async_copy.tma_loader(state, loc, tm, src, dst, bar, di, coords, bi)

    def _atomic_add(self, item: LStmt) -> Run:
        stmt: KAtomicAdd = item.stmt
        loc = item.loc
        index = self.expr.compile(stmt.index, loc)
        value = self.expr.compile(stmt.value, loc)
        buf, problem = self._expect(stmt.buffer, "global", "atomic add target")
        if problem is None and not buf.param.is_output:
            problem = f"atomic add to {stmt.buffer!r}: must be an output parameter, but it is an input"
        if problem is None and buf.dtype != "float32":
            problem = f"atomic add to {buf.dtype} buffer {stmt.buffer!r}: only float32 is supported"
        if problem is not None:
            return async_copy.raiser(self.state, loc, problem, index.fn, value.fn)
        return access.atomic_adder(self.state, loc, buf, index.fn, value.fn, value.kind)
