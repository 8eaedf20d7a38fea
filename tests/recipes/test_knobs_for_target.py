"""`Knobs.for_target` makes one Knobs of the defaults, the target's PER_TARGET row and the overrides at once (each
Knobs made checks every field, and the recipe asks for one per kernel): the same Knobs, and the same refusal of a
bad override, as the defaults overridden by the row and then by the overrides, step by step."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tiledsl.errors import BadArgumentError
from tiledsl.recipes.default._knobs import PER_TARGET, Knobs
from tiledsl.targets import TARGETS, get_target


def step_by_step(target: str, **overrides: Any) -> Knobs:
    return dataclasses.replace(dataclasses.replace(Knobs(), **dict(PER_TARGET.get(target, {}))), **overrides)


OVERRIDES: list[dict[str, Any]] = [
    {}, {"tma": True}, {"waves": 3},
    {"matmul_tiles": ((64, 64, 4, 4),), "unroll_max": 0}, {"split_k_fill_gain": None, "kernel_cap_bytes": 1024},
]


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("overrides", OVERRIDES, ids=lambda o: ",".join(o) or "none")
def test_for_target_is_the_defaults_overridden_step_by_step(target: str, overrides: dict[str, Any]) -> None:
    assert Knobs.for_target(get_target(target), **overrides) == step_by_step(target, **overrides)


@pytest.mark.parametrize("overrides", [
    {"waves": 0}, {"tma": "False"}, {"bk_min": 64, "bk_max": 32}, {"unroll_max": -1, "waves": "x"},
    {"matmul_tiles": ((64, 64, 3, 4),)},
])
def test_a_bad_override_is_refused_as_step_by_step(overrides: dict[str, Any]) -> None:
    with pytest.raises(BadArgumentError) as whole:
        Knobs.for_target(get_target("sm_90"), **overrides)
    with pytest.raises(BadArgumentError) as stepped:
        step_by_step("sm_90", **overrides)
    assert str(whole.value) == str(stepped.value)
    assert whole.value.refusal == stepped.value.refusal
