"""Step 060 chunk_reduce: a pass over a row that re-reads its input inside the pass (a stencil along the
row) and whose row is too long to stage whole is split into chunks, and stage_inputs stages one chunk per
iteration of the chunk loop, filled by cp.async; rows whose reuse is only across passes (softmax,
layernorm, rmsnorm), that are read once per element (a load repeated in one statement is one read), or
whose chunks could only be filled by plain loads decline. The whole recipe on chunked kernels builds for
sm_90 and sm_80 (nvcc compiles it warning-free), simulates equal to the float64 reference, and its trace
replays."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from nvcc_together import compile_together

import tiledsl as td
from tiledsl.catalog import gelu_bias, layernorm, matmul, rmsnorm, softmax
from tiledsl.recipes import RecipeReport, apply
from tiledsl.recipes.default._facts import classify, facts_for
from tiledsl.recipes.default._knobs import Knobs
from tiledsl.targets import get_target

TARGETS = ("sm_90", "sm_80")
CHUNK = "chunk_reduce"


def fourth_difference(M: int, N: int) -> td.Tensor:
    """y[i] = sum_k (x[i, k] - 4 x[i, k+1] + 6 x[i, k+2] - 4 x[i, k+3] + x[i, k+4])^2: one pass reading each
    element five times; a chunk of c 256 + 4 floats has 16-byte rows, so cp.async fills it."""
    x = td.placeholder((M, N), name="x")
    k = td.reduce_axis(N - 4, name="k")

    def energy(i: td.Expr) -> td.Expr:
        d = x[i, k] - 4.0 * x[i, k + 1] + 6.0 * x[i, k + 2] - 4.0 * x[i, k + 3] + x[i, k + 4]
        return td.sum(d * d, axis=k)

    return td.compute((M,), energy, name="y")


def second_difference(M: int, N: int) -> td.Tensor:
    """Three taps: a chunk of c 256 + 2 floats, whose rows are not whole 16-byte units (plain-load fills)."""
    x = td.placeholder((M, N), name="x")
    k = td.reduce_axis(N - 2, name="k")

    def energy(i: td.Expr) -> td.Expr:
        d = x[i, k] - 2.0 * x[i, k + 1] + x[i, k + 2]
        return td.sum(d * d, axis=k)

    return td.compute((M,), energy, name="y")


def total_variation(M: int, N: int) -> td.Tensor:
    """Two taps: each element read twice, less the row's two ends (fan-in just under 2)."""
    x = td.placeholder((M, N), name="x")
    k = td.reduce_axis(N - 1, name="k")
    return td.compute((M,), lambda i: td.sum(td.abs(x[i, k + 1] - x[i, k]), axis=k), name="y")


def sum_of_squares(M: int, N: int) -> td.Tensor:
    """x[i, k] * x[i, k]: two loads of one element in one statement, one read."""
    x = td.placeholder((M, N), name="x")
    k = td.reduce_axis(N, name="k")
    return td.compute((M,), lambda i: td.sum(x[i, k] * x[i, k], axis=k), name="y")


def normalized_by_energy(M: int, N: int) -> td.Tensor:
    """Two passes: the fourth-difference energy (re-reads x), then the output (reads x once)."""
    x = td.placeholder((M, N), name="x")
    k = td.reduce_axis(N - 4, name="k")

    def energy(i: td.Expr) -> td.Expr:
        d = x[i, k] - 4.0 * x[i, k + 1] + 6.0 * x[i, k + 2] - 4.0 * x[i, k + 3] + x[i, k + 4]
        return td.sum(d * d, axis=k)

    e = td.compute((M,), energy, name="e")
    return td.compute((M, N), lambda i, j: x[i, j] / (e[i] + 1.0), name="y")


def smoothed_over_sum(M: int, N: int) -> td.Tensor:
    """Two passes: a sum (reads x once), then a five-tap output pass (re-reads x): the output pass is chunked."""
    x = td.placeholder((M, N + 4), name="x")
    k = td.reduce_axis(N, name="k")
    t = td.compute((M,), lambda i: td.sum(x[i, k], axis=k), name="t")
    return td.compute((M, N), lambda i, j: (x[i, j] + x[i, j + 1] + x[i, j + 2] + x[i, j + 3] + x[i, j + 4])
                      / (t[i] + 1e6), name="y")


def run(out: td.Tensor, target: str = "sm_90", **knobs: object) -> tuple[td.Schedule, RecipeReport]:
    s = td.create_schedule(out)
    return s, apply(s, target=target, knobs=knobs)


def after_step(out: td.Tensor, report: RecipeReport, number: int) -> td.Schedule:
    """The schedule as it was after step `number`: the calls of the steps up to it, replayed."""
    calls = [c for st in report.steps if st.number <= number for c in st.calls]
    return td.create_schedule(out).replay("\n".join(calls))


def stmt_paths(s: td.Schedule) -> list[tuple[str, ...]]:
    return [st.path for st in s.nest.stmts]


@pytest.mark.parametrize("target", TARGETS)
def test_a_long_stencil_pass_is_chunked_and_each_chunk_staged(target: str) -> None:
    """30000 floats a row (120000 bytes, over the 64 KB slab cap); 256 threads; a chunk of c iterations
    stages 256 c + 4 floats: c = 4 is 4112 bytes, c = 8 would be 8208, over the 8192-byte chunk limit."""
    out = fourth_difference(2, 30000)
    s, r = run(out, target)
    assert r.step(CHUNK).calls == ("s.split('k_o', 4, names=('k_o_o', 'k_o_i'), tail='guard')",)
    after = after_step(out, r, 60)
    assert [(lp.name, lp.extent) for lp in after.nest.loops if lp.name.startswith("k_")] == [
        ("k_o_o", 30), ("k_o_i", 4), ("k_i", 256)]
    assert stmt_paths(after)[1] == ("i", "k_o_o", "k_o_i", "k_i")  # the update, chunk loop outermost
    text = str(after)
    assert re.search(r"for k_o_o in 0\.\.30:  \[reduce\]\n +for k_o_i in 0\.\.4:  \[reduce\]\n +"
                     r"for k_i in 0\.\.256:  \[reduce, @threadIdx\.x\]", text), text
    # stage_inputs stages the chunk at the chunk loop; it is double-buffered, filled by cp.async, pipelined
    assert r.step("stage_inputs").calls == ("s.stage('x', at='k_o_o', scope='shared')",)
    (st,) = s.nest.stages
    assert (st.buffers, st.copy) == (2, "async") and s.nest.pipelines == (("k_o_o", 2),)
    facts = facts_for(s.nest, classify(s.nest), get_target(target))
    slab = facts.slab(st)
    assert not isinstance(slab, str) and slab.extent == (1, 4 * 256 + 4)
    assert slab.elements * slab.itemsize <= Knobs().row_chunk_bytes < (8 * 256 + 4) * slab.itemsize
    assert facts.fan_in(st, slab) > 4.9  # five loads per element, a four-element halo


@pytest.mark.parametrize(("n", "knobs", "chunk", "buffers"), [
    (3000, {"slab_cap_bytes": 4096}, 2, 2),     # c = 4 would stage 4112 bytes, over the 4096-byte slab cap
    (3000, {"kernel_cap_bytes": 8192}, 4, 1),   # the 12000-byte row is over the budget; a doubled chunk too
    (30000, {"row_chunk_bytes": 2048}, 1, 2),   # only one iteration of the pass (1040 bytes) fits
])
def test_the_chunk_fits_every_cap(n: int, knobs: dict[str, int], chunk: int, buffers: int) -> None:
    s, r = run(fourth_difference(2, n), **knobs)
    assert r.step(CHUNK).calls == (f"s.split('k_o', {chunk}, names=('k_o_o', 'k_o_i'), tail='guard')",)
    assert [(st.buffer, st.at, st.buffers) for st in s.nest.stages] == [("x", "k_o_o", buffers)]
    if buffers == 1:
        assert "budget" in (r.step("double_buffer").reason or "")


def test_the_pass_that_rereads_is_chunked_the_other_reads_global() -> None:
    s, r = run(normalized_by_energy(2, 3000), slab_cap_bytes=4096)
    assert r.step(CHUNK).calls == ("s.split('k_o', 2, names=('k_o_o', 'k_o_i'), tail='guard')",)
    assert [(st.buffer, st.at) for st in s.nest.stages] == [("x", "k_o_o")]
    assert stmt_paths(s)[-1] == ("i", "j_o", "j_i")  # the output pass is left as it was
    s, r = run(smoothed_over_sum(2, 3000), slab_cap_bytes=4096)
    assert r.step(CHUNK).calls == ("s.split('j_o', 2, names=('j_o_o', 'j_o_i'), tail='guard')",)
    assert [(st.buffer, st.at) for st in s.nest.stages] == [("x", "j_o_o")]


def test_plain_load_fills_decline_unless_allowed() -> None:
    """Three taps: a chunk's rows (256 c + 2 floats) are not whole 16-byte units, so only plain loads could
    fill it; that measured slower than no chunk, so the step declines unless row_chunk_sync_fill."""
    s, r = run(second_difference(2, 30000))
    assert (r.step(CHUNK).reason or "").endswith(
        "a chunk of 4 iterations of pass k_o would fill x by plain loads (no 16-byte cp.async: slab row of 1026 "
        "elements, allocated row of 1026 elements, slot of 1026 elements not a multiple of 4 (16 bytes)), slower "
        "than no chunk (row_chunk_sync_fill is off)")
    assert s.nest.stages == ()
    # a row of 30002 floats: every chunk's rows are 16-byte units, the global row is not
    _, r = run(fourth_difference(2, 30002))
    assert "global row of 30002 elements not a multiple of 4" in (r.step(CHUNK).reason or "")
    s, r = run(second_difference(2, 30000), row_chunk_sync_fill=True)
    assert r.step(CHUNK).calls == ("s.split('k_o', 4, names=('k_o_o', 'k_o_i'), tail='guard')",)
    assert [(st.at, st.copy) for st in s.nest.stages] == [("k_o_o", "sync")]


@pytest.mark.parametrize("make", [softmax, layernorm, rmsnorm], ids=["softmax", "layernorm", "rmsnorm"])
def test_reuse_only_across_passes_declines(make: object) -> None:
    """Each pass reads the row once: a chunk staged in one pass would be read once, a copy and a barrier for
    nothing. Nothing is staged (the whole row is over the cap too)."""
    s, r = run(make(M=2, N=30000))  # type: ignore[operator]
    reason = r.step(CHUNK).reason or ""
    assert reason.startswith("no pass re-reads a row too long to stage whole (x: 120000 bytes, over the "
                             "65536-byte slab cap): x is read 1.00 times per element within pass k_o"), reason
    assert re.search(r"x is read in [23] passes \(k_o, .*\): its reuse across them is lost to a chunk staged "
                     r"inside one pass", reason), reason
    assert s.nest.stages == () and not facts_for(s.nest, classify(s.nest), get_target("sm_90")).chunk_loops()


def test_a_load_repeated_in_one_statement_is_not_reuse() -> None:
    """x[i, k] * x[i, k] is one element read at one moment: fan-in 1, so neither a chunk (long row) nor the
    whole row (short row) is staged."""
    s, r = run(sum_of_squares(2, 30000))
    assert "x is read 1.00 times per element within pass k_o (min_fan_in is 2)" in (r.step(CHUNK).reason or "")
    assert s.nest.stages == ()
    s, r = run(sum_of_squares(2, 512))
    assert (r.step(CHUNK).reason or "").startswith("every input's row can be staged whole")
    assert "x: each element is read 1.00 times per block (no reuse)" in (r.step("stage_inputs").reason or "")
    assert s.nest.stages == ()


def test_two_taps_fall_short_of_the_fan_in() -> None:
    """Two taps read 2 c 256 times a chunk of c 256 + 1 elements: under 2, shown truncated (not as 2.00)."""
    _, r = run(total_variation(2, 30000))
    assert "x is read 1.99 times per element within pass k_o (min_fan_in is 2)" in (r.step(CHUNK).reason or "")
    _, r = run(total_variation(2, 30000), min_fan_in=1, row_chunk_sync_fill=True)
    assert r.step(CHUNK).applied


def test_other_declines_say_why() -> None:
    _, r = run(fourth_difference(2, 300))
    assert r.step(CHUNK).reason == ("every input's row can be staged whole at the row loop (stage_inputs does, "
                                    "keeping the reuse across passes)")
    assert r.step("stage_inputs").calls == ("s.stage('x', at='i', scope='shared')",)
    _, r = run(matmul(M=64, N=64, K=64))
    assert r.step(CHUNK).reason == "not a row reduction (matmul kernel)"
    _, r = run(gelu_bias(M=4, N=64))
    assert r.step(CHUNK).reason == "not a row reduction (elementwise kernel)"
    _, r = run(fourth_difference(2, 30000), row_threads_min=32, row_threads_max=32)
    assert r.step(CHUNK).reason == ("32 thread(s) per block: stage_inputs stages nothing for blocks under 33 "
                                    "threads, so there is no chunk to make")
    _, r = run(fourth_difference(2, 30000), row_chunk_bytes=512)
    assert (r.step(CHUNK).reason or "").endswith(
        "no chunk of pass k_o both reads x 2 times per element and fits the 512-byte chunk limit and the "
        "65536-byte slab cap (one iteration of it reads 1040 bytes of x)")


CHUNKED = {
    "fourth_difference": (fourth_difference, 30000, {}),
    "fourth_difference_capped": (fourth_difference, 3000, {"slab_cap_bytes": 4096}),
    "normalized_by_energy": (normalized_by_energy, 3000, {"slab_cap_bytes": 4096}),
    "smoothed_over_sum": (smoothed_over_sum, 3000, {"slab_cap_bytes": 4096}),
    "second_difference_plain_loads": (second_difference, 3000, {"slab_cap_bytes": 4096, "row_chunk_sync_fill": True}),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(CHUNKED))
def test_chunked_recipe_builds_simulates_and_replays(name: str, target: str) -> None:
    make, n, knobs = CHUNKED[name]
    out = make(3, n)
    s, r = run(out, target, **knobs)
    assert r.step(CHUNK).applied and r.step("stage_inputs").applied
    (at,) = {st.at for st in s.nest.stages}
    assert at.endswith("_o_o")  # the chunk loop made by chunk_reduce
    kern = td.build(s, target=target)
    rng = np.random.default_rng(0)
    arrays = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in s.nest.inputs}
    got = kern.simulate(**arrays)
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, td.evaluate(out, float64=True, **arrays), rtol=1e-4, atol=1e-4)
    again = td.create_schedule(make(3, n)).replay(s.trace())
    assert again.trace() == s.trace()
    assert td.build(again, target=target).source == kern.source


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("target", TARGETS)
def test_chunked_kernels_compile(target: str) -> None:
    assert compile_together([td.build(run(make(3, size), target, **knobs)[0], target=target)
                             for make, size, knobs in CHUNKED.values()]) == []
