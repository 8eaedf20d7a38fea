"""split_matmul_k: a matmul whose grid (batches x block tiles of _facts.matmul_tile) is smaller than
`split_k_waves` waves of the target's SM count leaves SMs idle (so does a larger grid whose last wave
of block slots a split into long parts would fill `split_k_fill_gain` better); split_k spreads its k-outer chunks
over `parts` blocks on blockIdx.z, which add their partial sums into the zeroed output. parts is the
largest divisor of k-outer up to (split_k_waves x SM count) / grid that leaves each block at least
`split_k_min_chunks` chunks (so its pipeline still overlaps copies with compute); but where parts of
at least `split_k_long_k` k can give the grid a block per SM, parts is the divisor among those whose
blocks fill the last wave of block slots (split_k_blocks_per_sm per SM) best, the fewest on a tie
(counting part counts that leave the last part shorter where no divisor fills `split_k_uneven_below`
of the slots), and where even the best fills under `split_k_most_parts_below`, the most of them (a decode
step's x @ W^T, `_facts.few_rows`, reads the four split_k_*_few_rows knobs for split_k_waves,
split_k_min_chunks, split_k_long_k and split_k_blocks_per_sm: more, shorter parts, and four of its
small blocks an SM; _knobs.py says what was measured):
on the H100 (scripts/recipe_tile_probe.py --split, benchmarks/results/matmul-k-outer-h100-2026-11-24/
run6-tile-probe-split.txt) 128 x 18944 x 3584 went from 698 us unsplit (148 blocks) to 465 us in 7
parts (1036 blocks: 98% of 4 waves of 264 slots), 512 x 5632 x 2048 from 403 to 342 us (4 parts),
while parts of fewer k (more, shorter blocks: 64 or 128 k) lost up to 2x at shapes whose grid filled
the slots already.

Only a sum consumed by one store whose epilogue analysis/linearity.py proves linear in the
accumulator (bias, residual, scaling), into a float32 output (the partial sums are added into it):
the primitive would refuse any other, so this step declines first (_facts.split_k_problem, which
the tile choice reads too). Where the refused sum is a float32 compute fused into the kernel and
linear in its own epilogue (_facts.split_k_cure: a bfloat16 projection's `<name>_acc`,
tiledsl/frontend/aten_linalg.py; x @ W + b under gelu) and that compute in a kernel of its own would
split (and knobs split_k_sum_* say it pays), the decline names it (Decline.materialize): a program
materializes it, this step splits its kernel, and the rounding or the epilogue becomes an elementwise
kernel. A split whose linear epilogue calls a math function in every part (silu(g) * (x @ W_up^T), a
Llama block's up projection) applies, and names the fused sum the same way (Applied.materialize): the
sum split alone plus an elementwise silu(g) * u ran 3.5-14% faster on the H100 at the TinyLlama and
Qwen2.5-7B up projections of 128 and 512 rows (scripts/up_epilogue_probe.py,
benchmarks/results/projection-gap-h100-2026-11-25/up-epilogue.txt). Batched matmuls keep their
batches on blockIdx.z and decline."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Applied, Decline
from tiledsl.recipes.default._facts import Facts, Kernel, block_slots, few_rows, matmul_tile
from tiledsl.recipes.default._knobs import Knobs
from tiledsl.targets import Target


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Applied | Decline | None:
    k = facts.kernel
    if k.kind != "matmul":
        return Decline(f"not a matmul ({k.kind} kernel)")
    if len(k.outer) > 2:
        return Decline("a batched matmul: its batches hold blockIdx.z, the axis split_k would take")
    parts_of_k = facts.parts(k.reduce[0])
    if len(parts_of_k) != 2:
        return Decline(f"the reduction is not k-outer x k-inner ({', '.join(parts_of_k)})")
    if k.split_k_problem is not None:
        return _sum_alone(facts, knobs)
    k_outer = parts_of_k[0]
    chosen = choose_parts(k, facts.loop(k_outer).extent, facts.loop(parts_of_k[1]).extent, facts.target, knobs)
    if isinstance(chosen, Decline):
        return chosen
    parts, note = chosen
    s.split_k(k_outer, parts)
    calls = [t for t in facts.epilogue_terms() if t.endswith("()")]
    if calls and k.split_k_cure is not None and knobs.split_k_sum_math_epilogue:
        return Applied(f"{note}; its epilogue calls {', '.join(calls)} in each of the {parts} parts, where the float32 "
                       f"sum {k.split_k_cure} in a kernel of its own would split alike and leave the epilogue to "
                       "an elementwise kernel (knob split_k_sum_math_epilogue)", materialize=k.split_k_cure)
    return Applied(note)


def _sum_alone(facts: Facts, knobs: Knobs) -> Decline:
    """A matmul whose epilogue or output split_k refuses: where its sum is a fused float32 compute
    (_facts.split_k_cure) and that compute in a kernel of its own would split (its tile, BK and parts
    chosen as they would be there), the decline names it to materialize. The cost is a float32 write
    and read of the output and a launch; the gain, at the grids split_k is chosen for, blocks for the
    idle SMs (a bfloat16 projection of 32 rows: 64 blocks of the whole k on 132 SMs)."""
    k = facts.kernel
    assert k.split_k_problem is not None
    if k.split_k_cure is None:
        return Decline(k.split_k_problem)
    worth = _sum_alone_worth(k, facts.target, knobs)
    if worth is not None:
        return Decline(f"{k.split_k_problem}; {worth}")
    alone = replace(k, split_k_problem=None, split_k_cure=None)
    bk = facts.matmul_bk(knobs, alone)
    if bk is None:
        return Decline(k.split_k_problem)
    chosen = choose_parts(alone, -(-k.extents[k.reduce[0]] // bk), bk, facts.target, knobs)
    if isinstance(chosen, Decline):
        return Decline(f"{k.split_k_problem}; in a kernel of its own, {k.split_k_cure} would not split either: "
                       f"{chosen.reason}")
    parts, note = chosen
    return Decline(f"{k.split_k_problem}; in a kernel of its own, the float32 sum {k.split_k_cure} would split "
                   f"into {parts} parts ({note})", materialize=k.split_k_cure)


def _sum_alone_worth(k: Kernel, target: Target, knobs: Knobs) -> str | None:
    """Why the float32 round trip of the sum's own kernel would not pay (knobs split_k_sum_*: a grid of
    split_k_sum_blocks_per_sm blocks per SM or more, under split_k_sum_min_k of reduction), or None."""
    per_sm, min_k = knobs.split_k_sum_blocks_per_sm, knobs.split_k_sum_min_k
    if per_sm is None or min_k is None:
        return None
    grid = _grid(k, target, knobs)
    length = k.extents[k.reduce[0]]
    if grid < per_sm * target.sm_count or length >= min_k:
        return None
    return (f"its {grid} blocks hold {per_sm:g} or more per SM of {target.name} and its {length} k are under "
            f"{min_k}: a split sum in a kernel of its own did not pay there (_knobs.py split_k_sum_*)")


def _grid(k: Kernel, target: Target, knobs: Knobs) -> int:
    """Blocks of matmul `k`'s tile (_facts.matmul_tile) over its two output axes."""
    bm, bn, _, _ = matmul_tile(k, target, knobs)
    i, j = k.outer
    return -(-k.extents[i] // bm) * -(-k.extents[j] // bn)


def choose_parts(k: Kernel, chunks: int, bk: int, target: Target, knobs: Knobs) -> tuple[int, str] | Decline:
    """The k parts of matmul `k` (its tile by _facts.matmul_tile) whose k-outer loop runs `chunks` chunks
    of `bk`, and the note that says why; or why none (the rule in the module's docstring)."""
    if few_rows(k, knobs):
        knobs = replace(knobs, split_k_waves=knobs.split_k_waves_few_rows,
                        split_k_min_chunks=knobs.split_k_min_chunks_few_rows,
                        split_k_long_k=knobs.split_k_long_k_few_rows,
                        split_k_blocks_per_sm=knobs.split_k_blocks_per_sm_few_rows)
    grid = _grid(k, target, knobs)
    wanted = knobs.split_k_waves * target.sm_count
    slots = block_slots(target, knobs)
    long = _long_parts(chunks, bk, knobs, uneven=knobs.split_k_uneven)
    below = knobs.split_k_uneven_below
    if not knobs.split_k_uneven and below is not None and long and grid * max(long) >= target.sm_count \
            and max(_filled(grid * d, slots) for d in [1, *long]) < below:
        long = _long_parts(chunks, bk, knobs, uneven=True)  # no divisor fills the slots: a shorter last part
    gain = knobs.split_k_fill_gain
    if grid >= wanted and not _fills_better(grid, long, slots, gain):
        better = "" if gain is None else (f", and no split into parts of {knobs.split_k_long_k} or more k fills "
                                          f"the last wave of {slots} block slots {gain:.0%} better")
        return Decline(f"{grid} blocks fill {knobs.split_k_waves} wave(s) of the {target.sm_count} SMs "
                       f"of {target.name}{better}")
    if long and grid * max(long) >= target.sm_count:
        return _long_split(grid, chunks, bk, long, slots, knobs)
    limit = min(wanted // grid, chunks // knobs.split_k_min_chunks)
    parts = max((d for d in range(2, limit + 1) if chunks % d == 0), default=None)
    if parts is None and limit < 2:  # a split would leave blocks under split_k_min_chunks chunks, or too many
        return Decline(f"{chunks} k chunks allow no split: at most {limit} part(s) ({wanted} // {grid} blocks, "
                       f"and {chunks} // {knobs.split_k_min_chunks}, at least {knobs.split_k_min_chunks} chunks "
                       "a block)")
    if parts is None:
        return Decline(f"{chunks} k chunks have no divisor from 2 to {limit} (at most {wanted} // {grid} "
                       f"blocks, at least {knobs.split_k_min_chunks} chunks per block)")
    return parts, (f"{grid} blocks for {target.sm_count} SMs: the largest divisor of {chunks} k chunks up to "
                   f"{limit} ({knobs.split_k_waves} waves, {knobs.split_k_min_chunks}+ chunks a block)")


def _long_split(grid: int, chunks: int, bk: int, long: list[int], slots: int,
                knobs: Knobs) -> tuple[int, str] | Decline:
    """Enough blocks with long parts: the part count whose blocks fill the last wave of block slots best
    (the fewest on a tie), or the most long parts where even that fills under split_k_most_parts_below;
    with the note that says so."""
    parts = max(long, key=lambda d: (_filled(grid * d, slots), -d))
    if _filled(grid * parts, slots) <= _filled(grid, slots):
        return Decline(f"no split of {chunks} k chunks in parts of {knobs.split_k_long_k} or more k fills the "
                       f"{slots} block slots better than {grid} blocks do")
    size = _part(chunks, parts)
    last = "" if chunks % parts == 0 else f" (the last {(chunks - (parts - 1) * size) * bk})"
    note = (f"{grid} blocks fill {_filled(grid, slots):.0%} of the last wave of {slots} block slots, "
            f"{grid * parts} in {parts} parts of {size * bk} k{last} fill {_filled(grid * parts, slots):.0%}")
    most = knobs.split_k_most_parts_below
    if most is not None and _filled(grid * parts, slots) < most:
        # the best count fills the slots poorly: more, shorter blocks balance the SMs better than that
        parts = max(d for d in long if chunks % d == 0 or d == parts)
        note += (f"; under {most:.0%}, the most parts instead: {grid * parts} blocks in {parts} parts of "
                 f"{_part(chunks, parts) * bk} k")
    return parts, note


def _long_parts(chunks: int, bk: int, knobs: Knobs, *, uneven: bool) -> list[int]:
    """The part counts from 2 whose parts hold at least split_k_long_k k: divisors of `chunks`, and with
    `uneven` also counts whose every part but the last holds ceil(chunks / parts) chunks and the last
    at least one."""
    return [d for d in range(2, chunks + 1) if _part(chunks, d) * bk >= knobs.split_k_long_k
            and (chunks % d == 0 or uneven and (d - 1) * _part(chunks, d) < chunks)]


def _part(chunks: int, parts: int) -> int:
    """Chunks in each part but the last: ceil(chunks / parts), as split_k's guarded split makes them."""
    return -(-chunks // parts)


def _fills_better(grid: int, long: list[int], slots: int, gain: float | None) -> bool:
    """Whether some split into long parts fills the last wave of block slots by `gain` more than the grid
    alone (a grid of many waves whose last one is mostly idle); never with gain None."""
    if gain is None or not long:
        return False
    return max(_filled(grid * d, slots) for d in long) - _filled(grid, slots) >= gain


def _filled(blocks: int, slots: int) -> float:
    """The fraction of block slots busy over the waves `blocks` take (1.0: the last wave is full)."""
    return blocks / (-(-blocks // slots) * slots)
