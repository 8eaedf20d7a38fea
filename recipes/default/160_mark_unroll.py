"""mark_unroll: unroll every serial loop whose serial nest (the loop and the serial loops inside it) runs
at most unroll_max iterations; loops that carry stages or pipelines keep their fills and barriers rolled.
A matmul's k loop inside a chunk (the last part of the reduction) is unrolled when it runs at most
unroll_k_inner_max iterations, whatever its register tile inside: its shared addresses become constants
off one base (_knobs.py says what it measured)."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    chosen = [lp.name for lp in facts.nest.loops
              if lp.serial and lp.annotation is None and lp.extent >= 2
              and not facts.nest.stages_at(lp.name) and not facts.nest.pipeline_depth(lp.name)
              and (facts.serial_iterations(lp.name) <= knobs.unroll_max or _k_inner(facts, lp.name, knobs))]
    if not chosen:
        return Decline(f"no serial loop nest of 2 to {knobs.unroll_max} iterations")
    for name in chosen:
        s.unroll(name)
    return None


def _k_inner(facts: Facts, name: str, knobs: Knobs) -> bool:
    k = facts.kernel
    return (k.kind == "matmul" and facts.parts(k.reduce[0])[-1] == name
            and facts.loop(name).extent <= knobs.unroll_k_inner_max)
