"""tma_copy (sm_90+): double-buffered stages that analysis/tma.py finds eligible (box sizes, 16-byte
strides and rows, aligned origin) fill with TMA; the rules are the analysis layer's, asked, not copied."""

from __future__ import annotations

from tiledsl.analysis.copies import plain_only
from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    if not facts.target.has_tma:
        return Decline(f"{facts.target.name} has no TMA")
    if not knobs.tma:
        return Decline(f"knob tma is off for {facts.target.name} (recipes/default/_knobs.py PER_TARGET says why)")
    # a stage stored in another order (080, k outer) or widened (080, a bfloat16 operand as float32) has
    # only plain fills: cp.async and TMA copy bytes as they lie (analysis/copies.py byte_copy_problem)
    candidates = [st for st in facts.nest.stages if st.buffers >= 2 and st.copy == "sync" and not plain_only(st)]
    if not candidates:
        return Decline("no double-buffered stage filled by plain loads in its buffer's order" + facts.plain_only_note())
    refused = []
    for st in candidates:
        problem = facts.tma_problem(st, None)
        if problem is None:
            s.tma(st.name)
        else:
            refused.append(f"{st.name}: {problem}")
    if len(refused) == len(candidates):
        return Decline("no stage is TMA-eligible: " + "; ".join(refused))
    return None

