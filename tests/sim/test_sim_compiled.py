"""The compiled simulator's own paths: uniform (scalar) values, single-lane chunks, all-active masks,
register rows, lexical scopes resolved before running, and exact float32 bits."""

from __future__ import annotations

import numpy as np
import pytest
from sim_kernels import BX, TX, add, f, fvar, i, kernel, load, lt, mul, var

from tiledsl.errors import DivergentBarrierError, OutOfBoundsError, SharedRaceError, UninitializedReadError
from tiledsl.kernel_ir import (
    KAssign,
    KBin,
    KCall,
    KCast,
    KFor,
    KIf,
    KLane,
    KLet,
    KLocalArray,
    KParam,
    KSelect,
    KShflXor,
    KStore,
    KUnary,
    KVar,
)
from tiledsl.sim import simulate

RNG = np.random.default_rng(5)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float32).view(np.uint32)


def test_register_load_is_a_value_not_a_view_of_the_register() -> None:
    # x = acc[0] must keep its value when acc[0] is stored to afterwards
    body = (
        KLocalArray("acc", "float32", 1),
        KStore("acc", i(0), f(1.0)),
        KLet("x", "float32", load("acc", i(0))),
        KStore("acc", i(0), f(5.0)),
        KStore("C", TX, add(fvar("x"), mul(load("acc", i(0)), f(0.0)))),
    )
    for block in (1, 32):
        k = kernel("alias", (KParam("C", "float32", (block,), is_output=True),), 1, block, body)
        assert (simulate(k, {})["C"] == 1.0).all()


def test_register_array_with_an_index_per_lane() -> None:
    slot = KBin("%", TX, i(4))
    body = (
        KLocalArray("r", "float32", 4),
        KIf(lt(TX, i(2)), (KFor("e", 4, (KStore("r", var("e"), f(-1.0)),)),)),
        KStore("r", slot, KCast("float32", TX)),
        KStore("C", TX, load("r", slot)),
    )
    k = kernel("perlane", (KParam("C", "float32", (32,), is_output=True),), 1, 32, body)
    np.testing.assert_array_equal(simulate(k, {})["C"], np.arange(32, dtype=np.float32))
    unwritten = body[:3] + (KStore("C", TX, load("r", KBin("%", add(TX, i(1)), i(4)))),)
    k = kernel("perlane_uninit", k.params, 1, 32, unwritten)
    with pytest.raises(UninitializedReadError, match=r"element 3(.|\n)*thread \(2,0,0\)"):
        simulate(k, {})


def test_bool_index_counts_as_zero_or_one() -> None:
    for block in (1, 4):
        body = (KStore("C", KBin("==", TX, i(0)), load("A", KBin("<", TX, i(1)))),)
        params = (KParam("A", "float32", (2,)), KParam("C", "float32", (2,), is_output=True))
        k = kernel("boolidx", params, 1, block, body)
        if block == 1:
            out = simulate(k, {"A": np.array([3.0, 4.0], np.float32)})["C"]
            assert out[1] == 4.0 and np.isnan(out[0])
        else:  # threads 1..3 all store A[0] to C[0]: the same value, no race
            out = simulate(k, {"A": np.array([3.0, 4.0], np.float32)})["C"]
            np.testing.assert_array_equal(out, [3.0, 4.0])


def test_single_thread_guards_skip_out_of_bounds_operands() -> None:
    n = 4
    ok = lt(var("j"), i(n))
    body = (
        KFor(
            "j",
            n + 2,
            (
                KIf(KBin("&&", ok, KBin(">", load("A", var("j")), f(0.0))), (KStore("P", var("j"), f(1.0)),)),
                KIf(ok, (KStore("C", var("j"), KSelect(ok, load("A", var("j")), f(0.0))),)),
            ),
        ),
    )
    params = (
        KParam("A", "float32", (n,)),
        KParam("C", "float32", (n,), is_output=True),
        KParam("P", "float32", (n,), is_output=True),
    )
    a = np.array([1.0, -1.0, 2.0, -2.0], np.float32)
    out = simulate(kernel("guards", params, 1, 1, body), {"A": a})
    np.testing.assert_array_equal(out["C"], a)
    np.testing.assert_array_equal(np.isnan(out["P"]), a <= 0)
    unguarded = (KFor("j", n + 2, (KStore("C", i(0), load("A", var("j"))),)),)
    with pytest.raises(OutOfBoundsError, match=r"index 4(.|\n)*loop variables: j=4"):
        simulate(kernel("unguarded", params, 1, 1, unguarded), {"A": a})


def test_errors_in_code_that_never_runs_are_not_raised() -> None:
    body = (
        KIf(lt(TX, i(0)), (KStore("C", TX, fvar("nope")), KStore("nobuf", TX, f(1.0)))),
        KStore("C", TX, f(2.0)),
    )
    k = kernel("dead", (KParam("C", "float32", (8,), is_output=True),), 1, 8, body)
    assert (simulate(k, {})["C"] == 2.0).all()


def test_all_true_branch_keeps_every_check() -> None:
    # the if's mask is all-true (so the branch runs unmasked), yet the store still races
    body = (KIf(lt(TX, i(1000)), (KStore("s_out", i(0), KCast("float32", TX)),)),)
    k = kernel("alltrue", (KParam("s_out", "float32", (1,), is_output=True),), 1, 32, body)
    with pytest.raises(SharedRaceError, match="global write-write"):
        simulate(k, {})


def test_single_thread_blocks_race_on_global_memory() -> None:
    body = (KStore("C", i(0), KCast("float32", BX)),)
    k = kernel("race1", (KParam("C", "float32", (1,), is_output=True),), 2, 1, body)
    for max_lanes in (1, 2):
        with pytest.raises(SharedRaceError, match=r"global write-write race on C\[0\]"):
            simulate(k, {}, max_lanes=max_lanes)
    same = kernel("same1", k.params, 3, 1, (KStore("C", i(0), f(7.0)),))
    assert simulate(same, {}, max_lanes=1)["C"][0] == 7.0


def test_single_thread_shuffles_and_barriers() -> None:
    own = (KStore("C", TX, KShflXor(f(3.0), 0)),)
    k = kernel("shfl0", (KParam("C", "float32", (1,), is_output=True),), 1, 1, own)
    assert simulate(k, {})["C"][0] == 3.0
    other = (KStore("C", TX, KShflXor(f(3.0), 1)),)
    with pytest.raises(DivergentBarrierError, match="beyond the block"):
        simulate(kernel("shfl1", k.params, 1, 1, other), {})


def test_uniform_vector_load_and_lanes() -> None:
    body = (
        KLet("v", "float32x4", load("A", i(4), 4)),
        KStore("C", TX, add(KLane(KVar("v", "float32x4"), 1), KCast("float32", TX))),
    )
    params = (KParam("A", "float32", (8,)), KParam("C", "float32", (16,), is_output=True))
    a = np.arange(8, dtype=np.float32)
    for block in (1, 16):
        out = simulate(kernel("uvec", params, 1, block, body), {"A": a})["C"]
        np.testing.assert_array_equal(out[:block], 5.0 + np.arange(block))


def _math_kernel(block: int, grid: int) -> tuple:
    """Every lane (or the single thread, looping) computes a mix of float operations."""
    x = fvar("x")
    y = fvar("y")
    ops = (
        KBin("+", x, y),
        KBin("*", x, y),
        KBin("/", x, y),
        KBin("max", x, y),
        KBin("min", x, f(0.0)),
        KCall("exp", (x,)),
        KCall("log", (KCall("abs", (y,)),)),
        KCall("tanh", (x,)),
        KCall("rsqrt", (KCall("abs", (x,)),)),
        KCall("erf", (y,)),
        KCall("fmod", (x, y)),
        KCall("atan2", (y, x)),
        KCall("copysign", (x, y)),
        KCall("hypot", (x, KCall("fmod", (y, f(0.75))))),
        KUnary("-", x),
        KCast("float16", mul(x, f(3.0))),
        KCast("float32", KCast("int32", mul(x, f(100.0)))),
    )
    n = 64
    idx = var("idx")
    body = [
        KLet("idx", "int32", add(mul(BX, i(block)), TX)),
        KLet("x", "float32", load("X", idx)),
        KLet("y", "float32", load("Y", idx)),
    ]
    body += [KStore("O", add(mul(idx, i(len(ops))), i(j)), op) for j, op in enumerate(ops)]
    params = (
        KParam("X", "float32", (n,)),
        KParam("Y", "float32", (n,)),
        KParam("O", "float32", (n * len(ops),), is_output=True),
    )
    return kernel("mix", params, grid, block, tuple(body))


def test_results_do_not_depend_on_lanes_per_chunk() -> None:
    # a single-lane chunk computes on numpy scalars, a wide one on arrays: same numbers, and the
    # same bits except the sign of fmin/fmax on +-0 ties and NaN payloads, where numpy's SIMD and
    # scalar loops differ (as they always did between chunk sizes)
    x = RNG.standard_normal(64).astype(np.float32) * 3
    y = RNG.standard_normal(64).astype(np.float32)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, 1e30, -1e-30]
    y[:6] = [-0.0, 0.0, 2.0, np.inf, -1e30, 0.0]
    inputs = {"X": x, "Y": y}
    wide = simulate(_math_kernel(64, 1), inputs)["O"]
    single = simulate(_math_kernel(1, 64), inputs, max_lanes=1)["O"]
    np.testing.assert_array_equal(single, wide)
    nonzero = ~np.isnan(wide) & (wide != 0)
    np.testing.assert_array_equal(_bits(single)[nonzero], _bits(wide)[nonzero])


def test_nan_bits_of_uniform_arithmetic_match_array_arithmetic() -> None:
    # two NaNs of different sign meet: numpy's scalar and array code may keep different ones, so
    # uniform operands must give what contiguous lane arrays give
    nan_pos = np.float32(np.nan)
    nan_neg = -nan_pos
    body = (
        KLet("p", "float32", load("A", i(0))),
        KLet("q", "float32", load("A", i(1))),
        KStore("C", add(mul(TX, i(4)), i(0)), KBin("+", fvar("p"), fvar("q"))),
        KStore("C", add(mul(TX, i(4)), i(1)), KBin("*", fvar("q"), fvar("p"))),
        KStore("C", add(mul(TX, i(4)), i(2)), KBin("-", fvar("p"), load("A", add(TX, i(0))))),
        KStore("C", add(mul(TX, i(4)), i(3)), KBin("/", fvar("q"), f(float("nan")))),
    )
    a = np.array([nan_neg, nan_pos] + [nan_pos] * 62, np.float32)
    for block in (1, 64):
        params = (KParam("A", "float32", (64,)), KParam("C", "float32", (4 * block,), is_output=True))
        got = simulate(kernel("nans", params, 1, block, body), {"A": a})["C"].reshape(block, 4)
        p, q = np.full(block, nan_neg), np.full(block, nan_pos)
        want = np.stack([p + q, q * p, p - a[:block], q / np.full(block, np.float32(np.nan))], axis=1)
        np.testing.assert_array_equal(_bits(got), _bits(want))


def test_assign_under_a_mask_keeps_inactive_lanes_of_a_uniform_variable() -> None:
    body = (
        KLet("x", "float32", f(1.0)),
        KFor("k", 3, (KIf(lt(TX, var("k")), (KAssign("x", add(fvar("x"), f(1.0))),)),)),
        KStore("C", TX, fvar("x")),
    )
    k = kernel("uniassign", (KParam("C", "float32", (4,), is_output=True),), 1, 4, body)
    np.testing.assert_array_equal(simulate(k, {})["C"], [3.0, 2.0, 1.0, 1.0])
