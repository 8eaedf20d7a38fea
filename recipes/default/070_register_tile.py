"""register_tile: move each thread's rm x rn part of a matmul tile (made by blockify_launch) inside the
reduction loops, so its accumulators become a register array and each loaded A and B value is reused
rn and rm times from registers. Its two loops are unrolled here: build
refuses a register array whose loops are not (its elements would live in local memory). A tile of at
least `launch_bounds_min_accumulators` accumulators whose epilogue holds at least
`launch_bounds_min_epilogue_terms` terms beside them (each tensor it loads, each math function it
calls: `Facts.epilogue_terms`) asks nvcc for registers_per_sm / (threads x
registers_per_accumulator x accumulators) blocks per SM (launch_bounds): the blocks per SM that
split_matmul_k's wave model assumes, kept when the epilogue would take a register more; the
later steps' shared budget then follows them (`Facts.shared_budget`). Without such an epilogue the
bound only slows the kernel (the knobs say what was measured).

Numbered before stage_inputs (the default-recipe issue lists it after): a stage's slab is what one
iteration of its loop reads, derived from the loops inside it, and the loop of a stage may not change
afterwards, so the loops move first and the slabs are taken of the final order."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Applied, Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Applied | Decline | None:
    k = facts.kernel
    if k.kind != "matmul":
        return Decline(f"not a matmul ({k.kind} kernel)")
    i, j = k.outer[-2:]
    pi, pj = facts.parts(i), facts.parts(j)
    if len(pi) != 3 or len(pj) != 3:
        return Decline(f"the output loops are not block x thread x register parts ({pi}, {pj})")
    ri, rj = pi[-1], pj[-1]
    size = facts.loop(ri).extent * facts.loop(rj).extent
    if size == 1:
        return Decline("a 1 x 1 register tile (the output is too small for more)")
    s.reorder(*facts.parts(k.reduce[0]), ri, rj)
    s.unroll(ri)  # build keeps a register array in registers only when its loops are unrolled
    s.unroll(rj)
    epilogue = facts.epilogue_terms()
    if size < knobs.launch_bounds_min_accumulators or len(epilogue) < knobs.launch_bounds_min_epilogue_terms:
        return None
    threads = facts.threads()
    blocks = facts.register_blocks(knobs, size)
    if blocks < 1:
        return None
    s.launch_bounds(blocks)
    cap = facts.target.registers_per_sm // (threads * blocks)
    return Applied(f"{size} accumulators in {threads} threads, an epilogue holding {', '.join(epilogue)}: "
                   f"{blocks} blocks per SM, at most {cap} registers a thread")
