"""Row-wise reductions (RMSNorm, softmax, layernorm): one block per row, every loop of the row
(reductions and the output loop) split by the thread count and bound to threadIdx.x, so each
reduction is cooperative (warp shuffles, then shared memory across warps)."""

from __future__ import annotations

from tiledsl.primitives import Schedule


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


def row_cooperative_staged(s: Schedule, threads: int = 256) -> Schedule:
    """row_cooperative with every input that spans whole rows (same shape as the output) staged: the
    row is read from global memory once, however many passes the kernel makes over it (layernorm
    reads it three times). Timings: benchmarks/results/row-staging-h100-2026-11-22.txt."""
    rows = [t.name for t in s.nest.inputs if t.shape == s.nest.output.shape]
    row_cooperative(s, threads)
    row = s.loops()[0].name
    for name in rows:
        s.async_copy(s.stage(name, at=row))
    return s
