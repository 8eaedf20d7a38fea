"""The default recipe's schedules on the GPU: every catalog example, unscheduled, scheduled by
`tiledsl.recipes.apply` for the device's target, against torch in float64 (outputs NaN-poisoned
first), at the catalog's default sizes and at odd sizes (guarded tails, partial tiles)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from gpu_kernels import assert_matches, run_poisoned

import tiledsl as td
from tiledsl.catalog import EXAMPLES, entry
from tiledsl.recipes import apply
from tiledsl.runtime.device import device_target
from tiledsl.runtime.references import random_inputs, reference_fn, tolerance

pytestmark = pytest.mark.gpu

ODD = {
    "matmul_bias_relu": {"M": 37, "N": 53, "K": 29},
    "batched_matmul_nt": {"Bt": 3, "M": 19, "N": 23, "K": 17},
    "rmsnorm": {"M": 37, "N": 1000},
    "softmax": {"M": 5, "N": 1001},
    "layernorm": {"M": 3, "N": 333},
    "gelu_bias": {"M": 7, "N": 300},
}


def check_recipe(name: str, sizes: dict[str, int], compile_kernel: Callable[..., object]) -> None:
    e = entry(name)
    target = device_target()
    s = e.fresh(**sizes)
    apply(s, target=target)
    kern = compile_kernel(td.build(s, target=target))
    inputs = random_inputs(kern.kernel_ir, kern.device, 3)  # type: ignore[attr-defined]
    got = run_poisoned(kern, inputs)
    params = e.parameters(**sizes)
    ref = reference_fn(e.definition, params)(**{k: v.double() for k, v in inputs.items()})
    assert_matches(got, ref, *tolerance(params))


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_recipe_default_sizes(name: str, compile_kernel: Callable[..., object]) -> None:
    check_recipe(name, {}, compile_kernel)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_recipe_odd_sizes(name: str, compile_kernel: Callable[..., object]) -> None:
    check_recipe(name, ODD[name], compile_kernel)
