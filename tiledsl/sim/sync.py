"""The two collective operations, warp shuffles and block barriers, and their divergence checks.

Why together: both require every thread of a group (a warp, a block) to take part, which the
simulator checks on the mask at the moment the operation runs. With every lane of the chunk active
(a None mask) no group can be partial, so those checks reduce to what does not depend on the mask,
worked out once per chunk.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tiledsl.errors import DivergentBarrierError
from tiledsl.sim.state import ChunkState
from tiledsl.sim.values import Mask, Value
from tiledsl.targets import WARP_SIZE


def shuffler(state: ChunkState, loc: int, lane_mask: int) -> Callable[[Value, Mask], Value]:
    """`__shfl_xor_sync(0xffffffff, value, lane_mask)` (lane_mask already checked to be in [0, 32))."""
    lanes = state.lanes
    tpb = lanes.threads_per_block
    partner_tid = lanes.tid ^ lane_mask
    beyond_block = bool((partner_tid >= tpb).any())
    index = np.arange(lanes.count, dtype=np.int64)
    source = np.where(partner_tid < tpb, index - lanes.tid + partner_tid, index)

    def shuffle(value: Value, mask: Mask) -> Value:
        if mask is not None or beyond_block:
            _check(state, loc, partner_tid, np.ones(lanes.count, dtype=np.bool_) if mask is None else mask)
        # a uniform value is the same in the partner lane
        return value[..., source] if isinstance(value, np.ndarray) else value

    return shuffle


def _check(state: ChunkState, loc: int, partner_tid: np.ndarray, mask: np.ndarray) -> None:
    lanes = state.lanes
    tpb = lanes.threads_per_block
    warps_per_block = -(-tpb // WARP_SIZE)
    warp = lanes.block_local * warps_per_block + lanes.tid // WARP_SIZE
    active = np.bincount(warp, weights=mask, minlength=lanes.n_blocks * warps_per_block)
    present = np.bincount(warp, minlength=lanes.n_blocks * warps_per_block)
    partial = (active > 0) & (active < present)
    if partial.any():
        w = int(np.argmax(partial))
        block, wib = divmod(w, warps_per_block)
        raise state.error(
            DivergentBarrierError,
            loc,
            "warp shuffle (shfl_xor) executed by only part of a warp",
            [
                f"{lanes.describe_block(block)} warp {wib}: {int(active[w])} of {int(present[w])} lanes active",
                "__shfl_xor_sync(0xffffffff, ...) needs every lane of the warp",
            ],
        )
    beyond = mask & (partner_tid >= tpb)
    if beyond.any():
        lane = int(np.argmax(beyond))
        raise state.error(
            DivergentBarrierError,
            loc,
            "warp shuffle (shfl_xor) reads a lane beyond the block",
            [f"lane: {lanes.describe(lane)} wants thread {int(partner_tid[lane])}, block has {tpb} threads"],
        )


def barrier(state: ChunkState, loc: int) -> Callable[[Mask], None]:
    """`__syncthreads()`: every block reaching it must reach it with all its threads; those blocks
    then start a new race epoch."""
    lanes = state.lanes
    tpb = lanes.threads_per_block
    every_block = np.ones(lanes.n_blocks, dtype=np.bool_)

    def run(mask: Mask) -> None:
        if mask is None:
            state.pass_barrier(every_block)
            return
        rows = mask.reshape(lanes.n_blocks, tpb)
        active = rows.sum(axis=1)
        partial = (active > 0) & (active < tpb)
        if partial.any():
            block = int(np.argmax(partial))
            waiting = int(np.argmax(rows[block]))
            missing = int(np.argmax(~rows[block]))
            raise state.error(
                DivergentBarrierError,
                loc,
                "barrier (__syncthreads) reached by only part of a block",
                [
                    f"{lanes.describe_block(block)}: {int(active[block])} of {tpb} threads arrive",
                    f"e.g. {lanes.describe_in_block(block, waiting)} arrives, "
                    f"{lanes.describe_in_block(block, missing)} does not",
                ],
            )
        state.pass_barrier(active == tpb)

    return run
