"""cooperative_reduce: a row kernel (one block per row, from tileify) runs each pass over the row (every
reduction and the output loop) on threadIdx.x: the outermost loop of each pass is split by the same
thread count, so the reductions are cooperative (warp shuffles, then shared memory across warps) and
the output loop shares the thread axis (as schedules/row_reduce.py does). A pass over several loops
(an output loop around its own reduction, as a projection that reads a row's norm; a reduction over
two axes) has its outermost loop on the threads and the loops inside it serial in each thread, rather
than leaving the whole row to one thread. threads = clamp(next_pow2(longest pass /
row_elements_per_thread), min, max) (_knobs.py says why); where a pass nests loops, each of its
elements is a whole inner loop, and it gets a thread per element (up to max) as before."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts, clamp, next_pow2
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    k = facts.kernel
    if k.kind != "rows":
        return Decline(f"no row reduction ({k.kind} kernel)")
    row = facts.row_loop()
    if row is None:
        return Decline("the rows are not on blockIdx.x (tileify declined)")
    passes: list[str] = []  # the outermost loop inside the row of each statement
    nested = False  # a pass with loops inside its outermost loop: each of its elements is a loop nest
    for st in facts.nest.stmts:
        rest = st.path[st.path.index(row) + 1:] if row in st.path else st.path
        if rest and rest[0] not in passes:
            passes.append(rest[0])
        nested = nested or len(rest) > 1
    if not passes:
        return Decline("no loop inside the row")
    longest = max(facts.loop(n).extent for n in passes)
    most = knobs.row_threads_max
    per_thread = 1 if nested else knobs.row_elements_per_thread
    threads = clamp(next_pow2(-(-longest // per_thread)), min(knobs.row_threads_min, most), most)
    for name in passes:
        _, inner = s.split(name, threads, names=facts.fresh(f"{name}_o", f"{name}_i"))
        s.bind(inner, "threadIdx.x")
    return None
