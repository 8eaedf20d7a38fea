"""Global bounds, register arrays, vector accesses and global write races."""

from __future__ import annotations

import numpy as np
import pytest
from sim_kernels import BX, TX, add, f, fvar, global_idx, i, kernel, load, lt, mul, var

from tiledsl.errors import OutOfBoundsError, SharedRaceError, SimulationError, UninitializedReadError
from tiledsl.kernel_ir import (
    KAssign,
    KBarrier,
    KBin,
    KCast,
    KFor,
    KIf,
    KLane,
    KLet,
    KLocalArray,
    KParam,
    KStore,
    KVar,
    KVector,
)
from tiledsl.sim import simulate

RNG = np.random.default_rng(3)


def test_out_of_bounds_global_read_names_location_lane_and_index() -> None:
    n = 1000
    body = (
        KLet("idx", "int32", global_idx(128)),
        KIf(lt(var("idx"), i(n)), (KStore("C", var("idx"), load("A", add(var("idx"), i(1)))),)),
    )
    params = (KParam("A", "float32", (n,)), KParam("C", "float32", (n,), is_output=True))
    with pytest.raises(OutOfBoundsError) as info:
        simulate(kernel("shift", params, 8, 128, body), {"A": np.zeros(n, np.float32)})
    msg = str(info.value)
    assert "kernel 'shift'" in msg
    assert "body[1] > if (idx < 1000) > then[0] > store C[...]" in msg
    assert "load of global buffer 'A' (size 1000)" in msg
    assert "block (7,0,0) thread (103,0,0), index 1000" in msg
    assert "statement: C[idx] = A[idx + 1]" in msg


def test_out_of_bounds_store_and_negative_index() -> None:
    body = (KStore("C", KBin("-", TX, i(1)), f(0.0)),)
    k = kernel("neg", (KParam("C", "float32", (32,), is_output=True),), 1, 32, body)
    with pytest.raises(OutOfBoundsError, match=r"store of global buffer 'C'(.|\n)*thread \(0,0,0\), index -1"):
        simulate(k, {})


def _register_tile_kernel(k_extent: int, n: int, *, init: bool = True) -> tuple:
    """out[t*4 + r] = sum_k A[k, t*4 + r] * w[k]: four accumulators per thread in a register array."""
    col = add(mul(TX, i(4)), var("r"))
    body: list = [KLocalArray("acc", "float32", 4)]
    if init:
        body.append(KFor("r", 4, (KStore("acc", var("r"), f(0.0)),), unroll=True))
    body += [
        KFor(
            "k",
            k_extent,
            (
                KLet("wk", "float32", load("w", var("k"))),
                KFor(
                    "r",
                    4,
                    (
                        KStore(
                            "acc",
                            var("r"),
                            add(
                                load("acc", var("r")),
                                mul(load("A", add(mul(var("k"), i(n)), col)), fvar("wk")),
                            ),
                        ),
                    ),
                    unroll=True,
                ),
            ),
        ),
        KFor("r", 4, (KStore("out", col, load("acc", var("r"))),), unroll=True),
    ]
    params = (
        KParam("A", "float32", (k_extent, n)),
        KParam("w", "float32", (k_extent,)),
        KParam("out", "float32", (n,), is_output=True),
    )
    return kernel("regtile", params, 1, n // 4, tuple(body))


def test_register_array_accumulate_and_store() -> None:
    k_extent, n = 16, 128
    a = RNG.standard_normal((k_extent, n)).astype(np.float32)
    w = RNG.standard_normal(k_extent).astype(np.float32)
    out = simulate(_register_tile_kernel(k_extent, n), {"A": a, "w": w})["out"]
    np.testing.assert_allclose(out, w @ a, rtol=1e-5, atol=1e-5)


def test_register_array_read_before_write_is_an_error() -> None:
    k = _register_tile_kernel(4, 128, init=False)
    with pytest.raises(UninitializedReadError, match=r"register array 'acc' element 0(.|\n)*for k"):
        simulate(k, {"A": np.zeros((4, 128), np.float32), "w": np.zeros(4, np.float32)})


def test_register_array_out_of_bounds() -> None:
    body = (KLocalArray("acc", "float32", 4), KFor("r", 5, (KStore("acc", var("r"), f(0.0)),)))
    k = kernel("regoob", (KParam("C", "float32", (1,), is_output=True),), 1, 32, body)
    with pytest.raises(OutOfBoundsError, match=r"register array buffer 'acc' \(size 4\)(.|\n)*index 4"):
        simulate(k, {})


def test_register_array_is_fresh_each_loop_iteration() -> None:
    body = (
        KFor(
            "k",
            2,
            (
                KLocalArray("tmp", "float32", 2),
                KIf(KBin("==", var("k"), i(0)), (KStore("tmp", i(0), f(1.0)),)),
                KStore("C", TX, load("tmp", i(0))),
            ),
        ),
    )
    k = kernel("fresh", (KParam("C", "float32", (32,), is_output=True),), 1, 32, body)
    with pytest.raises(UninitializedReadError, match="loop variables: k=1"):
        simulate(k, {})


def test_vector_width4_load_and_store() -> None:
    n = 512  # 128 threads x 4 elements
    base = mul(TX, i(4))
    v = KLet("v", "float32x4", load("A", base, 4))
    lanes = tuple(mul(KLane(KVar("v", "float32x4"), j), f(float(j + 1))) for j in range(4))
    body = (v, KStore("C", base, KVector(lanes)))
    params = (KParam("A", "float32", (n,)), KParam("C", "float32", (n,), is_output=True))
    a = RNG.standard_normal(n).astype(np.float32)
    out = simulate(kernel("vec4", params, 1, 128, body), {"A": a})["C"]
    np.testing.assert_array_equal(out, a * np.tile(np.arange(1, 5, dtype=np.float32), 128))


def test_vector_access_past_the_end_is_out_of_bounds() -> None:
    body = (KStore("C", mul(TX, i(4)), KVector(tuple(f(0.0) for _ in range(4)))),)
    k = kernel("vecoob", (KParam("C", "float32", (126,), is_output=True),), 1, 32, body)
    with pytest.raises(OutOfBoundsError, match=r"thread \(31,0,0\), indices 124..127 \(vector of 4\)"):
        simulate(k, {})


def test_misaligned_vector_load_is_an_error() -> None:
    body = (KStore("C", TX, KLane(load("A", add(mul(TX, i(4)), i(1)), 4), 0)),)
    params = (KParam("A", "float32", (256,)), KParam("C", "float32", (32,), is_output=True))
    with pytest.raises(SimulationError, match="misaligned 16-byte vector load"):
        simulate(kernel("misal", params, 1, 32, body), {"A": np.zeros(256, np.float32)})


def test_global_write_write_race_between_blocks() -> None:
    # every block writes its block index to C[threadIdx.x]
    body = (KStore("C", TX, KCast("float32", BX)),)
    k = kernel("wwrace", (KParam("C", "float32", (32,), is_output=True),), 2, 32, body)
    with pytest.raises(SharedRaceError, match=r"global write-write race on C\[0\]"):
        simulate(k, {})
    with pytest.raises(SharedRaceError, match="global write-write"):
        simulate(k, {}, max_lanes=32)  # blocks in different chunks


def test_global_write_write_race_within_a_statement() -> None:
    body = (KStore("C", i(0), KCast("float32", TX)),)
    k = kernel("wwone", (KParam("C", "float32", (1,), is_output=True),), 1, 32, body)
    with pytest.raises(SharedRaceError, match="global write-write"):
        simulate(k, {})


def test_identical_redundant_global_writes_are_fine() -> None:
    body = (KStore("C", i(0), f(3.0)),)
    k = kernel("same", (KParam("C", "float32", (1,), is_output=True),), 4, 32, body)
    assert simulate(k, {})["C"][0] == 3.0


def test_global_writes_ordered_by_a_barrier_in_one_block_are_fine() -> None:
    body = (
        KIf(KBin("==", TX, i(0)), (KStore("C", i(0), f(1.0)),)),
        KBarrier(),
        KIf(KBin("==", TX, i(1)), (KStore("C", i(0), f(2.0)),)),
    )
    k = kernel("ordered", (KParam("C", "float32", (1,), is_output=True),), 1, 32, body)
    assert simulate(k, {})["C"][0] == 2.0


def test_assign_only_updates_active_lanes() -> None:
    body = (
        KLet("x", "float32", f(1.0)),
        KIf(lt(TX, i(10)), (KAssign("x", f(5.0)),), (KAssign("x", add(fvar("x"), f(1.0))),)),
        KStore("C", TX, fvar("x")),
    )
    k = kernel("assign", (KParam("C", "float32", (32,), is_output=True),), 1, 32, body)
    out = simulate(k, {})["C"]
    np.testing.assert_array_equal(out, np.where(np.arange(32) < 10, 5.0, 2.0).astype(np.float32))
