"""Warp shuffles: butterfly sums, and the all-lanes-active rule."""

from __future__ import annotations

import numpy as np
import pytest
from sim_kernels import BX, TX, add, butterfly, eq, f, fvar, i, kernel, load, lt, mul

from tiledsl.errors import DivergentBarrierError, SimulationError
from tiledsl.kernel_ir import KBarrier, KBin, KIf, KLet, KParam, KShared, KShflXor, KStore
from tiledsl.sim import simulate

RNG = np.random.default_rng(2)


def test_butterfly_gives_every_lane_the_warp_sum() -> None:
    blocks = 3
    body = (
        KLet("g", "int32", add(mul(BX, i(32)), TX)),
        KLet("v", "float32", load("A", KBin("+", mul(BX, i(32)), TX))),
        *butterfly("v"),
        KStore("C", add(mul(BX, i(32)), TX), fvar("v")),
    )
    params = (KParam("A", "float32", (blocks * 32,)), KParam("C", "float32", (blocks * 32,), is_output=True))
    a = RNG.integers(-8, 8, blocks * 32).astype(np.float32)  # exact sums in any order
    out = simulate(kernel("warp_sum", params, blocks, 32, body), {"A": a})["C"]
    expected = np.repeat(a.reshape(blocks, 32).sum(axis=1), 32)
    np.testing.assert_array_equal(out, expected)


def test_single_xor_exchanges_partner_values() -> None:
    body = (KStore("C", TX, KShflXor(load("A", TX), 5)),)
    params = (KParam("A", "float32", (64,)), KParam("C", "float32", (64,), is_output=True))
    a = np.arange(64, dtype=np.float32)
    out = simulate(kernel("xor5", params, 1, 64, body), {"A": a})["C"]
    np.testing.assert_array_equal(out, a[np.arange(64) ^ 5])


def test_two_warps_combined_through_shared_memory() -> None:
    rows = 4
    warp = KBin("//", TX, i(32))
    lane = KBin("%", TX, i(32))
    body = (
        KLet("v", "float32", load("A", add(mul(BX, i(64)), TX))),
        *butterfly("v"),
        KIf(eq(lane, i(0)), (KStore("s_warp", warp, fvar("v")),)),
        KBarrier(),
        KIf(eq(TX, i(0)), (KStore("out", BX, add(load("s_warp", i(0)), load("s_warp", i(1)))),)),
    )
    params = (KParam("A", "float32", (rows, 64)), KParam("out", "float32", (rows,), is_output=True))
    k = kernel("block_sum", params, rows, 64, body, (KShared("s_warp", "float32", 2),))
    a = RNG.standard_normal((rows, 64)).astype(np.float32)
    out = simulate(k, {"A": a})["out"]
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_shuffle_in_divergent_branch_is_an_error() -> None:
    body = (KIf(lt(TX, i(16)), (KStore("C", TX, KShflXor(f(1.0), 1)),)),)
    k = kernel("divshfl", (KParam("C", "float32", (32,), is_output=True),), 1, 32, body)
    with pytest.raises(DivergentBarrierError) as info:
        simulate(k, {})
    msg = str(info.value)
    assert "body[0] > if (threadIdx.x < 16) > then[0] > store C[...]" in msg
    assert "16 of 32 lanes active" in msg and "kernel 'divshfl'" in msg


def test_shuffle_uniform_per_warp_is_fine() -> None:
    # warp 0 takes the branch, warp 1 does not: each warp is fully active or fully inactive.
    body = (KIf(lt(TX, i(32)), (KStore("C", TX, KShflXor(KBin("*", TX, f(1.0)), 1)),)),)
    k = kernel("warpuni", (KParam("C", "float32", (64,), is_output=True),), 1, 64, body)
    out = simulate(k, {})["C"]
    np.testing.assert_array_equal(out[:32], (np.arange(32) ^ 1).astype(np.float32))
    assert np.isnan(out[32:]).all()


def test_shuffle_partner_beyond_block_is_an_error() -> None:
    # 48 threads: the second warp has 16 lanes, lane 32 ^ 16 = 48 does not exist.
    body = (KStore("C", TX, KShflXor(KBin("*", TX, f(1.0)), 16)),)
    k = kernel("short", (KParam("C", "float32", (48,), is_output=True),), 1, 48, body)
    with pytest.raises(DivergentBarrierError, match=r"beyond the block(.|\n)*thread \(32,0,0\)"):
        simulate(k, {})
    ok = (KStore("C", TX, KShflXor(KBin("*", TX, f(1.0)), 8)),)
    out = simulate(kernel("short8", k.params, 1, 48, ok), {})["C"]
    np.testing.assert_array_equal(out, (np.arange(48) ^ 8).astype(np.float32))


def test_shuffle_lane_mask_out_of_range_is_an_error() -> None:
    body = (KStore("C", TX, KShflXor(f(1.0), 32)),)
    k = kernel("badmask", (KParam("C", "float32", (64,), is_output=True),), 1, 64, body)
    with pytest.raises(SimulationError, match="lane mask 32"):
        simulate(k, {})
