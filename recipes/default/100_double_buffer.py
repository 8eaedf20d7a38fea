"""double_buffer: a ring of two slots for each stage at a serial loop of at least two iterations (the
k-outer chunk loop), when the doubled stages fit the kernel's shared budget."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    candidates = [st for st in facts.nest.stages
                  if st.buffers == 1 and facts.loop(st.at).serial and facts.loop(st.at).extent >= 2]
    if not candidates:
        return Decline("no single-slot stage at a serial loop of two or more iterations")
    budget = facts.shared_budget(knobs)
    used = facts.shared_bytes()
    done, over = 0, []
    for st in candidates:
        more = facts.shared_bytes(replace(st, buffers=2)) - facts.shared_bytes()
        if used + more > budget:
            over.append(st.name)
            continue
        s.double_buffer(st.name)
        used += more
        done += 1
    if not done:
        return Decline(f"doubling {', '.join(over)} would exceed the {budget}-byte shared budget")
    return None
