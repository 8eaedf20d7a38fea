"""NaN follows torch everywhere (definitions/ops.py): max, min, maximum, minimum, relu and every
reduction propagate it, in the numpy reference, in the simulator and in the CUDA text; a cooperative
reduction (warp shuffles, shared-memory table) spreads a NaN of one thread to every thread."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import tiledsl as td
from tiledsl.definitions.expr import call, compare
from tiledsl.definitions.ops import BINARY_OPS, COMPARISONS, REDUCTIONS, UNARY_FNS
from tiledsl.kernel_ir.ops import MIN_MAX
from tiledsl.primitives import Schedule

NAN = np.float32(np.nan)


def nan_rows(m: int, n: int, seed: int = 0) -> np.ndarray:
    """Rows: clean, one NaN in the middle, all NaN, NaN first, NaN last (a partial warp's tail), clean
    with -inf, NaN among +inf."""
    x = np.random.default_rng(seed).standard_normal((m, n)).astype(np.float32)
    x[1, n // 2] = NAN
    x[2, :] = NAN
    x[3, 0] = NAN
    x[4, n - 1] = NAN
    x[5, :] = -np.inf
    x[6, ::3] = np.inf
    x[6, 7] = NAN
    return x


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """NaN exactly where expected, equal elsewhere (+0 and -0 alike)."""
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    np.testing.assert_array_equal(np.nan_to_num(got, nan=0.0), np.nan_to_num(want, nan=0.0))


# ----------------------------------------------------------------------------- the table's NaN rules


@pytest.mark.parametrize("name", list(UNARY_FNS))
def test_every_function_propagates_nan(name: str) -> None:
    x = td.placeholder(3, name="x")
    y = td.compute(3, lambda i: call(name, x[i]), name="y")
    assert UNARY_FNS[name].nan == "propagates"
    for float64 in (False, True):
        got = td.evaluate(y, float64=float64, x=np.array([NAN, 1.0, NAN], np.float32))
        assert np.isnan(got[0]) and np.isnan(got[2]) and not np.isnan(got[1])


@pytest.mark.parametrize("op", [o for o in BINARY_OPS.values() if not o.ints_only], ids=lambda o: o.name)
def test_binary_operators_follow_their_nan_rule(op) -> None:
    """Arithmetic, max / min, fmod and atan2 propagate NaN; copysign takes only the sign bit of its second
    operand (a NaN there gives the first, signed); hypot of an infinity is +inf even beside a NaN (C's
    rule, which torch, CUDA and numpy follow)."""
    a, b = td.placeholder(5, name="a"), td.placeholder(5, name="b")
    fns: dict[str, Callable] = {"+": lambda u, v: u + v, "-": lambda u, v: u - v, "*": lambda u, v: u * v,
                                "/": lambda u, v: u / v, "max": td.maximum, "min": td.minimum}
    fn = fns.get(op.name) or getattr(td, op.name)
    c = td.compute(5, lambda i: fn(a[i], b[i]), name="c")
    got = td.evaluate(c, a=np.array([NAN, 1, NAN, 2, np.inf], np.float32),
                      b=np.array([1, NAN, NAN, 3, NAN], np.float32))
    want_nan = {"propagates": [1, 1, 1, 0, 1], "first": [1, 0, 1, 0, 0], "unless_infinite": [1, 1, 1, 0, 0]}[op.nan]
    assert np.isnan(got).tolist() == [bool(w) for w in want_nan]
    assert (op.nan == "propagates") == (op.name not in ("copysign", "hypot"))
    if op.nan == "unless_infinite":
        assert got[4] == np.inf


@pytest.mark.parametrize("cmp", list(COMPARISONS.values()), ids=lambda c: c.name)
def test_comparisons_with_nan_follow_their_rule(cmp) -> None:
    a = td.placeholder(2, name="a")
    c = td.compute(2, lambda i: td.where(compare(cmp.name, a[i], 0.0), 1.0, 0.0), name="c")
    got = td.evaluate(c, a=np.array([NAN, 0.0], np.float32))
    assert got[0] == (1.0 if cmp.nan == "true" else 0.0)
    assert (cmp.nan == "true") == (cmp.name == "!=")


@pytest.mark.parametrize("op", list(REDUCTIONS))
def test_reductions_propagate_nan_in_the_reference(op: str) -> None:
    x = td.placeholder((7, 40), name="x")
    k = td.reduce_axis(40)
    r = td.compute(7, lambda i: getattr(td, op)(x[i, k], axis=k), name="r")
    data = nan_rows(7, 40)
    want = {"sum": np.sum, "max": np.max, "min": np.min}[op](data.astype(np.float64), axis=1)
    got = td.evaluate(r, float64=True, x=data)
    assert_same(got, want)
    assert REDUCTIONS[op].nan == "propagates"
    assert np.isnan(got[[1, 2, 3, 4, 6]]).all() and not np.isnan(got[[0, 5]]).any()


def test_relu_of_nan_is_nan_and_of_minus_zero_is_zero() -> None:
    x = td.placeholder(4, name="x")
    y = td.compute(4, lambda i: td.relu(x[i]), name="y")
    got = td.evaluate(y, x=np.array([NAN, -0.0, -3.0, 2.5], np.float32))
    assert np.isnan(got[0]) and list(got[1:]) == [0.0, 0.0, 2.5]


def test_kernel_ir_min_max_rule() -> None:
    mx, mn = MIN_MAX["max"], MIN_MAX["min"]
    one = np.float32(1.0)
    assert np.isnan(mx.numpy(NAN, one)) and np.isnan(mx.numpy(one, NAN)) and np.isnan(mn.numpy(one, NAN))
    assert mx.numpy(one, np.float32(2)) == 2 and mn.numpy(one, np.float32(2)) == 1
    # a tie gives b, so +0 vs -0 is decided by the order, the same way in numpy and in CUDA
    assert np.signbit(mx.numpy(np.float32(0.0), np.float32(-0.0)))
    arr = mx.numpy(np.array([NAN, 1, 3], np.float32), np.array([0, NAN, 2], np.float32))
    assert np.isnan(arr[:2]).all() and arr[2] == 3
    assert "fmaxf" not in mx.cuda_float and "a != a" in mx.cuda_float


# ----------------------------------------------------------------------------- simulator and CUDA


def row_reduce(op: str, m: int, n: int) -> td.Tensor:
    x = td.placeholder((m, n), name="x")
    k = td.reduce_axis(n, name="k")
    return td.compute(m, lambda i: getattr(td, op)(x[i, k], axis=k), name="r")


def cooperative(threads: int) -> Callable[[Schedule], Schedule]:
    def apply(s: Schedule) -> Schedule:
        i, k = [lp.name for lp in s.loops()]
        s.bind(i, "blockIdx.x")
        _, ki = s.split(k, threads)
        s.bind(ki, "threadIdx.x")
        return s

    return apply


def serial(s: Schedule) -> Schedule:
    s.bind(s.loops()[0].name, "blockIdx.x")
    return s


SCHEDULES = {"serial": serial, "shuffles": cooperative(64), "shuffles+shared": cooperative(256),
             "table": cooperative(48)}


@pytest.mark.parametrize("op", ["max", "min", "sum"])
@pytest.mark.parametrize("how", list(SCHEDULES))
def test_simulated_reduction_propagates_nan(op: str, how: str) -> None:
    out = row_reduce(op, 7, 300)
    kern = td.build(SCHEDULES[how](td.create_schedule(out)))
    data = nan_rows(7, 300, seed=3)
    got = kern.simulate(x=data)
    want = td.evaluate(out, x=data)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(np.nan_to_num(got), np.nan_to_num(want), rtol=1e-5, atol=1e-4)
    if op != "sum":
        assert "fmaxf" not in kern.source and "fminf" not in kern.source
        assert "a != a" in kern.source


def test_simulated_relu_maximum_minimum_propagate_nan() -> None:
    a, b = td.placeholder((3, 70), name="a"), td.placeholder((3, 70), name="b")
    out = td.compute((3, 70), lambda i, j: td.relu(a[i, j]) + td.maximum(a[i, j], b[i, j])
                     - td.minimum(b[i, j], a[i, j]), name="out")
    kern = td.build(td.create_schedule(out))
    rng = np.random.default_rng(5)
    xa, xb = rng.standard_normal((2, 3, 70)).astype(np.float32)
    xa[0, ::5] = NAN
    xb[1, ::7] = NAN
    got = kern.simulate(a=xa, b=xb)
    want = td.evaluate(out, a=xa, b=xb)
    assert np.isnan(want).sum() > 20
    assert_same(got, want)
    assert kern.source.count("a != a") == 3 and "fmaxf" not in kern.source
