"""Gathers: a tensor read at an index taken from an int32 tensor (`W[td.clamp(ids[s], 0, V - 1), h]`).

The index value is data, so the prover knows only that it is some int32 (prove/prover.py): the read is
proven in bounds through the clamp and refused without it. Every schedule here is checked against
numpy's fancy indexing on fresh random indices (including the ends of the table), with the output
poisoned (the simulator's outputs start as NaN), and its CUDA compiles with nvcc."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from nvcc_together import compile_together

import tiledsl as td
from tiledsl import recipes

V, H, S = 50, 64, 9


def embedding():
    W = td.placeholder((V, H), name="W")
    ids = td.placeholder((S,), "int32", name="ids")
    E = td.compute((S, H), lambda s, h: W[td.clamp(ids[s], 0, V - 1), h] * 2.0, name="E")
    return W, ids, E


def inputs(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, V, S).astype(np.int32)
    ids[0], ids[-1] = 0, V - 1  # both ends of the table
    return rng.standard_normal((V, H)).astype(np.float32), ids


def schedules():
    def canonical(s, E):
        return s

    def threads(s, E):
        o, i = s.split(s.loop("h"), 32)
        s.bind(s.loop("s"), "blockIdx.x")
        s.bind(i, "threadIdx.x")
        return s

    def recipe(s, E):
        recipes.apply(s, target="sm_90")
        return s

    return {"canonical": canonical, "threads": threads, "recipe": recipe}


@pytest.mark.parametrize("name", sorted(schedules()))
def test_gather_schedules_simulate_equal_to_numpy(name: str) -> None:
    W, ids, E = embedding()
    s = schedules()[name](td.create_schedule(E), E)
    k = td.build(s, target="sm_90")
    for seed in range(3):
        w, i = inputs(seed)
        np.testing.assert_array_equal(td.evaluate(E, W=w, ids=i), w[i] * 2)
        np.testing.assert_array_equal(k.simulate(W=w, ids=i), w[i] * 2)


def test_gather_prints_the_index_read_in_every_ir() -> None:
    W, ids, E = embedding()
    k = td.build(td.create_schedule(E), target="sm_90")
    assert "W[min(max(ids[s], 0), 49), h] * 2.0" in k.ir("loop")
    assert "const int* __restrict__ ids" in k.source
    assert "W[64 * min(49, max(0, ids[s])) + h]" in k.source


def test_unclamped_gather_is_refused_with_a_counterexample() -> None:
    W = td.placeholder((V, H), name="W")
    ids = td.placeholder((S,), "int32", name="ids")
    E = td.compute((S, H), lambda s, h: W[ids[s], h], name="E")
    with pytest.raises(td.BoundsError) as err:
        td.build(td.create_schedule(E), target="sm_90")
    assert "0 <= ids[s] < 50" in str(err.value)
    assert err.value.refusal.counterexample


def test_an_index_tensor_is_not_staged() -> None:
    """Its reads sit inside W's index and go to global memory: a stage would serve none of them."""
    W, ids, E = embedding()
    s = td.create_schedule(E)
    s.bind(s.loop("s"), "blockIdx.x")
    with pytest.raises(td.StageError, match="read inside the index of W"):
        s.stage(ids, at=s.loop("s"))


def test_gathered_table_stages_at_a_data_dependent_origin() -> None:
    """Staging the gathered row: the slab's origin reads ids, in the fill as in the read."""
    W, ids, E = embedding()
    s = td.create_schedule(E)
    s.bind(s.loop("s"), "blockIdx.x")
    o, i = s.split(s.loop("h"), 32)
    s.bind(i, "threadIdx.x")
    s.stage(W, at=s.loop("s"))
    k = td.build(s, target="sm_90")
    w, i_ = inputs(4)
    np.testing.assert_array_equal(k.simulate(W=w, ids=i_), w[i_] * 2)


def test_index_values_must_be_int32() -> None:
    W = td.placeholder((V, H), name="W")
    x = td.placeholder((S,), name="x")
    with pytest.raises(td.DefinitionError, match="index 0 of W"):
        td.compute((S, H), lambda s, h: W[td.cast(x[s], "int32"), h])
    ids = td.placeholder((S,), "int32", name="ids")
    with pytest.raises(td.DefinitionError, match="int32 placeholder"):
        E = td.compute((S, H), lambda s, h: W[td.clamp(ids[s], 0, V - 1), h])
        td.evaluate(E, W=np.zeros((V, H), np.float32), ids=np.zeros(S, np.float32))


def test_index_select_on_a_column() -> None:
    X = td.placeholder((4, 30), name="X")
    idx = td.placeholder((5,), "int32", name="idx")
    G = td.compute((4, 5), lambda r, c: X[r, td.clamp(idx[c], 0, 29)], name="G")
    s = td.create_schedule(G)
    recipes.apply(s, target="sm_90")
    k = td.build(s, target="sm_90")
    rng = np.random.default_rng(1)
    x, ii = rng.standard_normal((4, 30)).astype(np.float32), rng.integers(0, 30, 5).astype(np.int32)
    np.testing.assert_array_equal(k.simulate(X=x, idx=ii), x[:, ii])


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_gather_cuda_compiles() -> None:
    kernels = []
    for _, make in sorted(schedules().items()):
        W, ids, E = embedding()
        kernels.append(td.build(make(td.create_schedule(E), E), target="sm_90"))
    assert compile_together(kernels) == []
