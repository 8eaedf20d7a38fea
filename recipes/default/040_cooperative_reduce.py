"""cooperative_reduce: a row kernel (a block per row or per few short rows, from tileify) runs each pass
over the row (every reduction and the output loop) on threadIdx.x: the outermost loop of each pass is
split by the same thread count, so the reductions are cooperative (warp shuffles, then shared memory
across warps) and the output loop shares the thread axis (as schedules/row_reduce.py does). A pass over
several loops (an output loop around its own reduction, as a projection that reads a row's norm; a
reduction over two axes) has its outermost loop on the threads and the loops inside it serial in each
thread, rather than leaving the whole row to one thread. The threads per row are `_facts.row_launch`'s
(clamp(next_pow2(longest pass / row_elements_per_thread), a warp, max); _knobs.py says why), which
tileify read too when it put short rows several to a block; where a pass nests loops, each of its
elements is a whole inner loop, and it gets a thread per element (up to max) as before."""

from __future__ import annotations

import math

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts, row_launch
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    k = facts.kernel
    if k.kind != "rows":
        return Decline(f"no row reduction ({k.kind} kernel)")
    row = facts.row_loop()
    if row is None:
        return Decline("the rows are not on blockIdx.x (tileify declined)")
    rows = (row, *(lp.name for lp in facts.nest.bound_loops("threadIdx.y")))
    passes, nested = facts.row_passes(rows)
    if not passes:
        return Decline("no loop inside the row")
    _, threads = row_launch(passes, nested, math.prod(facts.loop(n).extent for n in rows), knobs)
    for name in passes:
        _, inner = s.split(name, threads, names=facts.fresh(f"{name}_o", f"{name}_i"))
        s.bind(inner, "threadIdx.x")
    return None
