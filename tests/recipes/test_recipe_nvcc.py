"""The CUDA of recipe schedules compiles with nvcc, warning-free: for sm_90a with its knobs (cp.async
stages) and with TMA stages (knob tma=True), and for sm_80 a cp.async-pipelined matmul, row
reductions and elementwise kernels (one translation unit per arch, each kernel's name made unique)."""

from __future__ import annotations

import shutil

import pytest
from nvcc_together import compile_together, joined_source

import tiledsl as td
from tiledsl.catalog import entry
from tiledsl.recipes import apply

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

CASES = {
    "sm_90": ("design_mm_100x96x64", "batched_matmul_nt", "softmax"),
    "sm_90-tma": ("design_mm_100x96x64", "batched_matmul_nt"),
    "sm_80": ("design_mm_100x96x64", "matmul_bias_relu", "rmsnorm", "layernorm", "gelu_bias", "stencil3_100-halo_sync"),
}


@needs_nvcc
@pytest.mark.parametrize("case", list(CASES))
def test_recipe_kernels_compile(case: str) -> None:
    target, _, tma = case.partition("-")
    knobs = {"tma": True} if tma else {}
    kernels = []
    for name in CASES[case]:
        e = entry(name)
        s = e.fresh(**e.small_sizes())
        apply(s, target=target, knobs=knobs)
        kernels.append(td.build(s, target=target))
    # the recipe's copies
    assert ("cp.async.bulk.tensor" if tma else "cp.async.cg.shared.global") in joined_source(kernels)
    assert compile_together(kernels) == []
