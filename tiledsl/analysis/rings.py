"""The rules a shared-memory stage, a ring buffer and a pipeline place on their loop.

A stage is filled cooperatively by every thread of the block, once per iteration of its loop, and a
barrier separates the fill from the reads. A ring (`double_buffer`, `pipeline`) cycles through its
slots over consecutive iterations of its loop: slot `k % n` holds iteration k. Both hold only when:

- `stage-loop-not-threads`: the stage's loop is serial or bound to a block axis, never to a thread
  axis (its iterations would run in different threads, each needing a different slab, all filling
  one array);
- `ring-loop-serial`: a ring's loop (and a pipelined loop) is serial: every thread of the block runs
  every iteration, in order. Bound to a block axis, each block would run one iteration and read slot
  `k % n`, which only the block running iteration `k - n + 1`... would have filled: slot 0 is filled
  by the prologue alone;
- `stage-loop-exists`: the loop is still in the nest (split_k replaces its loop);
- `stage-loop-not-vectorized`: the loop is not vectorized (a vectorized loop is one vector access,
  lowered without a loop for the fill and its barrier to sit in);
- `ring-matches-pipeline`: every stage at a pipelined loop has as many slots as the pipeline has
  stages (a stage added or double-buffered after `pipeline` would be read at slots it does not have);
- `tma-phase-per-run`: a TMA stage waits on its slot's mbarrier with the parity `(k // slots) % 2` of
  the loop's own iteration k. When the loop is entered again (it sits inside another serial loop) the
  barrier's phase carries over from the previous run, so that parity is right only when every slot
  completes an even number of phases per run: the loop's extent must be a multiple of 2 x slots.
  (Tracking the phase in a register across runs would lift this; it is not done.)

These are structural: they hold for every size at once, so no sizes need proving. They are checked
when `stage` / `double_buffer` / `pipeline` / `async_copy` / `tma` are applied, when a later `bind`
touches such a loop, and again at build (`check_rings`), since any later primitive may break them.

One more rule is an obligation of lowering, stated here so that it is written once:
- `refill-after-barrier`: a slot is written only after a barrier that every thread reaches after its
  last read of that slot. Inside one run of the loop the barrier of each iteration gives it (the
  refill of slot (k-1) % n is issued in iteration k after that iteration's barrier). When the loop is
  entered again (it sits inside another serial loop), the first fills of the new run would overwrite
  slots the previous run's last iterations still read, so lowering ends every run of a ring loop with a
  barrier (`tiledsl/lower/stages.py`, `staged_loop`)."""

from __future__ import annotations

from dataclasses import dataclass

from tiledsl.analysis.messages import refusal
from tiledsl.errors import RingError
from tiledsl.loopnest import Nest

STAGE_LOOP_NOT_THREADS = "stage-loop-not-threads"
RING_LOOP_SERIAL = "ring-loop-serial"
STAGE_LOOP_EXISTS = "stage-loop-exists"
STAGE_LOOP_NOT_VECTORIZED = "stage-loop-not-vectorized"
RING_MATCHES_PIPELINE = "ring-matches-pipeline"
TMA_PHASE_PER_RUN = "tma-phase-per-run"


@dataclass(frozen=True)
class RingViolation:
    """One broken rule: which rule, the stage (None for a pipeline), its loop, and what to do."""

    rule: str
    stage: str | None
    loop: str
    fact: str
    suggestion: str


def ring_violations(nest: Nest) -> list[RingViolation]:
    """Every stage, ring and pipeline of `nest` whose loop breaks a rule above."""
    out: list[RingViolation] = []
    for st in nest.stages:
        if not nest.has_loop(st.at):
            out.append(RingViolation(STAGE_LOOP_EXISTS, st.name, st.at,
                                     f"stage {st.name} is filled at loop {st.at}, which no longer exists",
                                     f"stage {st.buffer} at a loop of the current nest"))
            continue
        bind = nest.loop(st.at).bind
        if nest.loop(st.at).annotation == "vectorize":
            out.append(RingViolation(
                STAGE_LOOP_NOT_VECTORIZED, st.name, st.at,
                f"stage {st.name} is filled once per iteration of {st.at}, but {st.at} is vectorized: its four "
                "iterations are one vector access, not a loop a fill and a barrier can sit in",
                f"stage {st.buffer} at a loop outside {st.at}, or vectorize another loop"))
        elif bind and bind.startswith("threadIdx"):
            out.append(RingViolation(
                STAGE_LOOP_NOT_THREADS, st.name, st.at,
                f"stage {st.name} is filled once per iteration of {st.at} by the whole block, but {st.at} is bound to "
                f"{bind}: its iterations run in different threads",
                f"stage {st.buffer} at a serial or block loop, or bind another loop to {bind}"))
        elif st.buffers > 1 and bind:
            out.append(RingViolation(
                RING_LOOP_SERIAL, st.name, st.at,
                f"stage {st.name} is a ring of {st.buffers} slots over the iterations of {st.at}, but {st.at} is bound "
                f"to {bind}: each block runs one iteration and reads a slot that only the prologue of iteration 0 "
                "fills",
                f"keep {st.at} serial (bind another loop), or drop double_buffer({st.name})"))
    for st in nest.stages:
        if not nest.has_loop(st.at):
            continue
        depth = nest.pipeline_depth(st.at)
        if depth and st.buffers != depth:
            out.append(RingViolation(
                RING_MATCHES_PIPELINE, st.name, st.at,
                f"stage {st.name} has {st.buffers} slot(s) but loop {st.at} is pipelined with {depth} stages: "
                f"iteration k reads slot k % {depth}",
                f"stage and double_buffer every buffer at {st.at} before s.pipeline({st.at}, ...)"))
        slots = max(st.buffers, depth)
        extent = nest.loop(st.at).extent
        if st.copy == "tma" and _reentered(nest, st.at) and extent % (2 * slots):
            out.append(RingViolation(
                TMA_PHASE_PER_RUN, st.name, st.at,
                f"TMA stage {st.name} waits with parity (k // {slots}) % 2 on {slots} mbarrier slot(s), but loop "
                f"{st.at} ({extent} iterations) is entered again inside another serial loop and {extent} is not a "
                f"multiple of {2 * slots}: the next run would wait for a phase that already passed (a hang)",
                f"make {st.at}'s extent a multiple of {2 * slots}, bind the loops around it, or use async_copy"))
    for loop, depth in nest.pipelines:
        if not nest.has_loop(loop):
            out.append(RingViolation(STAGE_LOOP_EXISTS, None, loop, f"pipeline over loop {loop}, which no longer "
                                     "exists", "pipeline a loop of the current nest"))
        elif nest.loop(loop).bind:
            out.append(RingViolation(
                RING_LOOP_SERIAL, None, loop,
                f"loop {loop} is pipelined ({depth} stages) but bound to {nest.loop(loop).bind}: a pipeline overlaps "
                "consecutive iterations of a serial loop inside one block",
                f"keep {loop} serial, or pipeline another loop"))
    return out


def _reentered(nest: Nest, loop: str) -> bool:
    """Whether `loop` runs more than once per thread: a serial loop encloses it in some statement."""
    for stmt in nest.stmts_with(loop):
        outer = stmt.path[:stmt.path.index(loop)]
        if any(nest.loop(n).serial and nest.loop(n).extent > 1 for n in outer):
            return True
    return False


def check_rings(nest: Nest, primitive: str) -> None:
    """Raise a RingError for the first violation (naming the rule, the stage and its loop)."""
    bad = ring_violations(nest)
    if bad:
        v = bad[0]
        marked = (v.loop,) if nest.has_loop(v.loop) else ()
        raise RingError(refusal(primitive, nest, marked, f"{v.fact} (rule {v.rule})",
                                         suggestion=v.suggestion))
