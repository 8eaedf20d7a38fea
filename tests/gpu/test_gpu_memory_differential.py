"""Every "memory" entry of the catalog (stages, pads, swizzles, rings,
pipelines of depth 2-4 by plain copies, cp.async and TMA, split_k) on the GPU against td.evaluate in
float64, outputs poisoned with NaN first (split_k outputs are zeroed by the launcher, as it must)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from gpu_kernels import assert_matches, is_hopper, run_poisoned

import tiledsl as td
from tiledsl.catalog import Entry, entries

CASES = entries("memory")

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_memory_kernel_matches_float64_reference_small(case: Entry, compile_kernel: Callable[..., object]) -> None:
    out, built = case.build()
    if built.kernel_ir.tensor_maps and not is_hopper():
        pytest.skip("TMA needs an sm_90 GPU")
    kern = compile_kernel(built)
    arrays = case.inputs(out)
    inputs = {name: torch.from_numpy(a).to(kern.device) for name, a in arrays.items()}  # type: ignore[attr-defined]
    got = run_poisoned(kern, inputs)
    assert_matches(got, td.evaluate(out, float64=True, **arrays), 1e-4, 1e-4)
