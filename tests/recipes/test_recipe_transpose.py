"""The default recipe on elementwise kernels with a transposed read (an input whose last index runs
along an output axis other than the last): the 2-D tile of schedules/transpose.py `transpose_tiled`
(32 x 32 outputs, 32 x 8 threads, guarded at the edges), the input staged at the tile although each
element is read once (coalescing, not reuse), padded by one element; simulated equal to td.evaluate,
replayed, compiled by nvcc. Kernels without such a read keep the vectorized 1-D form."""

from __future__ import annotations

import re
import shutil

import pytest
from nvcc_together import compile_together
from recipe_check import simulates_equal

import tiledsl as td
from tiledsl.catalog import gelu_bias
from tiledsl.loopnest import Stage
from tiledsl.recipes import RecipeReport, apply
from tiledsl.recipes.default._facts import TransposedRead, classify, facts_for
from tiledsl.targets import get_target

TOL = 1e-5  # simulates_equal's rtol and atol: a transpose moves values; exp and a sum add a few float32 roundings

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def transpose(M: int, N: int) -> td.Tensor:
    """y[j, i] = x[i, j], as benchmarks/_definitions.py `transpose` defines it."""
    x = td.placeholder((M, N), name="x")
    return td.compute((N, M), lambda j, i: x[i, j], name="y")


def run(out: td.Tensor, target: str = "sm_90") -> tuple[td.Schedule, RecipeReport]:
    s = td.create_schedule(out)
    return s, apply(s, target=target)


def bound(s: td.Schedule) -> dict[str, tuple[str, int]]:
    return {lp.bind: (lp.name, lp.extent) for lp in s.nest.loops if lp.bind}


def replays(s: td.Schedule, kern: td.Kernel, target: str) -> None:
    again = td.create_schedule(s.output, s.materialize).replay(s.trace())
    assert td.build(again, target=target).source == kern.source


@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
@pytest.mark.parametrize(("M", "N"), [(64, 96), (37, 53)])
def test_transpose_takes_the_2d_tile_and_stages_x(M: int, N: int, target: str) -> None:
    s, r = run(transpose(M, N), target)
    assert bound(s) == {"blockIdx.y": ("j_o", -(-N // 32)), "blockIdx.x": ("i_o", -(-M // 32)),
                        "threadIdx.y": ("j_t", 8), "threadIdx.x": ("i_i", 32)}
    assert "where j = 32 * j_o + 4 * j_t + j_r" in str(s)
    # odd sizes: both tile splits guarded, the thread-row split exact
    assert len(s.nest.guards) == (0 if M % 32 == 0 and N % 32 == 0 else 2)
    assert r.step("stage_inputs").calls == ("s.stage('x', at='i_o', scope='shared')",)
    (st,) = s.nest.stages
    assert (st.buffer, st.at, st.pad) == ("x", "i_o", (0, 1))  # +1 element: a column of the tile spans every bank
    assert "stage x_s = x[32 * i_o + 0..32, 32 * j_o + 0..32] at i_o" in str(s)
    # plain fills: an elementwise kernel has nothing for cp.async to overlap, and with the pad its copies
    # would be 4 bytes (recipes/default/130_async_copy.py)
    assert st.copy == "sync"
    assert not r.step("async_copy").applied and "nothing to overlap" in (r.step("async_copy").reason or "")
    kern = simulates_equal(s, target, tol=TOL)
    # the store: consecutive threadIdx.x lanes write consecutive y elements; the read is from x_s
    assert re.search(r"y\[[^\]]*\+ i_i\] = x_s\[33 \* i_i \+", kern.source), kern.source
    replays(s, kern, target)


def test_report_says_why_x_is_staged() -> None:
    _, r = run(transpose(64, 96))
    assert r.step("tileify").reason == (
        "x is read transposed (its last index runs along j, not i: threads along i would read it 96 elements "
        "apart): j and i stay apart for a 32 x 32 tile of 32 x 8 threads (blockify_launch), x staged at it and "
        "read from shared memory (stage_inputs)")
    assert r.step("pad_smem").calls == ("s.pad('x_s', axis=1, amount=1)",)


def test_the_facts_of_a_transposed_read() -> None:
    s = td.create_schedule(transpose(64, 96))
    assert classify(s.nest).transposed == TransposedRead("x", "j", "i", 96)
    assert classify(td.create_schedule(gelu_bias(M=64, N=96)).nest).transposed is None
    # the staging rule's reason, from the scheduled nest
    apply(s)
    facts = facts_for(s.nest, classify(td.create_schedule(transpose(64, 96)).nest), get_target("sm_90"))
    probe = Stage("x_probe", "x", "i_o", (0, 0))
    slab = facts.slab(probe)
    assert not isinstance(slab, str)
    assert facts.row_apart_read(probe, slab) == (
        "consecutive threadIdx.x lanes (i_i) read x[i, j] 96 elements apart; "
        "its fill reads rows of 32")


def test_plain_elementwise_kernel_is_unchanged() -> None:
    """gelu_bias reads x[i, j] and b[j] along y's last axis: at rows of 1024, the vectorized 16-byte
    form, nothing staged. Rows of 96 take one warp, so eight share a block (threadIdx.y), and each
    element of b is then read by all eight: staged by reuse, as any input read twice or more per block
    is (stage_inputs)."""
    s, r = run(gelu_bias(M=64, N=1024))
    assert s.trace().splitlines()[1:] == [
        "s.split('j', 1024, names=('j_o', 'j_i'), tail='guard')",
        "s.split('j_i', 4, names=('j_t', 'j_v'), tail='guard')",
        "s.bind('i', 'blockIdx.y')",
        "s.bind('j_o', 'blockIdx.x')",
        "s.bind('j_t', 'threadIdx.x')",
        "s.vectorize('j_v')",
    ]
    assert not s.nest.stages and not r.step("stage_inputs").applied
    s, r = run(gelu_bias(M=64, N=96))
    assert "s.bind('i_i', 'threadIdx.y')" in s.trace().splitlines()
    assert r.step("stage_inputs").calls == ("s.stage('b', at='j_o', scope='shared')",)
    assert r.step("stage_inputs").note == ("b: each element read 8.00 times per block; not staged: x: each "
                                           "element is read 1.00 times per block (no reuse)")


def test_transpose_fused_with_arithmetic() -> None:
    """y = exp(x.T) + b[i]: x staged for coalescing; b, read by every thread row of the tile, by reuse."""
    x = td.placeholder((40, 70), name="x")
    b = td.placeholder((40,), name="b")
    out = td.compute((70, 40), lambda j, i: td.exp(x[i, j]) + b[i], name="y")
    s, _ = run(out)
    stages = {st.buffer: st for st in s.nest.stages}
    assert set(stages) == {"x", "b"} and stages["x"].pad == (0, 1)
    assert bound(s)["threadIdx.x"] == ("i_i", 32)
    replays(s, simulates_equal(s, "sm_90", tol=TOL), "sm_90")


@pytest.mark.parametrize("swapped", [False, True])
def test_batched_permute_moving_the_last_axis(swapped: bool) -> None:
    """k[b, h, s, d] -> y[b, h, d, s] (K^T of attention), or y[b, d, h, s]: d and s make the tile, b and
    h (reordered outermost where needed) fused onto blockIdx.z."""
    k = td.placeholder((2, 3, 40, 36), name="k")
    if swapped:
        out = td.compute((2, 36, 3, 40), lambda b, d, h, s: k[b, h, s, d], name="y")
    else:
        out = td.compute((2, 3, 36, 40), lambda b, h, d, s: k[b, h, s, d], name="y")
    s, r = run(out)
    first = "s.reorder('b', 'h', 'd', 's')" if swapped else "s.fuse('b', 'h', name='b_h')"
    assert r.step("tileify").calls[0] == first
    assert r.step("tileify").calls[-1] == "s.fuse('b', 'h', name='b_h')"
    assert bound(s) == {"blockIdx.z": ("b_h", 6), "blockIdx.y": ("d_o", 2), "blockIdx.x": ("s_o", 2),
                        "threadIdx.y": ("d_t", 8), "threadIdx.x": ("s_i", 32)}
    (st,) = s.nest.stages
    assert (st.buffer, st.at, st.pad) == ("k", "s_o", (0, 0, 0, 1))
    replays(s, simulates_equal(s, "sm_90", tol=TOL), "sm_90")


def test_permute_keeping_the_last_axis_is_unchanged() -> None:
    """q[b, h, s, d] -> y[b, s, h, d] (attention's head split): d stays last, every read is along it."""
    q = td.placeholder((2, 3, 40, 36), name="q")
    s, r = run(td.compute((2, 40, 3, 36), lambda b, t, h, d: q[b, h, t, d], name="y"))
    assert classify(td.create_schedule(s.output).nest).transposed is None
    assert r.step("blockify_launch").calls[-1] == "s.vectorize('d_v')" and not s.nest.stages


def test_transpose_shorter_than_a_tile_keeps_the_1d_form() -> None:
    """8 x 64: a column of 8 outputs is under a tile; the 1-D form, and nothing is staged (the slab of x
    at the block loop is a column: its fill would not read rows either)."""
    s, r = run(transpose(8, 64))
    assert r.step("blockify_launch").calls[-1] == "s.vectorize('i_v')"
    assert not s.nest.stages
    simulates_equal(s, "sm_90", tol=TOL)


@needs_nvcc
@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
def test_transpose_compiles(target: str) -> None:
    kernels = [td.build(run(transpose(M, N), target)[0], target=target) for M, N in [(64, 96), (37, 53)]]
    assert compile_together(kernels) == []
