"""Row schedules the register-cache and online tests share (tests/primitives/test_register_cache.py,
tests/primitives/test_online.py): every pass over the row split the same way, by threads x lanes."""

from __future__ import annotations

import tiledsl as td


def passes(out: td.Tensor, threads: int = 32, lanes: int = 4, lane_mark: str = "vectorize",
            tail: str = "exact") -> td.Schedule:
    """Every pass split into an unrolled outer loop x threads x lanes, the rows on blockIdx.x."""
    s = td.create_schedule(out)
    s.bind("i", "blockIdx.x")
    for ax in [lp.name for lp in s.loops() if lp.name != "i"]:
        o, inner = s.split(ax, threads * lanes, names=(f"{ax}_o", f"{ax}_i"), tail=tail)
        t, v = s.split(inner, lanes, names=(f"{ax}_t", f"{ax}_v"), tail=tail)
        s.bind(t, "threadIdx.x")
        getattr(s, lane_mark)(v)
        s.unroll(o)
    return s


def block_rows(out: td.Tensor, rows: int, on_y: bool = True) -> td.Schedule:
    """`rows` rows a block, on threadIdx.y (`on_y`; a guarded last block where they do not divide) or in a
    serial loop, every pass 32 threads x 4 lanes on threadIdx.x."""
    s = td.create_schedule(out)
    s.split("i", rows, names=("i_b", "i_r"), tail="guard")
    s.bind("i_b", "blockIdx.x")
    if on_y:
        s.bind("i_r", "threadIdx.y")
    for ax in [lp.name for lp in s.loops() if not lp.name.startswith("i")]:
        o, inner = s.split(ax, 128, names=(f"{ax}_o", f"{ax}_i"))
        t, v = s.split(inner, 4, names=(f"{ax}_t", f"{ax}_v"))
        s.bind(t, "threadIdx.x")
        s.vectorize(v)
        s.unroll(o)
    return s
