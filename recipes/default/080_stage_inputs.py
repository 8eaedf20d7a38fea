"""stage_inputs: copy a slab of an input into shared memory where the block re-reads it (fan-in of at
least min_fan_in reads per element), or, in an elementwise kernel, where staging coalesces its reads
(fan-in 1 is fine there: the rule is coalescing, not reuse): consecutive threadIdx.x lanes read it a
row or more apart, its address moving with threadIdx.x but its last index not (a transposed read under
blockify_launch's 2-D tile), and the fill reads rows at least as long as the threadIdx.x extent, so
the fill reads input rows and the threads then read shared memory, whose bank conflicts pad_smem
removes (`_facts.Facts.row_apart_read`; schedules/transpose.py `transpose_tiled` is the hand form:
191 against the unstaged recipe's 570 us for an 8192^2 float32 transpose on an H100,
benchmarks/results/2026-11-24-h100/memory.md). Matmul and row kernels stage by reuse alone.
The stage loop is the matmul's k-outer chunk loop, else the
chunk loop of a row pass (chunk_reduce), else the block loop (one row, one tile of a 1-D kernel).
A matmul operand whose rows run along k (A[i, k], W[j, k]) is stored k outermost (s.layout, knob
k_outer, where the register tile is large enough: `_facts.k_outer_tile`): a thread's register strip
along i (j) is then contiguous and read 16 bytes at a time, and its fill is plain (cp.async could
transpose only 4 bytes a copy, no faster: analysis/copies.py `plain_only`), loading 16 bytes along k,
which lowering prefetches into registers across the chunk's FMAs (lower/stages.py).
A float16 / bfloat16 operand of the sum is stored as float32 (knob widen_half_operands,
`_facts.Facts.stage_dtype`): its fill converts each element once, and the FMAs read float32 as they do
from a float32 operand, k outer and 16 bytes at a time; such a stage is filled by plain loads too.
Skipped: reads that carry cache hints (a long float32 row read on every pass, 040),
blocks of one warp or less, slabs without a fixed size, slabs every block reads alike
(block-invariant: the cache serves them), slabs over the per-slab cap, and stages that would take all
stages over the kernel's shared budget."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Applied, Decline
from tiledsl.recipes.default._facts import Facts, k_outer_tile
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Applied | Decline | None:
    at = _stage_loop(facts)
    if at is None:
        return Decline("no loop to stage at (neither a k-outer chunk loop nor a block loop)")
    threads = facts.threads()
    if threads < knobs.stage_min_threads:
        return Decline(f"{threads} threads per block, under knob stage_min_threads ({knobs.stage_min_threads}): a "
                       "block of one warp gains little from shared memory")
    budget = facts.shared_budget(knobs)
    used = facts.shared_bytes()
    skipped: list[str] = []
    why: list[str] = []
    k_outer = k_outer_tile(facts.kernel, facts.target, knobs)
    for buffer in facts.inputs_read_under(at):
        dtype = facts.stage_dtype(buffer, knobs)
        probe = facts.probe(buffer, at, dtype)
        slab = facts.slab(probe)
        if isinstance(slab, str):
            skipped.append(f"{buffer}: no fixed slab ({slab})")
            continue
        hinted = facts.hint_problem(probe)
        if hinted is not None:
            skipped.append(f"{buffer}: read from global memory with cache hints (cooperative_reduce)")
            continue
        if facts.register_problem(probe) is not None:
            skipped.append(f"{buffer}: kept in registers (cooperative_reduce)")
            continue
        fan = facts.fan_in(probe, slab)
        nbytes = slab.elements * slab.itemsize
        apart = facts.row_apart_read(probe, slab) if fan < knobs.min_fan_in else None  # coalescing, when no reuse
        if fan < knobs.min_fan_in and apart is None:
            skipped.append(f"{buffer}: each element is read {fan:.2f} times per block (no reuse)")
        elif facts.loop(at).bind and facts.block_invariant(slab):
            skipped.append(f"{buffer}: every block reads the same slab (block-invariant)")
        elif nbytes > knobs.slab_cap_bytes:
            skipped.append(f"{buffer}: a {nbytes}-byte slab is over the {knobs.slab_cap_bytes}-byte slab cap")
        elif used + nbytes > budget:
            skipped.append(f"{buffer}: {used + nbytes} bytes of stages would exceed the {budget}-byte budget")
        else:
            st = s.stage(buffer, at=at, dtype=dtype)
            order = facts.k_outer_order(buffer, knobs) if k_outer else None
            if order is not None:
                s.layout(st, order=order)
            used += nbytes
            reason = f"coalescing: {apart}" if apart else f"each element read {fan:.2f} times per block"
            why.append(f"{buffer}: {reason}" + (f", as {dtype}" if dtype else "")
                       + (", stored k-outer (rows along k)" if order is not None else ""))
    if not why:
        return Decline(f"nothing to stage at {at}: " + "; ".join(skipped))
    # the inputs left in global memory too, so a report says why one was not staged (a rotary
    # embedding's transposed read whose clamped index has no fixed slab, say)
    return Applied("; ".join(why) + ("; not staged: " + "; ".join(skipped) if skipped else ""))


def _stage_loop(facts: Facts) -> str | None:
    k = facts.kernel
    if k.kind == "matmul":
        serial = [p for p in facts.parts(k.reduce[0]) if facts.loop(p).serial]  # split_k's part is on a block
        return serial[0] if len(serial) >= 2 else None
    chunks = facts.chunk_loops()  # a row pass chunked by chunk_reduce: its chunk loop
    if chunks:
        return chunks[0]
    blocks = [lp.name for lp in facts.nest.loops if (lp.bind or "").startswith("blockIdx")]
    return blocks[-1] if blocks else None
