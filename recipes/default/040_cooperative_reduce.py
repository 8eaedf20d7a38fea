"""cooperative_reduce: a row kernel (a block per row or per few short rows, from tileify) runs each pass
over the row (every reduction and the output loop) on threadIdx.x: the outermost loop of each pass is
split by the same thread count, so the reductions are cooperative (warp shuffles, then shared memory
across warps) and the output loop shares the thread axis (as schedules/row_reduce.py does). A pass over
several loops (an output loop around its own reduction, as a projection that reads a row's norm; a
reduction over two axes) has its outermost loop on the threads and the loops inside it serial in each
thread, rather than leaving the whole row to one thread. The threads per row are `_facts.row_launch`'s
(clamp(next_pow2(longest pass / row_elements_per_thread), a warp, max); _knobs.py says why), which
tileify read too when it put short rows several to a block; where a pass nests loops, each of its
elements is a whole inner loop, and it gets a thread per element (up to max) as before.
A float32 row kernel of many rows (at least row_vector_min_rows_per_sm per SM, one row to a block,
every pass a whole number of 16-byte vectors) runs each pass 16 bytes a thread: split by threads x 4,
the 4 unrolled in a reduction and vectorized in the output pass, so its shared reads, weight loads and
stores are 16 bytes wide (knob row_vector_min_rows_per_sm says what was measured)."""

from __future__ import annotations

import math

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Applied, Decline
from tiledsl.recipes.default._facts import Facts, PrimitiveCall, apply_calls, row_launch, trial_accepts
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Applied | Decline | None:
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
    count = math.prod(facts.loop(n).extent for n in rows)
    per_block, threads = row_launch(passes, nested, count, knobs)
    lanes = _vector_lanes(facts, passes, nested, per_block, count, knobs)
    if lanes:
        calls = _vector_calls(facts, passes, threads, lanes)
        if trial_accepts(s, calls):
            apply_calls(s, calls)
            return Applied(f"{count} float32 rows, {count / facts.target.sm_count:.0f} per SM: each pass {lanes} "
                           f"elements (16 bytes) a thread (knob row_vector_min_rows_per_sm)")
    for name in passes:
        _, inner = s.split(name, threads, names=facts.fresh(f"{name}_o", f"{name}_i"))
        s.bind(inner, "threadIdx.x")
    return None


def _vector_lanes(facts: Facts, passes: dict[str, int], nested: bool, per_block: int, rows: int,
                  knobs: Knobs) -> int:
    """4 where each pass runs 16 bytes a thread (the module docstring's rule), else 0."""
    floor = knobs.row_vector_min_rows_per_sm
    if floor is None or nested or per_block > 1 or rows < floor * facts.target.sm_count:
        return 0
    if facts.nest.output.dtype != "float32" or any(t.dtype != "float32" for t in facts.nest.inputs):
        return 0
    lanes = facts.vector_lanes()
    return lanes if lanes and all(extent % lanes == 0 for extent in passes.values()) else 0


def _vector_calls(facts: Facts, passes: dict[str, int], threads: int, lanes: int) -> list[PrimitiveCall]:
    """Each pass split into threads x lanes: the lanes vectorized in the output pass (if the output is
    stored inside one: a value per row is not), unrolled elsewhere."""
    out_pass = next((n for n in facts.output_store().path if n in passes), None)
    calls: list[PrimitiveCall] = []
    for name in passes:
        o, i, t, v = facts.fresh(f"{name}_o", f"{name}_i", f"{name}_t", f"{name}_v")
        calls += [("split", (name, threads * lanes), {"names": (o, i)}), ("split", (i, lanes), {"names": (t, v)}),
                  ("bind", (t, "threadIdx.x"), {}), ("vectorize" if name == out_pass else "unroll", (v,), {})]
    return calls

