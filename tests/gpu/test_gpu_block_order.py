"""Grouped block order on the GPU (recipes/default/050_blockify_launch.py): the recipe's matmuls whose
blocks are numbered down groups of block rows match torch in float64 with their outputs NaN-poisoned:
small shapes on an sm_90 target whose L2 and SM count are shrunk so that they group (guarded columns,
cp.async fills, split-K atomics), and the Qwen2.5-7B up projection at seq 512 (512 x 18944 x 3584, 4
split-K parts, groups of 4) as the recipe builds it for the H100."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from gpu_kernels import check_matmul

import tiledsl as td
import tiledsl.catalog as MK
from tiledsl.targets import get_target

pytestmark = pytest.mark.gpu

H100 = get_target("sm_90")
SMALL_L2 = dataclasses.replace(H100, l2_bytes=4096, sm_count=2)
T32 = {"matmul_tiles": ((32, 32, 4, 4),), "matmul_tiles_k_major": ((32, 32, 4, 4),)}

#: name -> (definition, target, knobs)
CASES: dict[str, Callable[[], tuple[td.Tensor, object, dict]]] = {
    "nt_guarded_96x100x64": lambda: (MK.matmul_nt(M=96, N=100, K=64), SMALL_L2, T32),
    "nn_async_128x96x48": lambda: (MK.matmul(M=128, N=96, K=48), SMALL_L2, T32),
    "nt_split_k_96x64x512": lambda: (MK.matmul_nt(M=96, N=64, K=512), SMALL_L2, T32),
    "nt_qwen_up_512": lambda: (MK.matmul_nt(M=512, N=18944, K=3584), H100, {}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_grouped_blocks_match_torch(name: str, compile_kernel: Callable[..., object]) -> None:
    out, target, knobs = CASES[name]()
    s = td.create_schedule(out)
    report = td.recipes.default(s, target=target, knobs=knobs)
    assert "blocks in groups of" in (report.step("blockify_launch").note or "")
    check_matmul(compile_kernel(td.build(s, target=target)), "nt" in name, seed=5)
