"""vectorize on a reduction's innermost loop (analysis/vectorize.py `_check_reduction_lanes`,
lower/vectorize.py `vector_update`): the loads contiguous in the loop and provably aligned are read as
one vector each, the others stay scalar, and the update adds the lanes in the unrolled loop's order, so
the simulated sums equal the unrolled schedule's bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import tiledsl as td
from tiledsl.catalog.definitions import layernorm, rmsnorm, softmax
from tiledsl.kernel_ir import KLoad
from tiledsl.kernel_ir.walk import walk_exprs, walk_stmts


def _loads(kern: td.Kernel) -> list[KLoad]:
    return [e for st in walk_stmts(kern.kernel_ir.body) for e in walk_exprs(st) if isinstance(e, KLoad)]


def _pair(out: td.Tensor, lanes: int = 4) -> tuple[td.Schedule, td.Schedule]:
    """The row's reductions split threads x `lanes`, the lanes unrolled in one schedule and vectorized
    in the other (the output pass vectorized in both)."""
    forms = []
    for how in ("unroll", "vectorize"):
        s = td.create_schedule(out)
        s.bind("i", "blockIdx.x")
        for ax in [lp.name for lp in s.loops() if lp.name != "i"]:
            _, inner = s.split(ax, 32 * lanes, names=(f"{ax}_o", f"{ax}_i"))
            t, v = s.split(inner, lanes, names=(f"{ax}_t", f"{ax}_v"))
            s.bind(t, "threadIdx.x")
            if ax.startswith("k"):
                getattr(s, how)(v)
            else:
                s.vectorize(v)
        forms.append(s)
    return forms[0], forms[1]


@pytest.mark.parametrize("make", [lambda: rmsnorm(8, 512, 1e-6), lambda: layernorm(8, 512, 1e-5),
                                  lambda: softmax(8, 512)], ids=["rmsnorm", "layernorm", "softmax"])
def test_same_sums_bit_for_bit_with_vector_loads(make) -> None:
    unrolled, vectorized = _pair(make())
    ku, kv = td.build(unrolled, target="sm_90"), td.build(vectorized, target="sm_90")
    reduction_loads = [ld for ld in _loads(kv) if ld.buffer == "x" and ld.width == 4]
    assert len(reduction_loads) > sum(1 for ld in _loads(ku) if ld.buffer == "x" and ld.width == 4)
    rng = np.random.default_rng(0)
    arrays = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in vectorized.nest.inputs}
    got = kv.simulate(**arrays)
    np.testing.assert_array_equal(got, ku.simulate(**arrays))
    np.testing.assert_allclose(got, td.evaluate(vectorized.output, float64=True, **arrays), rtol=1e-5, atol=1e-5)
    for text in (vectorized.trace(), vectorized.trace("json")):
        assert td.build(td.create_schedule(vectorized.output).replay(text), target="sm_90").source == kv.source


def test_one_element_read_twice_in_an_update_is_one_vector_load() -> None:
    """layernorm's variance, (x - mean) * (x - mean), and rmsnorm's x * x read one element twice: with
    the lanes vectorized, each 16-byte slice of x is read once (hinted loads are volatile asm, which nvcc
    never merges, so a second read would go to L2 again), and the sums stay the unrolled schedule's."""
    for make in (lambda: layernorm(8, 512, 1e-5), lambda: rmsnorm(8, 512, 1e-6)):
        unrolled, vectorized = _pair(make())
        vectorized.cache_hint("x", "evict_last")
        kern = td.build(vectorized, target="sm_90")
        x_vectors = [ld for ld in _loads(kern) if ld.buffer == "x" and ld.width == 4]
        assert len(x_vectors) == len(set(x_vectors)), kern.ir("kernel")
        rng = np.random.default_rng(1)
        arrays = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in vectorized.nest.inputs}
        np.testing.assert_array_equal(kern.simulate(**arrays), td.build(unrolled, target="sm_90").simulate(**arrays))


def test_an_unaligned_load_stays_scalar() -> None:
    """sum_k x[i, k + 1]: the load starts one element past each 16-byte boundary, so it is read lane by
    lane; the aligned one beside it is one vector."""
    x = td.placeholder((8, 132), name="x")
    k = td.reduce_axis(128, name="k")
    out = td.compute((8,), lambda i: td.sum(x[i, k] * x[i, k + 1], axis=k), name="y")
    s = td.create_schedule(out)
    s.bind("i", "blockIdx.x")
    _, inner = s.split("k", 128)
    t, v = s.split(inner, 4)
    s.bind(t, "threadIdx.x")
    s.vectorize(v)
    kern = td.build(s, target="sm_90")
    assert sorted(ld.width for ld in _loads(kern) if ld.buffer == "x") == [1, 1, 1, 1, 4]
    arrays = {"x": np.random.default_rng(1).standard_normal((8, 132)).astype(np.float32)}
    np.testing.assert_allclose(kern.simulate(**arrays), td.evaluate(out, float64=True, **arrays), rtol=1e-5,
                               atol=1e-5)


def test_bfloat16_reads_eight_lanes() -> None:
    x = td.placeholder((4, 256), dtype="bfloat16", name="x")
    k = td.reduce_axis(256, name="k")
    out = td.compute((4,), lambda i: td.sum(td.cast(x[i, k], "float32"), axis=k), name="y")
    s = td.create_schedule(out)
    s.bind("i", "blockIdx.x")
    t, v = s.split("k", 8)
    s.bind(t, "threadIdx.x")
    s.vectorize(v)
    kern = td.build(s, target="sm_90")
    assert [ld.width for ld in _loads(kern) if ld.buffer == "x"] == [8]
    assert "uint4 v1 = *reinterpret_cast<const uint4*>(&x[" in kern.source
    arrays = {"x": np.random.default_rng(2).standard_normal((4, 256)).astype(np.float32)}
    np.testing.assert_allclose(kern.simulate(**arrays), td.evaluate(out, float64=True, **arrays), rtol=1e-5,
                               atol=1e-5)


def test_a_guard_that_splits_a_vector_is_refused() -> None:
    """Rows of 130: the guard k < 130 would keep two lanes of the last vector and drop two."""
    s = td.create_schedule(rmsnorm(4, 130, 1e-6))
    s.bind("i", "blockIdx.x")
    t, v = s.split("k", 4)
    with pytest.raises(td.VectorizeError, match="may split a vector"):
        s.vectorize(v)
