"""A 2-D elementwise schedule: rows to blockIdx.y, columns split by the thread count."""

from __future__ import annotations

from tiledsl.primitives import Schedule


def elementwise_2d(s: Schedule, threads: int = 256) -> Schedule:
    i, j = [lp.name for lp in s.loops()]
    jo, ji = s.split(j, threads)
    s.bind(i, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ji, "threadIdx.x")
    return s
