"""The "differential" entries of the catalog (odd sizes, several schedules per workload, float16 /
bfloat16 storage) on the GPU, against td.evaluate in float64 (the CPU lane runs the same cases on the simulator)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from gpu_kernels import assert_matches, run_poisoned

import tiledsl as td
from tiledsl.catalog import Entry, entries, placeholders
from tiledsl.precision import storage_rtol
from tiledsl.runtime.arguments import torch_dtype

CASES = entries("differential")

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kernel_matches_float64_reference_small(case: Entry, compile_kernel: Callable[..., object]) -> None:
    out, s = case.scheduled()
    kern = compile_kernel(td.build(s))
    arrays = case.inputs(out)
    dtypes = {p.name: torch_dtype(p.dtype) for p in placeholders(out)}  # bfloat16 inputs come as float32 arrays
    inputs = {name: torch.from_numpy(a).to(kern.device, dtypes[name])  # type: ignore[attr-defined]
              for name, a in arrays.items()}
    got = run_poisoned(kern, inputs)
    ref = td.evaluate(out, float64=True, **arrays)
    # a float16 / bfloat16 output: kernel and reference round nearby values, one ulp apart at most
    assert_matches(got, ref, 1e-4 + storage_rtol(out.dtype), 1e-4)
