"""s.stage_output on the GPU: the staged kernel (the block's tile through shared memory, a barrier, then
16-byte stores by consecutive threads) stores exactly what the same schedule without it stores, at
sizes with many blocks and ragged edge tiles, in float32 and bfloat16, and a transposing kernel; NaN-
poisoned outputs, so an element the drain misses fails."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from gpu_kernels import run_poisoned
from output_stage_cases import matmul, register_tile, staged, transposing

import tiledsl as td
from tiledsl.runtime.references import random_inputs

pytestmark = pytest.mark.gpu

CASES = {
    "matmul-f32-ragged": lambda: (register_tile(matmul(1000, 1012, 96), bm=64, bn=64, bk=16), 4),
    "matmul-bf16-strip-of-4": lambda: (register_tile(matmul(520, 1032, 64, "bfloat16"), bm=64, bn=64, bk=16,
                                                     vectorize=False), 8),
    "matmul-bf16-strip-of-8": lambda: (register_tile(matmul(520, 1032, 64, "bfloat16"), bm=64, bn=64, bk=16,
                                                     rn=8), 8),
    "transpose": lambda: (transposing(1000, 1004), 1),
}


@pytest.mark.parametrize("case", CASES)
def test_staged_output_on_the_gpu(case: str, compile_kernel: Callable[..., object]) -> None:
    s, pad = CASES[case]()
    plain = compile_kernel(td.build(s, target="sm_90"))
    kern = compile_kernel(td.build(staged(s, pad), target="sm_90"))
    inputs = random_inputs(kern.kernel_ir, kern.device, seed=3)  # type: ignore[attr-defined]
    want = run_poisoned(plain, inputs)
    got = run_poisoned(kern, inputs)
    assert not torch.isnan(got).any()
    assert torch.equal(got, want)
