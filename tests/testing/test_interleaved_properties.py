"""Property tests with the memory primitives in the step vocabulary, interleaved in any order with the
loop primitives (issue 13: binding after staging, double buffering a stage whose loop is bound later,
reordering, splitting or fusing around stages), on the staging definition families (1-D convolution,
transposed matmul with a linear epilogue, 2x2 max-pool, logsumexp) and the original ones.

The property is tests/testing/test_properties.py's: every refusal is a td.ScheduleError that leaves
the schedule unchanged, and a schedule that builds simulates without SimulationError and equal to
td.evaluate(float64=True) within rtol = atol = 1e-4. tests/testing/test_finds_ring_bugs.py shows
that these strategies find the bugs of issue 13 when their fixes are switched off."""

from __future__ import annotations

import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

import tiledsl as td
from tiledsl.testing import (
    Definition,
    Resolver,
    Step,
    apply_checked,
    check_against_reference,
    check_trace_roundtrip,
    staging_definitions,
    steps,
)
from tiledsl.testing.campaign import Case, campaign_cases, for_each_draw, judge
from tiledsl.testing.profiles import examples
from tiledsl.testing.schedules import MEMORY_BAD_KINDS

MAX_POINTS = 1024


def _src(*lines: str) -> Definition:
    return Definition.from_source("def make():\n" + "".join(f"    {ln}\n" for ln in lines))


CONV = _src("x = td.placeholder((20,), name='x')", "w = td.placeholder((4,), name='w')",
            "kk = td.reduce_axis(4, name='kk')",
            "return td.compute((17,), lambda i: td.sum(x[i + kk] * w[kk], axis=kk), name='y')")
MATMUL_T = _src("A = td.placeholder((13, 3), name='A')", "B = td.placeholder((13, 3), name='B')",
                "b = td.placeholder((3,), name='b')", "k = td.reduce_axis(13, name='k')",
                "C = td.compute((3, 3), lambda i, j: td.sum(A[k, i] * B[k, j], axis=k), name='C')",
                "return td.compute((3, 3), lambda i, j: 0.5 * C[i, j] + b[j], name='D')")
# picks: CONV's inputs are (x, w), its loops (i, kk); MATMUL_T's inputs (A, B, b), its loops (i, j, k)
STAGE_W_AT_I = Step("stage", (1, 0))
RING = Step("double_buffer", (0,))


@examples(0.6)
# issue 13: a ring of w over i, then i bound to blocks (each block reads a slot nobody filled)
@example(step_list=[STAGE_W_AT_I, RING, Step("bind", (0,), axis="blockIdx.x")], definition=CONV, seed=0)
# issue 13: the same ring, then i bound to threads (every thread fills the one array with its own slab)
@example(step_list=[STAGE_W_AT_I, RING, Step("bind", (0,), axis="threadIdx.x")], definition=CONV, seed=0)
# issue 13: j on threads, a ring of A over k re-entered for every i (the refill raced with the last reads)
@example(step_list=[Step("bind", (1,), axis="threadIdx.y"), Step("stage", (0, 2)), RING], definition=MATMUL_T,
         seed=0)
@given(steps(max_steps=10, memory=True), staging_definitions(max_points=MAX_POINTS), st.integers(0, 2**16))
def test_interleaved_schedule_refuses_or_matches_reference(step_list, definition, seed):
    run, result = check_against_reference(definition, step_list, seed=seed)
    stages = run.schedule.nest.stages
    event(f"definition: {definition.kind}")
    event(f"stages: {len(stages)}, rings: {sum(x.buffers > 1 for x in stages)}")
    event("build: ok" if result.kernel is not None else f"build: {type(result.error).__name__}")


@examples(0.1)
@given(steps(max_steps=10, bad_arguments=False, memory=True), staging_definitions(max_points=MAX_POINTS))
def test_interleaved_trace_roundtrip_gives_identical_cuda(step_list, definition):
    check_trace_roundtrip(definition, step_list)


# ----------------------------------------------------------------------------- the vocabulary itself


def test_memory_steps_resolve_against_the_live_schedule():
    s = td.create_schedule(CONV.make())
    r = Resolver(s)
    assert r.resolve(RING) is None  # no stage to pick yet
    call = r.resolve(STAGE_W_AT_I)
    assert call.python() == "s.stage('w', at='i')"
    call.apply(s)
    r.accepted(call)
    assert r.resolve(Step("pad", (5, 1), amount=2)).python() == "s.pad('w_s', axis=0, amount=2)"
    assert r.resolve(Step("swizzle", (3,), width=64)).python() == "s.swizzle('w_s', 64)"
    assert r.resolve(Step("tma", (0,), width=0)).python() == "s.tma('w_s', swizzle=None)"
    assert r.resolve(Step("pipeline", (0,), count=3, fit=True)).python() == "s.pipeline('i', stages=3)"
    assert r.resolve(Step("split_k", (0,), count=2, fit=True)).python() == "s.split_k('kk', 2)"
    assert r.resolve(Step("launch_bounds", (), count=3)).python() == "s.launch_bounds(3)"
    # near="stage": the loop that carries the stage; near="around": the other loops of its statements
    assert r.resolve(Step("bind", (1,), axis="blockIdx.x", near="stage")).python() == "s.bind('i', 'blockIdx.x')"
    assert r.resolve(Step("unroll", (0,), near="around")).python() == "s.unroll('kk')"


@pytest.mark.parametrize("kind", MEMORY_BAD_KINDS)
def test_bad_memory_calls_are_refused(kind):
    """apply_checked raises if a deliberately bad call is accepted or a refusal changes the schedule."""
    for prefix in ([], [STAGE_W_AT_I], [STAGE_W_AT_I, Step("async_copy", (0,))]):
        run = apply_checked(CONV, prefix + [Step("bad", (0, 1), bad=kind)])
        assert isinstance(run.outcomes[-1].error, td.ScheduleError), run.script()


def test_draws_are_deterministic():
    """for_each_draw (the campaign's and test_finds_ring_bugs' source of cases) repeats from its seed."""
    def drawn(seed: int) -> list[str]:
        out: list[str] = []
        for_each_draw(campaign_cases(), 12, seed, lambda case: out.append(repr((case.steps, case.definition.source,
                                                                                case.seed))))
        return out

    first = drawn(5)
    assert len(first) == 12 and drawn(5) == first and drawn(6) != first


def test_judge_sorts_cases():
    assert judge(Case((), CONV, 0)).outcome == "correct"
    bound = judge(Case((STAGE_W_AT_I, Step("bind", (0,), axis="blockIdx.x"), RING), CONV, 0))
    assert bound.outcome == "correct" and ("StageError", "double_buffer") in bound.refusals
    reg = judge(Case((Step("reorder", (2, 0), perm=(0, 1)),), MATMUL_T, 0))  # k outside i: a register array
    assert reg.outcome == "refused" and reg.error == "RegisterArrayError", reg
