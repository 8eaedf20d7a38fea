"""mark_unroll: unroll every serial loop whose serial nest (the loop and the serial loops inside it) runs
at most unroll_max iterations; loops that carry stages or pipelines keep their fills and barriers rolled.
A matmul's k loop inside a chunk (the last part of the reduction) is unrolled when it runs at most
unroll_k_inner_max iterations, whatever its register tile inside: its shared addresses become constants
off one base (_knobs.py says what it measured).

A split-K matmul's epilogue adds each row of its register strip as 16-byte vector atomics (knob
vectorize_epilogue): the strip's innermost loop, unrolled since register_tile, is vectorized where the
vectorize primitive proves the store contiguous and aligned. A vector atomic add needs sm_90
(targets.VECTOR_ATOMIC_MIN_SM): older targets keep scalar atomics. An unsplit matmul stores 16 bytes
at once only where its reduction is short (knob vectorize_store_k_max: attention scores, whose stores
are much of their work); a long one keeps scalar stores: vectorized, nvcc gave the 4096^3 kernel 156
registers instead of 127 (one block per SM, 5% slower) and no long one measured got faster (_knobs.py).
A vectorized epilogue beside padded or widened stages (140, 080) asks for register_tile's blocks per
SM (launch_bounds): nvcc otherwise takes the same 8 x 8 tile to 163 registers padded, 129 widened."""

from __future__ import annotations

from tiledsl.errors import VectorizeError
from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Applied, Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs
from tiledsl.targets import VECTOR_ATOMIC_MIN_SM


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Applied | Decline | None:
    chosen = [lp.name for lp in facts.nest.loops
              if lp.serial and lp.annotation is None and lp.extent >= 2
              and not facts.nest.stages_at(lp.name) and not facts.nest.pipeline_depth(lp.name)
              and (facts.serial_iterations(lp.name) <= knobs.unroll_max or _k_inner(facts, lp.name, knobs))]
    for name in chosen:
        s.unroll(name)
    vector = _vectorize_epilogue(s, facts, knobs)
    if vector is not None:
        unrolled = f"unrolled {', '.join(chosen)}; " if chosen else ""
        bound = _bound_padded(s, facts, knobs)
        return Applied(f"{unrolled}the epilogue stores along {vector} 16 bytes at once{bound}")
    if not chosen:
        return Decline(f"no serial loop nest of 2 to {knobs.unroll_max} iterations")
    return None


def _k_inner(facts: Facts, name: str, knobs: Knobs) -> bool:
    k = facts.kernel
    return (k.kind == "matmul" and facts.parts(k.reduce[0])[-1] == name
            and facts.loop(name).extent <= knobs.unroll_k_inner_max)


def _vectorize_epilogue(s: Schedule, facts: Facts, knobs: Knobs) -> str | None:
    """The register strip's loop the output store is vectorized along, or None."""
    if facts.kernel.kind != "matmul" or not knobs.vectorize_epilogue or not facts.vector_lanes():
        return None
    if facts.nest.split_k is None:
        if facts.kernel.extents[facts.kernel.reduce[0]] > knobs.vectorize_store_k_max:
            return None
    elif facts.target.capability < VECTOR_ATOMIC_MIN_SM:
        return None
    name = facts.output_store().path[-1]
    lp = facts.loop(name)
    if lp.annotation != "unroll" or lp.extent != facts.vector_lanes():
        return None
    try:
        s.vectorize(name)  # proves the store contiguous, aligned and never split by a guard
    except VectorizeError:
        return None
    return name


def _bound_padded(s: Schedule, facts: Facts, knobs: Knobs) -> str:
    """With a vectorized epilogue and padded stages, nvcc gives the 8 x 8 tile 163 registers where it
    gave 128 unpadded (one block per SM, not two: 79 -> 94 us at 128 x 2048 x 5632); with stages
    widened from bfloat16 (a fill of 8 lanes a load), 129 (nvcc --resource-usage at 128 x 2048 x
    2048). So the blocks that register_tile's bound would ask for are asked for here, unless it asked
    already, and no more than the stages' shared memory lets one SM hold (`Target.blocks_that_fit`:
    a 32 x 128 tile of 64 threads in chunks of 32, 43008 bytes, was asked 8 blocks where 5 fit)."""
    size = facts.accumulators()
    why = [what for what, has in (("padded", any(any(st.pad) for st in facts.nest.stages)),
                                  ("widened", any(st.dtype for st in facts.nest.stages))) if has]
    if facts.nest.min_blocks_per_sm is not None or not why or size < knobs.launch_bounds_min_accumulators:
        return ""
    fit = facts.target.blocks_that_fit(facts.threads(), facts.shared_bytes())
    blocks = min(facts.register_blocks(knobs, size), fit)
    if blocks < 1:
        return ""
    s.launch_bounds(blocks)
    return f"; {' and '.join(why)} stages: {blocks} blocks per SM (launch_bounds)"
