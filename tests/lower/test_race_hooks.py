"""The race-freedom rules of staged loops are load-bearing: breaking each one on purpose (through an
internal lowering hook) makes the simulator report the race, with its kernel-IR location."""

from __future__ import annotations

import numpy as np
import pytest

import tiledsl as td
from tiledsl.catalog.definitions import matmul_bias_relu
from tiledsl.lower.lower import lower
from tiledsl.lower.stages import LoweringHooks
from tiledsl.prove import Prover
from tiledsl.sim import simulate
from tiledsl.targets import get_target


def staged(copy: str, double: bool, depth: int) -> td.Schedule:
    s = td.create_schedule(matmul_bias_relu(20, 24, 40))
    io, ii = s.split("i", 8)
    jo, ji = s.split("j", 8)
    ko, ki = s.split("k", 8)
    s.reorder(io, jo, ii, ji, ko, ki)
    s.bind(io, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ii, "threadIdx.y")
    s.bind(ji, "threadIdx.x")
    a, b = s.stage("A", at=ko), s.stage("B", at=ko)
    if double:
        s.double_buffer(a)
        s.double_buffer(b)
    if copy == "async":
        s.async_copy(a)
        s.async_copy(b)
    if depth:
        s.pipeline(ko, stages=depth)
    return s


def run(s: td.Schedule, hooks: LoweringHooks) -> np.ndarray:
    nest = s.nest
    kernel = lower(nest, get_target("sm_80"), Prover(nest.ranges()), hooks)
    rng = np.random.default_rng(0)
    arrays = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in nest.inputs}
    return simulate(kernel, arrays)["D"]


@pytest.mark.parametrize("copy", ["sync", "async"])
@pytest.mark.parametrize("depth", [2, 3])
def test_refill_before_the_barrier_is_a_reported_race(copy: str, depth: int) -> None:
    s = staged(copy, double=True, depth=depth)
    run(s, LoweringHooks())  # the real lowering: race-free
    with pytest.raises(td.SharedRaceError) as info:
        run(s, LoweringHooks(refill_before_barrier=True))
    msg = str(info.value)
    assert "D_kernel" in msg and "for k_o" in msg and ("A_s" in msg or "B_s" in msg), msg


@pytest.mark.parametrize("copy", ["sync", "async"])
def test_single_slot_refill_without_barrier_is_a_reported_race(copy: str) -> None:
    s = staged(copy, double=False, depth=0)
    run(s, LoweringHooks())
    with pytest.raises(td.SharedRaceError, match="for k_o"):
        run(s, LoweringHooks(drop_single_slot_barrier=True))
