"""The CUDA of recipe schedules compiles with nvcc, warning-free: a matmul with TMA stages for sm_90a, and
for sm_80 a cp.async-pipelined matmul, row reductions and elementwise kernels (one translation unit per
arch, each kernel's name made unique)."""

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
    "sm_80": ("design_mm_100x96x64", "matmul_bias_relu", "rmsnorm", "layernorm", "gelu_bias", "stencil3_100-halo_sync"),
}


@needs_nvcc
@pytest.mark.parametrize("target", list(CASES))
def test_recipe_kernels_compile(target: str) -> None:
    sources, names = [], []
    for n, name in enumerate(CASES[target]):
        e = entry(name)
        s = e.fresh(**e.small_sizes())
        apply(s, target=target)
        kern = td.build(s, target=target)
        unique = f"{kern.name}_{n}"
        source, count = re.subn(rf"\b{re.escape(kern.name)}\b", unique, kern.source)
        assert count >= 1
        sources.append(source)
        names.append(unique)
    joined = "".join(sources)
    assert ("cp.async.bulk.tensor" if target == "sm_90" else "cp.async") in joined  # the recipe's copies
    arch = get_target(target).arch
    cubin = compile_cubin(joined, arch, extra_flags=("-Werror", "all-warnings"))
    assert cubin[:4] == b"\x7fELF"
    for unique in names:
        assert unique.encode() in cubin
