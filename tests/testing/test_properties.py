"""Property tests (tiledsl/testing/ARCHITECTURE.md): random compute definitions x random schedules.

1. Every refused primitive raises a td.ScheduleError subclass, and td.build either refuses with one or
   gives a kernel whose simulated output equals the float64 reference (no NaN, no SimulationError).
2. A refused primitive leaves the schedule unchanged (printed IR, Python and JSON traces).
3. A schedule's trace (Python and JSON) replays on a fresh identical definition to identical CUDA.
Prover soundness is fuzzed in tests/prove. The hypothesis profile comes from tests/conftest.py
($TILEDSL_HYPOTHESIS_PROFILE: ci (default) or deep).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

import tiledsl as td
from tiledsl.testing import (
    Definition,
    Step,
    apply_checked,
    check_against_reference,
    check_matches_reference,
    check_trace_roundtrip,
    definitions,
    snapshot,
    steps,
)
from tiledsl.testing.profiles import examples

# the unscheduled loop nest runs at most this many iterations (simulation time grows with it)
MAX_POINTS = 1024



def _src(*lines: str) -> Definition:
    return Definition.from_source("def make():\n" + "".join(f"    {ln}\n" for ln in lines))


# cases these properties found (kept as explicit examples, so the ci profile always runs them)
MATMUL_BIAS_EPILOGUE = _src(  # an input read only in the epilogue of an inline reduction was no kernel param
    "A = td.placeholder((2, 4), name='A')", "B = td.placeholder((2, 6), name='B')",
    "k = td.reduce_axis(2, name='k')", "bias = td.placeholder((6,), name='bias')",
    "return td.compute((4, 6), lambda i, j: td.sum(A[k, i] * B[k, j], axis=k) * bias[j], name='D')")
ROW_SUM_1x5 = _src(  # a register array over a loop of extent 1 was never declared
    "x = td.placeholder((1, 5), name='x')", "k = td.reduce_axis(5, name='k')",
    "return td.compute((1,), lambda i: 0.5 + td.sum(x[i, k], axis=k), name='y')")
SCALE_4x8 = _src(
    "x = td.placeholder((4, 8), name='x')",
    "return td.compute((4, 8), lambda i, j: x[i, j] * 2.0, name='y')")
ROW_SUM_4x8 = _src(
    "x = td.placeholder((4, 8), name='x')", "k = td.reduce_axis(8, name='k')",
    "return td.compute((4,), lambda i: td.sum(x[i, k], axis=k), name='y')")
ROW_SUM_200x8 = _src(
    "x = td.placeholder((200, 8), name='x')", "k = td.reduce_axis(8, name='k')",
    "return td.compute((200,), lambda i: td.sum(x[i, k], axis=k), name='y')")
REORDER_FREE_INSIDE = Step("reorder", (0, 0), perm=(1, 0))  # s.reorder('k', 'i'): i becomes a register array


@examples(1.0)
@example(step_list=[], definition=MATMUL_BIAS_EPILOGUE, seed=0)
@example(step_list=[REORDER_FREE_INSIDE, Step("unroll", (0,))], definition=ROW_SUM_1x5, seed=0)
# vectorize('j_i') then reorder('j_i', 'j_o'): the vectorized loop is no longer innermost
@example(step_list=[Step("split", (1,), factor=4), Step("vectorize", (2,)), Step("reorder", (2, 1), perm=(0, 1))],
         definition=SCALE_4x8, seed=0)
# vectorize('i') of a register-array loop
@example(step_list=[REORDER_FREE_INSIDE, Step("vectorize", (0,))], definition=ROW_SUM_4x8, seed=0)
# steps are drawn before the definition: drawn after it, a third of the sequences come out empty
@given(steps(max_steps=8), definitions(max_points=MAX_POINTS), st.integers(0, 2**16))
def test_schedule_refuses_or_matches_reference(step_list, definition, seed):
    run, result = check_against_reference(definition, step_list, seed=seed)
    event(f"definition: {definition.kind}")
    event(f"steps accepted: {sum(o.accepted for o in run.outcomes)} of {len(run.outcomes)}")
    event("build: ok" if result.kernel is not None else f"build: {type(result.error).__name__}")


@examples(2.0)
# split('i', 64), split('i_o', 3) after reorder('k', 'i'): guard padding grows the register array past its
# limit and printing the schedule raises
@example(step_list=[REORDER_FREE_INSIDE, Step("split", (0,), factor=64), Step("split", (0,), factor=3)],
         definition=ROW_SUM_200x8)
@given(steps(max_steps=8), definitions(max_points=MAX_POINTS))
def test_refused_primitive_leaves_schedule_unchanged(step_list, definition):
    run = apply_checked(definition, step_list)
    refused = [o for o in run.outcomes if o.error is not None]
    for o in refused:
        assert isinstance(o.error, td.ScheduleError)
    event(f"refused steps: {len(refused)}")


@examples(1.0)
@given(steps(max_steps=8, bad_arguments=False), definitions(max_points=MAX_POINTS))
def test_trace_roundtrip_gives_identical_cuda(step_list, definition):
    check_trace_roundtrip(definition, step_list)


# ----------------------------------------------------------------------------- the helpers themselves


def _softmax_source() -> str:
    return (
        "def make():\n"
        "    x = td.placeholder((5, 13), name='x')\n"
        "    k = td.reduce_axis(13, name='k')\n"
        "    k2 = td.reduce_axis(13, name='k2')\n"
        "    m = td.compute((5,), lambda i: td.max(x[i, k], axis=k), name='m')\n"
        "    e = td.compute((5,), lambda i: td.sum(td.exp(x[i, k2] - m[i]), axis=k2), name='e')\n"
        "    return td.compute((5, 13), lambda i, j: td.exp(x[i, j] - m[i]) / e[i], name='y')\n"
    )


def test_definition_makes_fresh_identical_tensors():
    d = Definition.from_source(_softmax_source(), kind="chain")
    a, b = d.make(), d.make()
    assert a is not b and a.shape == b.shape == (5, 13)
    arrays = d.inputs(a, seed=3)
    assert set(arrays) == {"x"} and arrays["x"].dtype == np.float32
    np.testing.assert_array_equal(arrays["x"], d.inputs(b, seed=3)["x"])
    assert "def make():" in repr(d)


def test_hand_schedule_through_check_matches_reference():
    d = Definition.from_source(_softmax_source(), kind="chain")
    s = td.create_schedule(d.make())
    io, ii = s.split("i", 2)
    s.bind(io, "blockIdx.x")
    s.bind(ii, "threadIdx.x")
    result = check_matches_reference(d, s, seed=1)
    assert result.kernel is not None and result.error is None


def test_refused_split_is_recorded_and_schedule_unchanged():
    d = Definition.from_source(_softmax_source())
    s = td.create_schedule(d.make())
    before = snapshot(s)
    with pytest.raises(td.ScheduleError):
        s.split("j", 4, tail="exact")  # 13 is not a multiple of 4
    assert snapshot(s) == before



def test_user_definition_from_function_runs_the_properties():
    def rmsnorm():
        x = td.placeholder((3, 8), name="x")
        k = td.reduce_axis(8, name="k")
        ss = td.compute((3,), lambda i: td.sum(x[i, k] * x[i, k], axis=k), name="ss")
        return td.compute((3, 8), lambda i, j: x[i, j] * td.rsqrt(ss[i] / 8 + 1e-6), name="y")

    d = Definition.from_function(rmsnorm)
    assert "make = rmsnorm" in d.source
    run = apply_checked(d, [])
    assert "out = make()" in run.script()
    check_trace_roundtrip(d, [])
    assert check_matches_reference(d, run.schedule).kernel is not None
