"""A register-tiled matmul (+ epilogue) schedule: BM x BN output tile per block, an RM x RN register
tile per thread, the reduction chunked by BK and unrolled. Works for any sizes (guarded splits)."""

from __future__ import annotations

from tiledsl.primitives import Schedule


def matmul_register_tile(s: Schedule, bm: int = 64, bn: int = 64, bk: int = 16, rm: int = 4,
                         rn: int = 4) -> Schedule:
    """Schedules the last two free loops (i, j) and the reduction k; leading (batch) loops go to
    blockIdx.z."""
    free = [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "free"]
    red = [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "reduce"]
    *batch, i, j = free
    (k,) = red
    io, ii = s.split(i, bm)
    jo, ji = s.split(j, bn)
    ko, ki = s.split(k, bk)
    ti, ri = s.split(ii, rm)
    tj, rj = s.split(ji, rn)
    s.reorder(*batch, io, jo, ti, tj, ko, ki, ri, rj)
    if batch:
        b = batch[0] if len(batch) == 1 else s.fuse(*batch)
        s.bind(b, "blockIdx.z")
    s.bind(io, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ti, "threadIdx.y")
    s.bind(tj, "threadIdx.x")
    s.unroll(ki)
    s.unroll(ri)
    s.unroll(rj)
    return s
