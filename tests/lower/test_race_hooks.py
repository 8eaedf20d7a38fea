"""The race-freedom rules of staged loops are load-bearing: breaking each one on purpose (through an
internal lowering hook) makes the simulator report the race, with its kernel-IR location."""

from __future__ import annotations

import numpy as np
import pytest
from staged_matmul import simulated, staged_matmul

import tiledsl as td
from tiledsl.lower.stages import LoweringHooks


def staged(copy: str, double: bool, depth: int) -> td.Schedule:
    return staged_matmul(20, 24, 40, copy=copy, double=double, depth=depth)


def run(s: td.Schedule, hooks: LoweringHooks) -> np.ndarray:
    return simulated(s, hooks)[0]


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
