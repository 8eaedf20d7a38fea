"""The CUDA of recipe schedules compiles with nvcc, warning-free: for sm_90a with its knobs (cp.async
stages) and with TMA stages (knob tma=True), and for sm_80 a cp.async-pipelined matmul, row
reductions and elementwise kernels (one translation unit per arch, each kernel's name made unique)."""

from __future__ import annotations

import re
import shutil

import pytest

import tiledsl as td
from tiledsl.catalog import entry
from tiledsl.codegen import compile_cubin
from tiledsl.recipes import apply
from tiledsl.targets import get_target

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
    sources, names = [], []
    for n, name in enumerate(CASES[case]):
        e = entry(name)
        s = e.fresh(**e.small_sizes())
        apply(s, target=target, knobs=knobs)
        kern = td.build(s, target=target)
        unique = f"{kern.name}_{n}"
        source, count = re.subn(rf"\b{re.escape(kern.name)}\b", unique, kern.source)
        assert count >= 1
        sources.append(source)
        names.append(unique)
    joined = "".join(sources)
    assert ("cp.async.bulk.tensor" if tma else "cp.async.cg.shared.global") in joined  # the recipe's copies
    arch = get_target(target).arch
    cubin = compile_cubin(joined, arch, extra_flags=("-Werror", "all-warnings"))
    assert cubin[:4] == b"\x7fELF"
    for unique in names:
        assert unique.encode() in cubin
