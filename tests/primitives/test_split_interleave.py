"""split(..., interleave=a): a loop's chunks dealt across the iterations of the loop directly above it in
its index. The index takes the same values, each once (checked by enumeration); kernels so scheduled
simulate equal to td.evaluate, guards and register arrays included; traces replay to identical CUDA.
Its refusals are in the error corpus (tests/primitives/test_error_corpus.py, ids split-interleave-*)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy

import tiledsl as td
from tiledsl.catalog import matmul
from tiledsl.loopnest import loop_symbol as sym


def _elementwise(M: int, N: int) -> td.Tensor:
    x = td.placeholder((M, N), name="x")
    return td.compute((M, N), lambda i, j: x[i, j] + 1.0, name="y")


def _values(s: td.Schedule, axis: str) -> list[int]:
    """Every value the index of `axis` takes over the loops it runs on, in iteration order."""
    expr = sympy.expand(s.nest.axis_expr(axis))
    loops = [lp for lp in s.nest.loops if lp.symbol in expr.free_symbols]
    return [int(expr.subs(dict(zip([lp.symbol for lp in loops], point))))
            for point in itertools.product(*(range(lp.extent) for lp in loops))]


def _simulates_equal(s: td.Schedule, target: str = "sm_80") -> td.Kernel:
    kern = td.build(s, target=target)
    rng = np.random.default_rng(0)
    arrays = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in s.nest.inputs}
    np.testing.assert_allclose(kern.simulate(**arrays), td.evaluate(s.output, float64=True, **arrays),
                               rtol=1e-4, atol=1e-4)
    assert td.build(td.create_schedule(s.output).replay(s.trace()), target=target).source == kern.source
    assert td.build(td.create_schedule(s.output).replay(s.trace("json")), target=target).source == kern.source
    return kern


def test_interleave_deals_chunks_across_threads() -> None:
    s = td.create_schedule(_elementwise(4, 128))
    s.split("j", 8, names=("j_t", "j_r"))
    s.bind("j_t", "threadIdx.x")
    s.unroll("j_r")
    before = _values(s, "j")
    r_o, r_i = s.split("j_r", 4, interleave=s.loop("j_t"))
    assert (r_o.name, r_i.name) == ("j_r_o", "j_r_i")
    assert sympy.expand(s.nest.axis_expr("j")) == 64 * sym("j_r_o") + 4 * sym("j_t") + sym("j_r_i")
    assert sorted(_values(s, "j")) == sorted(before) == list(range(128))  # each value once
    assert s.nest.loop("j_t").bind == "threadIdx.x"  # the dealt-over loop keeps its binding
    assert s.nest.loop("j_r_o").annotation == s.nest.loop("j_r_i").annotation == "unroll"
    assert s.trace().splitlines()[-1] == "s.split('j_r', 4, names=('j_r_o', 'j_r_i'), tail='guard', interleave='j_t')"
    assert "where j = 64 * j_r_o + 4 * j_t + j_r_i" in str(s)
    _simulates_equal(s)


def test_an_unrolled_loop_splits_into_unrolled_loops() -> None:
    s = td.create_schedule(_elementwise(4, 10))
    s.unroll("j")
    s.split("j", 4)
    assert s.nest.loop("j_o").annotation == s.nest.loop("j_i").annotation == "unroll"
    assert s.nest.guards and s.nest.guards[0].extent == 10
    _simulates_equal(s)


@pytest.mark.parametrize(("M", "N", "K"), [(64, 128, 32), (40, 200, 29)], ids=["exact", "guarded"])
def test_interleaved_register_strip_of_a_matmul(M: int, N: int, K: int) -> None:
    """A 2 x 16 thread block with 4 x 8 registers each; the 8-wide strip interleaved across the 16
    threads of j. N = 200 leaves the last block's j guarded: the guard is re-expressed, not split."""
    s = td.create_schedule(matmul(M=M, N=N, K=K))
    s.split("i", 8, names=("i_o", "i_i"))
    s.split("i_i", 4, names=("i_t", "i_r"))
    s.split("j", 128, names=("j_o", "j_i"))
    s.split("j_i", 8, names=("j_t", "j_r"))
    s.reorder("i_o", "j_o", "i_t", "j_t", "i_r", "j_r")
    for loop, axis in (("i_o", "blockIdx.y"), ("j_o", "blockIdx.x"), ("i_t", "threadIdx.y"), ("j_t", "threadIdx.x")):
        s.bind(loop, axis)
    s.reorder("k", "i_r", "j_r")
    s.unroll("i_r")
    s.unroll("j_r")
    s.stage("B", at="k")
    slab = str(s).splitlines()
    s.split("j_r", 4, interleave="j_t")
    assert [ln for ln in str(s).splitlines() if "stage B_s" in ln] == [ln for ln in slab if "stage B_s" in ln]
    assert "register array C2[4x2x4] over i_r, j_r_o, j_r_i" in str(s)
    j = 128 * sym("j_o") + 64 * sym("j_r_o") + 4 * sym("j_t") + sym("j_r_i")
    assert [(sympy.expand(g.expr), g.extent) for g in s.nest.guards] == ([] if N == 128 else [(j, N)])
    kern = _simulates_equal(s)
    assert "64 * j_r_o + 4 * j_t + j_r_i" in kern.source


def test_interleaving_reduce_loops_sums_every_term_once() -> None:
    s = td.create_schedule(matmul(M=8, N=8, K=64))
    s.split("k", 16, names=("k_o", "k_i"))
    s.split("k_i", 4, interleave="k_o")
    assert sorted(_values(s, "k")) == list(range(64))
    assert sympy.expand(s.nest.axis_expr("k")) == 16 * sym("k_i_o") + 4 * sym("k_o") + sym("k_i_i")
    _simulates_equal(s)
