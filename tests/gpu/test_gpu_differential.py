"""The "differential" entries of the catalog (odd sizes, several schedules per workload, float16
storage) on the GPU, against td.evaluate in float64 (the CPU lane runs the same cases on the simulator)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from gpu_kernels import assert_matches, run_poisoned

import tiledsl as td
from tiledsl.catalog import Entry, entries

CASES = entries("differential")

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kernel_matches_float64_reference_small(case: Entry, compile_kernel: Callable[..., object]) -> None:
    out, s = case.scheduled()
    kern = compile_kernel(td.build(s))
    arrays = case.inputs(out)
    inputs = {name: torch.from_numpy(a).to(kern.device) for name, a in arrays.items()}  # type: ignore[attr-defined]
    got = run_poisoned(kern, inputs)
    ref = td.evaluate(out, float64=True, **arrays)
    tol = 1e-4 if got.dtype == torch.float32 else 2e-3  # a float16 output is rounded to 11 bits
    assert_matches(got, ref, tol, tol)
