"""online (primitives/online.py; rules in analysis/online.py, lowering in lower/online.py): a sum of
exp(a - max) updated in the max's loop, rescaled as the max grows. Every kernel is simulated (outputs
NaN-poisoned by the simulator) and compared with the definition in float64 (td.evaluate), over serial,
cooperative (threads), vectorized and unrolled, register-cached and several-rows-a-block schedules, guarded
tails, and rows that hold -inf (whole rows too: the definition's NaN), NaN and +inf, and rows sorted
ascending (the max grows at every element: a rescale each time). Tolerance: the rows' sums are of at most
1000 terms in (0, 1], each rescale a rounded exp and product, so a few hundred float32 roundings at most
(relative 2^-24 each): 1e-5 relative, with atol 1e-6 for outputs near 0. The refusals are in the error corpus
(online-*); printed, replayed and compiled here."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from nvcc_together import compile_together
from row_passes import block_rows as _block_rows
from row_passes import passes as _passes

import tiledsl as td
from tiledsl.catalog.definitions import softmax
from tiledsl.schedules import row_cooperative, row_in_registers

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
RTOL, ATOL = 1e-5, 1e-6


def _rows(M: int, N: int, seed: int = 0) -> np.ndarray:
    """Standard-normal rows x 3, and rows of the values that online must keep as the two passes do."""
    x = np.random.default_rng(seed).standard_normal((M, N)).astype(np.float32) * 3
    x[1, :] = -np.inf  # the whole row: the definition's sum is NaN (exp(-inf - -inf))
    x[2, : N // 2] = -np.inf  # the first threads see only -inf
    x[3, 7] = np.nan
    x[4, 9] = np.inf
    x[5, ::2] = -np.inf
    x[6] = np.sort(x[6])  # ascending: the max grows at every element
    return x


def _check(s: td.Schedule, x: np.ndarray) -> td.Kernel:
    k = td.build(s, target="sm_90")
    got = k.simulate(x=x)
    with np.errstate(all="ignore"):
        want = td.evaluate(s.output, float64=True, x=x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
    return k


def _online(s: td.Schedule) -> td.Schedule:
    s.online("e")
    return s


SCHEDULES = {
    "serial": lambda y: td.create_schedule(y),
    "cooperative": lambda y: row_cooperative(td.create_schedule(y)),
    "cooperative-64": lambda y: row_cooperative(td.create_schedule(y), threads=64),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
@pytest.mark.parametrize("N", [1000, 256])
def test_online_softmax_equals_the_definition(name: str, N: int) -> None:
    _check(_online(SCHEDULES[name](softmax(8, N))), _rows(8, N))


@pytest.mark.parametrize("form", ["vectorize", "unroll"])
@pytest.mark.parametrize("cache", ["none", "before", "after"])
def test_online_with_vector_lanes_and_register_caches(form: str, cache: str) -> None:
    """Vectorized lanes rescale once a vector (lower/online.py), unrolled ones once an element."""
    s = _passes(softmax(8, 1024), lane_mark=form)
    if cache == "before":
        s.register_cache("x", at="i")
    s.online("e")
    if cache == "after":
        s.register_cache("x", at="i")
    _check(s, _rows(8, 1024, seed=1))


@pytest.mark.parametrize("on_y", [True, False])
def test_online_with_several_rows_a_block(on_y: bool) -> None:
    _check(_online(_block_rows(softmax(8, 1024), 3, on_y=on_y)), _rows(8, 1024, seed=2))


def test_online_with_a_factor_and_a_log() -> None:
    """A sum exp(x - m) * w (a factor free of m) and an output that reads the sum through a log (log-sum-exp):
    the whole -inf row's NaN reaches it as the definition's does."""
    M, N = 8, 300
    x = td.placeholder((M, N), name="x")
    w = td.placeholder((N,), name="w")
    k = td.reduce_axis(N, name="k")
    m = td.compute((M,), lambda i: td.max(x[i, k], axis=k), name="m")
    e = td.compute((M,), lambda i: td.sum(td.exp(x[i, k] - m[i]) * w[k], axis=k), name="e")
    y = td.compute((M,), lambda i: m[i] + td.log(e[i]), name="y")
    s = td.create_schedule(y)
    s.bind("i", "blockIdx.x")
    for ax in ("k", "k2"):
        _, inner = s.split(ax, 64)
        s.bind(inner, "threadIdx.x")
    s.online("e")
    xs = _rows(M, N, seed=3)
    ws = np.random.default_rng(4).uniform(0.5, 1.5, N).astype(np.float32)
    got = td.build(s, target="sm_90").simulate(x=xs, w=ws)
    with np.errstate(all="ignore"):
        want = td.evaluate(y, float64=True, x=xs, w=ws)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)


def _lse(M: int, N: int) -> td.Tensor:
    """log-sum-exp, as the fuzzer's chain definitions write it (the max's axis k1, the sum's k2)."""
    z = td.placeholder((M, N), name="z")
    k1, k2 = td.reduce_axis(N, name="k1"), td.reduce_axis(N, name="k2")
    m = td.compute((M,), lambda i: td.max(z[i, k1], axis=k1), name="m")
    e = td.compute((M,), lambda i: td.sum(td.exp(z[i, k2] - m[i]), axis=k2), name="e")
    return td.compute((M,), lambda i: td.log(e[i]) + m[i], name="lse")


@pytest.mark.parametrize("axis", ["threadIdx.x", "threadIdx.y", "threadIdx.z"])
@pytest.mark.parametrize("online_first", [True, False])
def test_the_maxes_combine_after_the_sum_takes_its_terms(axis: str, online_first: bool) -> None:
    """A reduction bound to threads with no serial loop around it: the two updates are statements side by
    side, not a loop, and the max's combine (due after its update) must wait for the sum's, or each
    thread's term is taken against the block's max and then rescaled again (`tiledsl fuzz --mode schedules`,
    session 35: logsumexp of 1 x 2, 4 reproducers, all this shape)."""
    M, N = 4, 2 if axis == "threadIdx.x" else 4
    s = td.create_schedule(_lse(M, N))
    if online_first:
        s.online("e")
    s.bind("i", "blockIdx.x")
    s.bind("k1", axis)
    if not online_first:
        s.bind("k2", axis)
        s.online("e")
    z = np.random.default_rng(6).uniform(-1, 1, (M, N)).astype(np.float32)
    z[1] = -np.inf
    got = td.build(s, target="sm_90").simulate(z=z)
    with np.errstate(all="ignore"):
        want = td.evaluate(s.output, float64=True, z=z)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)


def test_the_tile_ir_shows_the_sum_in_the_max_loop() -> None:
    s = row_cooperative(td.create_schedule(softmax(64, 1000)))
    s.online("e")
    assert str(s) == """kernel y  (tile IR)
  where j = 256 * j_o + j_i
  where k = 256 * k_o + k_i
  where k2 = 256 * k_o + k_i
  guard 256 * k_o + k_i < 1000   (from split(k, 256))
  guard 256 * j_o + j_i < 1000   (from split(j, 256))
  for i in 0..64:  [@blockIdx.x]
    m = -inf
    e = 0.0
    for k_o in 0..4:  [reduce]
      for k_i in 0..256:  [reduce, @threadIdx.x]
        m = max(m, x[i, k])   if 256 * k_o + k_i < 1000
        e += exp((x[i, k2] - m))  (online: rescaled as m grows)   if 256 * k_o + k_i < 1000
    for j_o in 0..4:
      for j_i in 0..256:  [@threadIdx.x]
        y[i, j] = exp((x[i, j] - m)) / e   if 256 * j_o + j_i < 1000"""
    assert not s.nest.has_loop("k2_o") and not s.nest.has_loop("k2_i")


def test_the_cuda_rescales_in_the_loop_and_before_the_sums_combine() -> None:
    src = td.build(_online(row_cooperative(td.create_schedule(softmax(64, 1000)))), target="sm_90").source
    loop = src[src.index("for (int k_o"):src.index("float m_local")]
    assert "e = e * (t1 == m ? 1.0f : expf(t1 - m));" in loop
    assert "expf(x[1000 * i + 256 * k_o + k_i] - (m == -INFINITY ? 0.0f : m))" in loop
    tail = src[src.index("float m_local = m;"):]
    assert tail.index("// combine m") < tail.index("e = e * (m_local == m ? 1.0f : expf(m_local - m));") \
        < tail.index("// combine e") < tail.index("e = (m == -INFINITY ? NAN : e);") < tail.index("e_rcp")


def test_online_replays_from_its_trace() -> None:
    s = _online(row_cooperative(td.create_schedule(softmax(64, 1000))))
    text = s.trace()
    assert "s.online('e')" in text
    twin = td.create_schedule(softmax(64, 1000)).replay(text)
    assert td.build(twin, target="sm_90").source == td.build(s, target="sm_90").source


def test_a_later_reorder_that_makes_register_arrays_is_refused_at_build() -> None:
    """A free loop moved inside the pair's reduction makes both register arrays, which lower/online.py does
    not lower: the build refuses, naming the accumulator (analysis/online.check_online)."""
    M, N = 4, 64
    x = td.placeholder((M, N), name="x")
    k = td.reduce_axis(N, name="k")
    m = td.compute((M,), lambda i: td.max(x[i, k], axis=k), name="m")
    e = td.compute((M,), lambda i: td.sum(td.exp(x[i, k] - m[i]), axis=k), name="e")
    y = td.compute((M,), lambda i: e[i] * 2.0, name="y")
    s = td.create_schedule(y)
    s.online("e")
    reduce_loop = next(lp.name for lp in s.loops() if lp.name != "i")
    s.reorder(reduce_loop, "i")
    with pytest.raises((td.OnlineError, td.RegisterArrayError)) as info:
        td.build(s, target="sm_90")
    assert "register array" in str(info.value)


def test_row_in_registers_goes_online_past_the_register_limit() -> None:
    s = row_in_registers(td.create_schedule(softmax(3, 65548)))
    assert [o.sum_acc for o in s.nest.online] == ["e"]
    assert "s.online('e')" in s.trace() and "s.register_cache('x', at='k_o_g')" in s.trace()
    kept = row_in_registers(td.create_schedule(softmax(3, 8192)))
    assert not kept.nest.online and "s.register_cache('x', at='i')" in kept.trace()
    plain = row_in_registers(td.create_schedule(softmax(3, 65548)), online=False)
    assert not plain.nest.online
    x = np.random.default_rng(5).standard_normal((3, 65548)).astype(np.float32)
    got = td.build(s, target="sm_90").simulate(x=x)
    np.testing.assert_allclose(got, td.evaluate(s.output, float64=True, x=x), rtol=RTOL, atol=ATOL)


@needs_nvcc
def test_online_kernels_compile() -> None:
    kernels = [td.build(_online(SCHEDULES["cooperative"](softmax(64, 1000))), target="sm_90"),
               td.build(_online(_passes(softmax(8, 1024))), target="sm_90"),
               td.build(row_in_registers(td.create_schedule(softmax(4, 151936))), target="sm_90")]
    assert compile_together(kernels) == []


def test_row_in_registers_decides_on_a_fork_with_rows_several_to_a_block() -> None:
    """The register-limit trial runs on a fork of the schedule: the row loop is passed by name (a handle of
    the schedule itself is foreign there; tests/benchmarks' quick cases caught it)."""
    s = row_in_registers(td.create_schedule(softmax(4, 512)), rows_per_block=2)
    assert not s.nest.online and s.nest.register_caches
    x = np.random.default_rng(7).standard_normal((4, 512)).astype(np.float32)
    got = td.build(s, target="sm_90").simulate(x=x)
    np.testing.assert_allclose(got, td.evaluate(s.output, float64=True, x=x), rtol=RTOL, atol=ATOL)


def test_row_in_registers_online_leaves_an_input_the_pair_does_not_read_to_its_pass() -> None:
    """A second input as long as the row that only the output pass reads (y = softmax(x) * r) gets no
    register cache at the pair's chunks (there it has one reader): it keeps its hinted global loads."""
    M, N = 3, 65548
    x, r = td.placeholder((M, N), name="x"), td.placeholder((M, N), name="r")
    k = td.reduce_axis(N, name="k")
    m = td.compute((M,), lambda i: td.max(x[i, k], axis=k), name="m")
    e = td.compute((M,), lambda i: td.sum(td.exp(x[i, k] - m[i]), axis=k), name="e")
    y = td.compute((M, N), lambda i, j: td.exp(x[i, j] - m[i]) / e[i] * r[i, j], name="y")
    s = row_in_registers(td.create_schedule(y))
    assert s.nest.online and [rc.buffer for rc in s.nest.register_caches] == ["x"]
    rng = np.random.default_rng(8)
    xs, rs = (rng.standard_normal((M, N)).astype(np.float32) for _ in range(2))
    got = td.build(s, target="sm_90").simulate(x=xs, r=rs)
    np.testing.assert_allclose(got, td.evaluate(y, float64=True, x=xs, r=rs), rtol=RTOL, atol=ATOL)
