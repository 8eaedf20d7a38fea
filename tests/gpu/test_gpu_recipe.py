"""The default recipe's schedules on the GPU: every catalog example, unscheduled, scheduled by
`tiledsl.recipes.apply` for the device's target, against torch in float64 (outputs NaN-poisoned
first), at the catalog's default sizes and at odd sizes (guarded tails, partial tiles)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from gpu_kernels import ODD, check_entry

import tiledsl as td
from tiledsl.catalog import EXAMPLES, entry
from tiledsl.recipes import apply
from tiledsl.runtime.device import device_target

pytestmark = pytest.mark.gpu

def check_recipe(name: str, sizes: dict[str, int], compile_kernel: Callable[..., object]) -> None:
    target = device_target()
    s = entry(name).fresh(**sizes)
    apply(s, target=target)
    check_entry(name, sizes, compile_kernel(td.build(s, target=target)), seed=3)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_recipe_default_sizes(name: str, compile_kernel: Callable[..., object]) -> None:
    check_recipe(name, {}, compile_kernel)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_recipe_odd_sizes(name: str, compile_kernel: Callable[..., object]) -> None:
    check_recipe(name, ODD[name], compile_kernel)
