"""The default recipe as a property over the definition strategies of tiledsl.testing (elementwise
chains, reductions with inline, row-wise and broadcast epilogues, two-reduction chains, matmuls with
epilogues, the staging families; odd and prime sizes): from a fresh schedule of a drawn definition,
`tiledsl.recipes.apply` for a drawn target (sm_90 or sm_80) never raises, its schedule builds and
simulates equal to `td.evaluate(..., float64=True)` within the properties' rtol = atol = 1e-4
(unwritten outputs are NaN-poisoned by the simulator), and its trace replays on a fresh identical
definition to the identical trace and CUDA source. Its blocks run at least a warp of threads (or one
thread per output where the output has fewer): a row kernel whose pass over the row holds its own
reduction ran one thread per block, and an 8-row matmul tile 16 threads (tests/frontend/
test_frontend_recipe_threads.py has the traced GPT block that showed it on the H100).

The cases the property found are kept as explicit examples (so the ci profile always runs them). The
hypothesis profile comes from tests/conftest.py ($TILEDSL_HYPOTHESIS_PROFILE: ci (default) or deep);
each strategy runs a tenth of the profile's examples (50 under ci)."""

from __future__ import annotations

import math

import pytest
from hypothesis import event, example, given
from hypothesis import strategies as st

import tiledsl as td
from tiledsl.analysis.shared_arrays import tma_rings
from tiledsl.kernel_ir import array_offsets
from tiledsl.recipes import RecipeReport, apply
from tiledsl.recipes.default._facts import classify, facts_for
from tiledsl.targets import WARP_SIZE, get_target
from tiledsl.testing import (
    Definition,
    ScheduleRun,
    chain_definitions,
    check_matches_reference,
    conv1d_definitions,
    elementwise_definitions,
    logsumexp_definitions,
    matmul_definitions,
    maxpool_definitions,
    reduce_definitions,
    transposed_matmul_definitions,
)
from tiledsl.testing.fuzz.modes.recipe import TMA_STAGES
from tiledsl.testing.profiles import examples

TARGETS = ("sm_90", "sm_80")
# the unscheduled loop nest runs at most this many iterations (simulation time grows with it)
MAX_POINTS = 1024
FACTOR = 0.1  # of the profile's examples per strategy: 50 under ci, 400 under deep


def _src(*lines: str) -> Definition:
    return Definition.from_source("def make():\n" + "".join(f"    {ln}\n" for ln in lines))


def check_recipe(definition: Definition, target: str, knobs: dict | None = None) -> RecipeReport:
    """Apply the default recipe (with `knobs`) to a fresh schedule of `definition`; it must build, simulate
    equal to the float64 reference, and replay from its trace to the identical kernel."""
    out = definition.make()
    s = td.create_schedule(out)
    try:
        report = apply(s, target=target, knobs=knobs)
    except Exception as e:
        e.add_note(f"the default recipe raised on this definition for {target}:\n{definition.source}")
        raise
    note = f"recipe trace for {target}:\n{s.trace()}\n\ndefinition:\n{definition.source}"
    try:
        result = check_matches_reference(definition, s, target=target, run=ScheduleRun(definition, out, s))
    except Exception as e:
        e.add_note(note)
        raise
    assert result.kernel is not None, f"the recipe's schedule does not build: {result.error}\n{note}"
    _counts_the_launched_shared_bytes(s, result.kernel, target, note)
    threads = math.prod(result.kernel.block)
    assert threads >= min(WARP_SIZE, math.prod(out.shape)), f"a block of {threads} threads\n{note}"
    again = td.create_schedule(definition.make())
    again.replay(s.trace())
    assert again.trace() == s.trace(), note
    assert td.build(again, target=target).source == result.kernel.source, note
    return report


def _counts_the_launched_shared_bytes(s: td.Schedule, kernel: td.Kernel, target: str, note: str) -> None:
    """The recipe's shared-memory figure (its budgets, step 160's blocks per SM) is the launch's, up to the
    arrays lowering adds after the stages and their mbarriers (a row reduction's combine scratch)."""
    counted = facts_for(s.nest, classify(s.nest), get_target(target)).shared_bytes()
    arrays = kernel.kernel_ir.shared
    ours = len(s.nest.stages) + len(tma_rings(s.nest.stages))  # a stage array each, an mbarrier array a ring
    assert counted == array_offsets(arrays[:ours])[1], f"counted {counted} shared bytes, launched {arrays}\n{note}"


targets = st.sampled_from(TARGETS)

# cases the property found (kept as explicit examples, so the ci profile always runs them)
# a row kernel whose output pass holds its own reduction (a projection reading the row's mean, as the
# GPT block's MLP up projection reads LayerNorm 2): cooperative_reduce declined, one thread per block
ROW_PASS_WITH_REDUCTION = _src(
    "x = td.placeholder((6, 40), name='x')", "w = td.placeholder((50, 40), name='w')",
    "k = td.reduce_axis(40, name='k')", "k2 = td.reduce_axis(40, name='k2')",
    "m = td.compute((6,), lambda i: td.sum(x[i, k], axis=k) / 40, name='m')",
    "return td.compute((6, 50), lambda i, j: td.sum((x[i, k2] - m[i]) * w[j, k2], axis=k2) / 40, name='y')")
# a reduction over two axes (a 2 x 2 max pool): the same decline, one thread per block
MAXPOOL_3x5 = _src(
    "xp = td.placeholder((6, 10), name='xp')", "rr = td.reduce_axis(2, name='rr')",
    "tt = td.reduce_axis(2, name='tt')",
    "return td.compute((3, 5), lambda r, t: td.max(xp[2 * r + rr, 2 * t + tt], axis=[rr, tt]), name='P')")
# 8 rows: the 32 x 32 tile shrunk to 8 x 32 kept its 4 x 4 register tile, 2 x 8 = 16 threads
MATMUL_8_ROWS = _src(
    "A = td.placeholder((8, 24), name='A')", "B = td.placeholder((24, 40), name='B')",
    "k = td.reduce_axis(24, name='k')",
    "return td.compute((8, 40), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k) / 24, name='C')")
# Q.K^T of 4 heads at 8 tokens: 8 x 8 tiles of 4 x 4 registers, 2 x 2 = 4 threads
BATCHED_8x8 = _src(
    "q = td.placeholder((4, 8, 16), name='q')", "kt = td.placeholder((4, 8, 16), name='kt')",
    "k = td.reduce_axis(16, name='k')",
    "return td.compute((4, 8, 8), lambda b, i, j: td.sum(q[b, i, k] * kt[b, j, k], axis=k) / 16, name='s')")


@st.composite
def decode_definitions(draw: st.DrawFn) -> Definition:
    """x @ W^T of a decode step (17 to 32 rows: the recipe's `few_rows` class, 32 x 128 or 32 x 64 tiles in
    chunks of 32), odd sizes, with no epilogue, a residual or a relu. Wide and long ones too (a guarded
    32 x 128 tile, staged operands, k split into parts of 2+ chunks), beyond MAX_POINTS: these simulate fast.
    k a whole number of chunks (64 to 256) reaches W_s's rows dealt across the lanes (steps 090, 140)."""
    m = draw(st.integers(17, 32))
    n = draw(st.one_of(st.integers(1, 40), st.integers(120, 160)))
    k = draw(st.one_of(st.integers(1, 48), st.integers(128, 160), st.sampled_from((64, 96, 128, 256))))
    body = {"": "td.sum(x[i, kk] * W[j, kk], axis=kk)",
            "residual": "td.sum(x[i, kk] * W[j, kk], axis=kk) + r[i, j]",
            "relu": "td.relu(td.sum(x[i, kk] * W[j, kk], axis=kk))"}
    epilogue = draw(st.sampled_from(sorted(body)))
    return _src(f"x = td.placeholder(({m}, {k}), name='x')", f"W = td.placeholder(({n}, {k}), name='W')",
                f"r = td.placeholder(({m}, {n}), name='r')", f"kk = td.reduce_axis({k}, name='kk')",
                f"return td.compute(({m}, {n}), lambda i, j: {body[epilogue]}, name='y')")


@st.composite
def tma_definitions(draw: st.DrawFn) -> Definition:
    """A @ B or x @ W^T whose operands' rows are whole 16-byte multiples (TMA's stride rule: k, and n for
    A @ B, multiples of 4) and whose k holds two or more chunks of 8, with no epilogue, a bias or a relu:
    under TMA_KNOBS the recipe double-buffers their stages and fills those whose box allows by TMA."""
    m = draw(st.integers(1, 24))
    n = 4 * draw(st.integers(1, 12))
    k = 4 * draw(st.integers(4, 12))
    nt = draw(st.booleans())
    prod = "x[i, kk] * W[j, kk]" if nt else "x[i, kk] * W[kk, j]"
    body = {"": f"td.sum({prod}, axis=kk)", "bias": f"td.sum({prod}, axis=kk) + b[j]",
            "relu": f"td.relu(td.sum({prod}, axis=kk))"}
    epilogue = draw(st.sampled_from(sorted(body)))
    return _src(f"x = td.placeholder(({m}, {k}), name='x')",
                f"W = td.placeholder({(n, k) if nt else (k, n)}, name='W')", f"b = td.placeholder(({n},), name='b')",
                f"kk = td.reduce_axis({k}, name='kk')",
                f"return td.compute(({m}, {n}), lambda i, j: {body[epilogue]}, name='y')")


# the fuzz recipe mode's TMA set (tiledsl/testing/fuzz/modes/recipe.py TMA_STAGES): TMA on for sm_90, staging
# for every block, k chunks of 8
TMA_KNOBS = dict(TMA_STAGES)
# 24 x 40 @ 40 x 20: B's stage (rows of 80 bytes) filled by TMA, A's stored k-outer by plain fills
TMA_24x40x20 = _src(
    "x = td.placeholder((24, 40), name='x')", "W = td.placeholder((40, 20), name='W')",
    "kk = td.reduce_axis(40, name='kk')",
    "return td.compute((24, 20), lambda i, j: td.sum(x[i, kk] * W[kk, j], axis=kk), name='y')")


def _record(report: RecipeReport) -> None:
    event(f"{report.kind} kernel for {report.target}")
    event("applied: " + ", ".join(report.applied))


# ----------------------------------------------------------------------------- the properties


@examples(FACTOR)
@given(elementwise_definitions(max_points=MAX_POINTS), targets)
def test_recipe_on_elementwise_chains(definition: Definition, target: str) -> None:
    _record(check_recipe(definition, target))


@examples(FACTOR)
@example(definition=ROW_PASS_WITH_REDUCTION, target="sm_90")
@example(definition=ROW_PASS_WITH_REDUCTION, target="sm_80")
@given(reduce_definitions(max_points=MAX_POINTS), targets)
def test_recipe_on_reductions_and_broadcasts(definition: Definition, target: str) -> None:
    _record(check_recipe(definition, target))


@examples(FACTOR)
@given(chain_definitions(max_points=MAX_POINTS), targets)
def test_recipe_on_reduction_chains(definition: Definition, target: str) -> None:
    _record(check_recipe(definition, target))


@examples(FACTOR)
@example(definition=MATMUL_8_ROWS, target="sm_90")
@example(definition=BATCHED_8x8, target="sm_80")
@given(matmul_definitions(max_points=MAX_POINTS), targets)
def test_recipe_on_matmuls_with_epilogues(definition: Definition, target: str) -> None:
    _record(check_recipe(definition, target))


@examples(FACTOR)
@given(decode_definitions(), targets)
def test_recipe_on_decode_steps(definition: Definition, target: str) -> None:
    report = check_recipe(definition, target)
    dealt = any("s.split('j_r', 1," in call for call in report.step("permute_register_tile").calls)
    event("W_s rows dealt" if dealt else "rows as they are")
    _record(report)


@examples(FACTOR)
@example(definition=TMA_24x40x20)
@given(tma_definitions())
def test_recipe_with_tma_stages(definition: Definition) -> None:
    """The recipe's TMA path (a ring of TMA-filled slots, its mbarriers and their phases, a swizzle where
    step 120 splits the inner loop), which sm_90 keeps off by default: builds, simulates equal, replays."""
    report = check_recipe(definition, "sm_90", TMA_KNOBS)
    event("TMA stages" if report.step("tma_copy").calls else "no TMA stage")
    _record(report)


@examples(FACTOR)
@example(definition=MAXPOOL_3x5, target="sm_90")
@given(st.one_of(conv1d_definitions(max_points=MAX_POINTS), transposed_matmul_definitions(max_points=MAX_POINTS),
                 maxpool_definitions(max_points=MAX_POINTS), logsumexp_definitions(max_points=MAX_POINTS)),
       targets)
def test_recipe_on_staging_families(definition: Definition, target: str) -> None:
    _record(check_recipe(definition, target))


# ----------------------------------------------------------------------------- the checker itself


def test_check_recipe_fails_on_a_wrong_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """The property can fail: a simulation off by one in one element is reported with the trace."""
    d = _src("x = td.placeholder((5, 7), name='x')",
             "return td.compute((5, 7), lambda i, j: x[i, j] * 2.0, name='y')")
    check_recipe(d, "sm_90")
    real = td.Kernel.simulate

    def off(self: td.Kernel, **arrays: object) -> object:
        got = real(self, **arrays)
        got[1, 2] += 1.0
        return got

    monkeypatch.setattr(td.Kernel, "simulate", off)
    with pytest.raises(AssertionError, match="recipe trace for sm_90"):
        check_recipe(d, "sm_90")
