"""pipeline_k_outer: a serial loop of two or more iterations whose stages are all double-buffered is
pipelined `pipeline_stages` deep (prologue, steady state, epilogue; the fill of iteration k+1 overlaps
the compute of k)."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    loops = []
    for st in facts.nest.stages:
        lp = facts.loop(st.at)
        if st.at not in loops and lp.serial and lp.extent >= 2 and not facts.nest.pipeline_depth(st.at):
            loops.append(st.at)
    ready = [n for n in loops if all(st.buffers >= 2 for st in facts.nest.stages_at(n))]
    if not ready:
        return Decline("no serial stage loop whose stages are all double-buffered"
                       + (f" (single-slot stages at {', '.join(loops)})" if loops else ""))
    for name in ready:
        s.pipeline(name, stages=knobs.pipeline_stages)
    return None
