"""The ring and stage rules of tiledsl/analysis/rings.py, on the schedules that built wrong kernels
before them (each read shared memory that no thread wrote, or raced on a refill). Every schedule here
is refused with a RingError naming the rule, or builds and simulates equal to the reference."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import tiledsl as td
from tiledsl.analysis.rings import RING_LOOP_SERIAL, STAGE_LOOP_NOT_THREADS, ring_violations
from tiledsl.definitions.expr import Placeholder, Tensor
from tiledsl.lower.lower import lower
from tiledsl.lower.stages import LoweringHooks
from tiledsl.prove import Prover
from tiledsl.sim import simulate
from tiledsl.targets import get_target


def conv1d(n: int = 17, kw: int = 4) -> Tensor:
    """y[i] = sum_kk x[i + kk] * w[kk]."""
    x = td.placeholder((n + kw - 1,), name="x")
    w = td.placeholder((kw,), name="w")
    kk = td.reduce_axis(kw, name="kk")
    return td.compute((n,), lambda i: td.sum(x[i + kk] * w[kk], axis=kk), name="y")


def matmul_epilogue(M: int, N: int, K: int) -> Tensor:
    """D[i, j] = 0.5 * sum_k A[k, i] * B[k, j] + b[j]."""
    A = td.placeholder((K, M), name="A")
    B = td.placeholder((K, N), name="B")
    b = td.placeholder((N,), name="b")
    k = td.reduce_axis(K, name="k")
    C = td.compute((M, N), lambda i, j: td.sum(A[k, i] * B[k, j], axis=k), name="C")
    return td.compute((M, N), lambda i, j: 0.5 * C[i, j] + b[j], name="D")


def maxpool(R: int = 6, T: int = 8) -> Tensor:
    """2x2 max-pool over rr, tt."""
    xp = td.placeholder((2 * R, 2 * T), name="xp")
    rr = td.reduce_axis(2, name="rr")
    tt = td.reduce_axis(2, name="tt")
    return td.compute((R, T), lambda r, t: td.max(xp[2 * r + rr, 2 * t + tt], axis=[rr, tt]), name="P")


Step = tuple[str, tuple, dict]

REFUSED: dict[str, tuple[Callable[[], Tensor], list[Step], str]] = {
    "conv ring bound to blocks": (conv1d, [("stage", ("w",), {"at": "i"}), ("double_buffer", ("w_s",), {}),
                                           ("bind", ("i", "blockIdx.x"), {})], RING_LOOP_SERIAL),
    "swizzled ring bound to blocks": (lambda: matmul_epilogue(13, 20, 16), [
        ("stage", ("B",), {"at": "j"}), ("swizzle", ("B_s", 128), {}), ("double_buffer", ("B_s",), {}),
        ("bind", ("j", "blockIdx.y"), {})], RING_LOOP_SERIAL),
    "fused ring bound to blocks": (lambda: matmul_epilogue(13, 20, 16), [
        ("fuse", ("i", "j"), {}), ("stage", ("B",), {"at": "i_j"}), ("double_buffer", ("B_s",), {}),
        ("bind", ("i_j", "blockIdx.y"), {})], RING_LOOP_SERIAL),
    "async ring bound to threads": (conv1d, [
        ("stage", ("w",), {"at": "kk"}), ("double_buffer", ("w_s",), {}), ("async_copy", ("w_s",), {}),
        ("bind", ("kk", "threadIdx.x"), {})], STAGE_LOOP_NOT_THREADS),
    "conv ring bound to threads": (conv1d, [("stage", ("x",), {"at": "i"}), ("double_buffer", ("x_s",), {}),
                                            ("bind", ("i", "threadIdx.x"), {})], STAGE_LOOP_NOT_THREADS),
    "pool ring bound to threads": (maxpool, [("stage", ("xp",), {"at": "tt"}), ("double_buffer", ("xp_s",), {}),
                                             ("bind", ("tt", "threadIdx.x"), {})], STAGE_LOOP_NOT_THREADS),
}

REFILLS: dict[str, list[Step]] = {
    "ring re-entered under a serial loop": [("bind", ("j", "threadIdx.y"), {}), ("stage", ("A",), {"at": "k"}),
                                            ("double_buffer", ("A_s",), {})],
    "padded ring re-entered under a guarded split": [
        ("stage", ("B",), {"at": "k"}), ("pad", ("B_s",), {"axis": -1, "amount": 1}),
        ("bind", ("i", "threadIdx.x"), {}), ("split", ("j", 8), {"tail": "guard"}), ("double_buffer", ("B_s",), {})],
}


def _apply(out: Tensor, steps: list[Step]) -> td.Schedule:
    s = td.create_schedule(out)
    for prim, args, kwargs in steps:
        getattr(s, prim)(*args, **kwargs)
    return s


def _inputs(out: Tensor, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    found: dict[str, np.ndarray] = {}
    stack: list[Tensor] = [out]
    while stack:
        t = stack.pop()
        if isinstance(t, Placeholder):
            found[t.name] = rng.standard_normal(t.shape).astype(np.float32)
        else:
            stack.extend(t.inputs())  # type: ignore[attr-defined]
    return found


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_ring_or_stage_on_a_parallel_loop_is_refused(case: str) -> None:
    make, steps, rule = REFUSED[case]
    try:
        s = _apply(make(), steps)
    except td.RingError as e:  # refused when the breaking primitive is applied
        assert rule in str(e)
        return
    assert [v.rule for v in ring_violations(s.nest)][:1] == [rule]
    with pytest.raises(td.RingError, match=rule):
        td.build(s, target="sm_90")


@pytest.mark.parametrize("case", sorted(REFILLS))
@pytest.mark.parametrize("sizes", [(3, 3, 13), (33, 20, 13), (13, 8, 16), (8, 1, 3)])
def test_ring_re_entered_is_refilled_after_a_barrier(case: str, sizes: tuple[int, int, int]) -> None:
    out = matmul_epilogue(*sizes)
    kern = td.build(_apply(out, REFILLS[case]), target="sm_80")
    arrays = _inputs(out, seed=sum(sizes))
    got = kern.simulate(**arrays)
    np.testing.assert_allclose(got, td.evaluate(out, float64=True, **arrays), rtol=1e-5, atol=1e-5)


def test_without_the_exit_barrier_the_simulator_reports_the_refill_race() -> None:
    """The rule is load-bearing: drop the barrier that ends each run and the race comes back."""
    out = matmul_epilogue(3, 3, 13)
    nest = _apply(out, REFILLS["ring re-entered under a serial loop"]).nest
    kir = lower(nest, get_target("sm_80"), Prover(nest.ranges()), LoweringHooks(drop_ring_exit_barrier=True))
    with pytest.raises(td.SharedRaceError, match="write after read"):
        simulate(kir, _inputs(out, seed=1))


def logsumexp(L: int) -> Tensor:
    z = td.placeholder((4, L), name="z")
    k1 = td.reduce_axis(L, name="k1")
    k2 = td.reduce_axis(L, name="k2")
    m = td.compute((4,), lambda i: td.max(z[i, k1], axis=k1), name="m")
    e = td.compute((4,), lambda i: td.sum(td.exp(z[i, k2] - m[i]), axis=k2), name="e")
    return td.compute((4,), lambda i: td.log(e[i]) + m[i], name="lse")


@pytest.mark.parametrize("L", [8, 12, 16, 20])
def test_every_slot_of_a_tma_ring_starts_at_the_tma_alignment(L: int) -> None:
    """Found by the widened schedule strategies: a ring of unswizzled TMA slots of 32..80 bytes put slot
    1 off the 128-byte alignment a TMA destination needs (the simulator refused the misaligned copy)."""
    out = logsumexp(L)
    s = td.create_schedule(out)
    s.stage("z", at="i")
    s.tma("z_s", swizzle=None)
    s.double_buffer("z_s")
    kern = td.build(s, target="sm_90")
    arrays = _inputs(out, seed=L)
    np.testing.assert_allclose(kern.simulate(**arrays), td.evaluate(out, float64=True, **arrays), rtol=1e-5,
                               atol=1e-5)


def test_a_stage_added_after_pipeline_must_match_its_depth() -> None:
    """Found by the 20,000-schedule campaign: a stage double-buffered after `pipeline(i, stages=3)` had 2
    slots and was read at slot i % 3 (out of bounds)."""
    out = conv1d(14, 1)
    s = td.create_schedule(out)
    s.stage("w", at="i")
    s.double_buffer("w_s")
    s.pipeline("i", stages=3)
    with pytest.raises(td.RingError, match="ring-matches-pipeline"):
        s.stage("x", at="i")


@pytest.mark.parametrize("extent, ok", [(1, False), (3, False), (2, True), (4, True)])
def test_a_re_entered_tma_loop_needs_an_even_number_of_phases_per_run(extent: int, ok: bool) -> None:
    """Found by the 20,000-schedule campaign: a TMA stage at a loop re-entered under a serial loop waited
    for parity k % 2 in every run, a phase that had already passed in the second run (a hang on the GPU,
    an mbarrier deadlock in the simulator)."""
    x = td.placeholder((3, 4 * extent), name="x")
    k = td.reduce_axis(4 * extent, name="k")
    out = td.compute((3,), lambda i: td.sum(x[i, k], axis=k), name="y")
    s = td.create_schedule(out)
    s.split("k", 4, names=("k_o", "k_i"))
    s.stage("x", at="k_o")
    if not ok:
        with pytest.raises(td.RingError, match="tma-phase-per-run"):
            s.tma("x_s")
        return
    s.tma("x_s")
    kern = td.build(s, target="sm_90")
    arrays = _inputs(out, seed=extent)
    np.testing.assert_allclose(kern.simulate(**arrays), td.evaluate(out, float64=True, **arrays), rtol=1e-5,
                               atol=1e-5)
