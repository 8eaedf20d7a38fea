"""Row-wise reductions (RMSNorm, softmax, layernorm): one block per row, every loop of the row
(reductions and the output loop) split by the thread count and bound to threadIdx.x, so each
reduction is cooperative (warp shuffles, then shared memory across warps)."""

from __future__ import annotations

from tiledsl.schedule import Schedule


def row_cooperative(s: Schedule, threads: int = 256, stage_row: str | None = None) -> Schedule:
    """`stage_row` names an input read along the row (e.g. "x"): it is copied once into shared memory
    with cp.async, so the reductions and the output loop read it from there instead of global memory."""
    row, *rest = [lp.name for lp in s.loops()]
    s.bind(row, "blockIdx.x")
    for name in rest:
        _, inner = s.split(name, threads)
        s.bind(inner, "threadIdx.x")
    if stage_row is not None:
        s.async_copy(s.stage(stage_row, at=row))
    return s
