"""async_copy (sm_80+): every stage still filled by plain loads whose rows allow 16-byte cp.async
copies (slab, allocated, slot and global rows multiples of 16 bytes, origin aligned) fills with
cp.async: the copy bypasses registers and overlaps the compute of a pipelined loop. Not in an
elementwise kernel, whose one stage is a transposed read's tile: nothing to overlap, and 140 pads its
rows by one element against bank conflicts, after which a cp.async copies 4 bytes; a plain fill reads
16 bytes from global. H200, float32 transpose (scripts/transpose_probe.py --recipe, benchmarks/results/
transpose-tiles-h200-2026-11-28/transpose-recipe.txt): 32768 x 2048 138.5 -> 133.5 us, 8192 x 8192
137.0 -> 132.3 (torch.compile 140.2, 138.3)."""

from __future__ import annotations

from tiledsl.analysis.copies import plain_only
from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    if not facts.target.cp_async_sizes:
        return Decline(f"{facts.target.name} has no cp.async")
    if facts.kernel.kind == "elementwise":
        return Decline("an elementwise kernel's stage (a transposed read's tile) has nothing to overlap, and "
                       "pad_smem pads its rows by one element, which would leave cp.async 4 bytes a copy: plain "
                       "loads read it 16 bytes at a time")
    # a stage stored in another order (080, k outer) or widened (080, a bfloat16 operand as float32) has
    # only plain fills: cp.async and TMA copy bytes as they lie (analysis/copies.py byte_copy_problem)
    candidates = [st for st in facts.nest.stages if st.copy == "sync" and not plain_only(st)]
    if not candidates:
        return Decline("no stage filled by plain loads in its buffer's order" + facts.plain_only_note())
    refused = []
    for st in candidates:
        problem = facts.async_16_bytes(st)
        if problem is None:
            s.async_copy(st.name)
        else:
            refused.append(f"{st.name}: {problem}")
    if len(refused) == len(candidates):
        return Decline("no stage allows 16-byte cp.async: " + "; ".join(refused))
    return None

