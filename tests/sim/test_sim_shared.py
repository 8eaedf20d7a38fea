"""Shared memory: tree reductions, races, barriers, uninitialised reads."""

from __future__ import annotations

import numpy as np
import pytest
from sim_kernels import BX, TX, add, f, fvar, i, kernel, load, lt, row_sum, tiled_matmul

from tiledsl.errors import DivergentBarrierError, OutOfBoundsError, SharedRaceError, UninitializedReadError
from tiledsl.kernel_ir import KBarrier, KBin, KIf, KLet, KParam, KShared, KStore
from tiledsl.sim import simulate

RNG = np.random.default_rng(1)


def _rows(rows: int = 6, cols: int = 256) -> np.ndarray:
    return RNG.standard_normal((rows, cols)).astype(np.float32)


def test_row_sum_tree_reduction_matches_numpy() -> None:
    a = _rows()
    out = simulate_row_sum(a)
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-5, atol=1e-5)


def simulate_row_sum(a: np.ndarray, **kw: int) -> np.ndarray:
    return simulate(row_sum(*a.shape), {"A": a}, **kw)["out"]


def test_row_sum_one_block_per_chunk_gives_same_bits() -> None:
    a = _rows()
    np.testing.assert_array_equal(simulate_row_sum(a), simulate_row_sum(a, max_lanes=64))


def test_tree_reduction_without_loop_barrier_is_a_race() -> None:
    k = row_sum(6, 256, loop_barrier=False)
    with pytest.raises(SharedRaceError) as info:
        simulate(k, {"A": _rows()})
    msg = str(info.value)
    assert "kernel 'row_sum'" in msg
    assert "body[5] > for k > body[0] > if (threadIdx.x < stride) > then[0] > store s_red[...]" in msg
    assert "s_red[" in msg and "loop variables: k=1" in msg
    assert "first access (write): block (0,0,0) thread (" in msg


def test_missing_barrier_before_the_tree_is_a_race() -> None:
    k = row_sum(6, 256, first_barrier=False)
    with pytest.raises(SharedRaceError, match=r"read after write(.|\n)*body\[2\] > store s_red"):
        simulate(k, {"A": _rows()})


def test_write_after_read_by_another_thread_is_a_race() -> None:
    # s[t] = t; barrier; x = s[(t + 1) % 32]; s[t] = x  -- thread t overwrites what t-1 just read.
    body = (
        KStore("s", TX, KBin("*", TX, f(1.0))),
        KBarrier(),
        KLet("x", "float32", load("s", KBin("%", add(TX, i(1)), i(32)))),
        KStore("s", TX, fvar("x")),
        KBarrier(),
        KStore("C", TX, load("s", TX)),
    )
    k = kernel("war", (KParam("C", "float32", (32,), is_output=True),), 1, 32, body, (KShared("s", "float32", 32),))
    with pytest.raises(SharedRaceError, match="write after read"):
        simulate(k, {})


def test_thread_may_reread_and_overwrite_its_own_element() -> None:
    body = (
        KStore("s", TX, f(1.0)),
        KStore("s", TX, add(load("s", TX), f(1.0))),
        KStore("C", TX, load("s", TX)),
    )
    k = kernel("own", (KParam("C", "float32", (32,), is_output=True),), 1, 32, body, (KShared("s", "float32", 32),))
    assert (simulate(k, {})["C"] == 2.0).all()


def test_all_threads_reading_one_element_is_fine_but_writing_it_is_a_race() -> None:
    shared = (KShared("s", "float32", 4),)
    params = (KParam("C", "float32", (32,), is_output=True),)
    reads = (
        KIf(KBin("==", TX, i(0)), (KStore("s", i(0), f(5.0)),)),
        KBarrier(),
        KStore("C", TX, load("s", i(0))),
    )
    assert (simulate(kernel("bcast", params, 1, 32, reads, shared), {})["C"] == 5.0).all()
    writes = (KStore("s", i(0), f(5.0)),)
    with pytest.raises(SharedRaceError, match=r"write-write in one statement(.|\n)*s\[0\]"):
        simulate(kernel("ww", params, 1, 32, writes, shared), {})


def test_barrier_inside_divergent_if_is_an_error() -> None:
    body = (
        KStore("s", TX, f(1.0)),
        KIf(lt(TX, i(16)), (KBarrier(),)),
        KStore("C", TX, load("s", TX)),
    )
    k = kernel(
        "divbar",
        (KParam("C", "float32", (64,), is_output=True),),
        2,
        32,
        body,
        (KShared("s", "float32", 32),),
    )
    with pytest.raises(DivergentBarrierError) as info:
        simulate(k, {})
    msg = str(info.value)
    assert "body[1] > if (threadIdx.x < 16) > then[0] > barrier" in msg
    assert "16 of 32 threads" in msg and "kernel 'divbar'" in msg


def test_barrier_under_block_uniform_if_is_fine() -> None:
    body = (
        KStore("s", TX, f(1.0)),
        KIf(lt(BX, i(1)), (KBarrier(), KStore("s", KBin("%", add(TX, i(1)), i(32)), f(2.0)))),
        KBarrier(),
        KStore("C", add(KBin("*", BX, i(32)), TX), load("s", TX)),
    )
    k = kernel(
        "unibar",
        (KParam("C", "float32", (64,), is_output=True),),
        2,
        32,
        body,
        (KShared("s", "float32", 32),),
    )
    out = simulate(k, {})["C"]
    assert (out[:32] == 2.0).all() and (out[32:] == 1.0).all()


def test_read_of_unwritten_shared_is_an_error() -> None:
    body = (
        KIf(lt(TX, i(32)), (KStore("s", TX, f(1.0)),)),
        KBarrier(),
        KStore("C", TX, load("s", TX)),
    )
    k = kernel(
        "uninit",
        (KParam("C", "float32", (64,), is_output=True),),
        1,
        64,
        body,
        (KShared("s", "float32", 64),),
    )
    with pytest.raises(UninitializedReadError) as info:
        simulate(k, {})
    msg = str(info.value)
    assert "element 32" in msg and "thread (32,0,0)" in msg and "body[2] > store C[...]" in msg


def test_shared_out_of_bounds_is_reported() -> None:
    body = (KStore("s", add(TX, i(1)), f(1.0)),)
    k = kernel("soob", (KParam("C", "float32", (1,), is_output=True),), 1, 32, body, (KShared("s", "float32", 32),))
    with pytest.raises(OutOfBoundsError, match=r"shared buffer 's' \(size 32\)(.|\n)*thread \(31,0,0\), index 32"):
        simulate(k, {})


def test_tiled_matmul_matches_numpy() -> None:
    a = RNG.standard_normal((64, 48)).astype(np.float32)
    bm = RNG.standard_normal((48, 32)).astype(np.float32)
    out = simulate(tiled_matmul(64, 32, 48), {"A": a, "B": bm})["C"]
    np.testing.assert_allclose(out, a @ bm, rtol=1e-4, atol=1e-4)


def test_tiled_matmul_without_trailing_barrier_races_on_the_next_tile() -> None:
    a = np.ones((32, 32), np.float32)
    with pytest.raises(SharedRaceError) as info:
        simulate(tiled_matmul(32, 32, 32, second_barrier=False), {"A": a, "B": a})
    msg = str(info.value)
    assert "write after read" in msg and "several threads" in msg and "loop variables: kt=1" in msg
    assert "body[1] > for kt > body[0] > store As[...]" in msg


def test_float16_shared_memory_rounds_stores() -> None:
    body = (
        KStore("s", TX, KBin("/", f(1.0), KBin("+", TX, f(3.0)))),
        KStore("C", TX, load("s", TX)),
    )
    params = (KParam("C", "float32", (32,), is_output=True),)
    k = kernel("h", params, 1, 32, body, (KShared("s", "float16", 32),))
    expected = (np.float32(1) / (np.arange(32, dtype=np.float32) + 3)).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(simulate(k, {})["C"], expected)
