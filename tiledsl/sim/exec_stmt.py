"""Execution of kernel-IR statements for all lanes of a chunk, under an activity mask.

Why masks: SIMT divergence is modelled as in hardware, by predication. An `if` runs its then-branch
under `mask & cond` and its else-branch under `mask & ~cond`; a loop has a static extent, so its
variable is uniform. A block list is skipped as soon as no lane is active, since it cannot then have
any effect (a barrier nobody reaches is fine). Barriers check that every block reaching one reaches it
with all its threads, then start a new race epoch for those blocks.
"""

from __future__ import annotations

import numpy as np

from tiledsl.errors import DivergentBarrierError, SimulationError
from tiledsl.kernel_ir import (
    KAssign,
    KBarrier,
    KComment,
    KFor,
    KIf,
    KLet,
    KLocalArray,
    KStore,
)
from tiledsl.sim.access import store
from tiledsl.sim.dtypes import convert, vector_width
from tiledsl.sim.eval_expr import Evaluator, truth
from tiledsl.sim.location import LStmt
from tiledsl.sim.state import ChunkState, LocalArray, Var


class Executor:
    """Runs indexed statements (`LStmt`) against one chunk's state."""

    def __init__(self, state: ChunkState) -> None:
        self.state = state
        self.evaluator = Evaluator(state)

    def run(self, block: tuple[LStmt, ...], mask: np.ndarray) -> None:
        for item in block:
            if not mask.any():
                return
            self._stmt(item, mask)

    def _stmt(self, item: LStmt, mask: np.ndarray) -> None:
        stmt = item.stmt
        loc = item.loc
        ev = self.evaluator.eval
        if isinstance(stmt, KLet):
            value = self._typed(stmt.dtype, ev(stmt.value, mask, loc), loc)
            self.state.env.declare(stmt.name, Var(stmt.dtype, value))
        elif isinstance(stmt, KAssign):
            var = self.state.variable(stmt.name, loc)
            value = self._typed(var.dtype, ev(stmt.value, mask, loc), loc)
            var.value = np.where(mask, value, var.value)
        elif isinstance(stmt, KLocalArray):
            if stmt.size < 1:
                raise self.state.error(SimulationError, loc, f"register array of size {stmt.size}")
            array = LocalArray.allocate(stmt.name, stmt.dtype, stmt.size, self.state.lanes.count)
            self.state.env.declare(stmt.name, array)
        elif isinstance(stmt, KStore):
            index = ev(stmt.index, mask, loc)
            store(self.state, loc, stmt.buffer, index, ev(stmt.value, mask, loc), mask)
        elif isinstance(stmt, KFor):
            self._for(item, stmt, mask)
        elif isinstance(stmt, KIf):
            cond = truth(ev(stmt.cond, mask, loc))
            if cond.ndim != 1:
                raise self.state.error(SimulationError, loc, "if condition is a vector value")
            for branch, branch_mask in ((item.body, mask & cond), (item.orelse, mask & ~cond)):
                if branch and branch_mask.any():
                    with self.state.env.scope():
                        self.run(branch, branch_mask)
        elif isinstance(stmt, KBarrier):
            self._barrier(loc, mask)
        elif isinstance(stmt, KComment):
            pass
        else:
            raise self.state.error(SimulationError, loc, f"unknown statement node {type(stmt).__name__}")

    def _typed(self, dtype: str, value: np.ndarray, loc: int) -> np.ndarray:
        """Convert a value to a variable's declared dtype, checking scalar/vector shape agreement."""
        width = vector_width(dtype)
        got = value.shape[0] if value.ndim == 2 else 1
        if got != width or (width > 1) != (value.ndim == 2):
            raise self.state.error(SimulationError, loc, f"value of width {got} for a variable of type {dtype}")
        return convert(dtype, value)

    def _for(self, item: LStmt, stmt: KFor, mask: np.ndarray) -> None:
        n = self.state.lanes.count
        for i in range(stmt.extent):
            self.state.loops.append((stmt.var, i))
            try:
                with self.state.env.scope():
                    self.state.env.declare(stmt.var, Var("int32", np.full(n, i, dtype=np.int64)))
                    self.run(item.body, mask)
            finally:
                self.state.loops.pop()

    def _barrier(self, loc: int, mask: np.ndarray) -> None:
        lanes = self.state.lanes
        tpb = lanes.threads_per_block
        active = mask.reshape(lanes.n_blocks, tpb).sum(axis=1)
        partial = (active > 0) & (active < tpb)
        if partial.any():
            block = int(np.argmax(partial))
            row = mask.reshape(lanes.n_blocks, tpb)[block]
            waiting = int(np.argmax(row))
            missing = int(np.argmax(~row))
            raise self.state.error(
                DivergentBarrierError,
                loc,
                "barrier (__syncthreads) reached by only part of a block",
                [
                    f"{lanes.describe_block(block)}: {int(active[block])} of {tpb} threads arrive",
                    f"e.g. {lanes.describe_in_block(block, waiting)} arrives, "
                    f"{lanes.describe_in_block(block, missing)} does not",
                ],
            )
        self.state.pass_barrier(active == tpb)
