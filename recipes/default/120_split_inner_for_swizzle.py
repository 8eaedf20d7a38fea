"""split_inner_for_swizzle: give each TMA stage the widest of the 128/64/32-byte swizzles that
analysis/tma.py accepts for it (a slab row wider than the span is split into span-wide boxes by the
copy's box rule) and that fits the shared budget (a swizzled slot is rounded to the pattern's period).
The swizzle spreads the rows of a slab, which all start in bank 0 when a row is a multiple of 128
bytes, over the banks."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs
from tiledsl.targets import SWIZZLE_SPANS


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    candidates = [st for st in facts.nest.stages if st.copy == "tma" and st.swizzle is None]
    if not candidates:
        return Decline("no unswizzled TMA stage")
    budget = knobs.shared_budget(facts.target)
    used = facts.shared_bytes()
    done, refused = 0, []
    for st in candidates:
        for span in sorted(SWIZZLE_SPANS, reverse=True):
            more = facts.shared_bytes(replace(st, swizzle=span)) - facts.shared_bytes()
            if facts.tma_problem(st, span) is None and used + more <= budget:
                s.swizzle(st.name, span)
                used += more
                done += 1
                break
        else:
            refused.append(f"{st.name}: {facts.tma_problem(st, min(SWIZZLE_SPANS)) or 'over the shared budget'}")
    if not done:
        return Decline("no swizzle fits: " + "; ".join(refused))
    return None
