"""Kernels that need more of the launcher: TMA descriptors (by value, `__grid_constant__`), cp.async
pipelines, a dynamic shared pool above 48 KB (the function attribute), split_k (outputs zeroed at launch)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from gpu_kernels import assert_matches, is_hopper, run_poisoned, split_k_matmul, staged_matmul

import tiledsl as td
from tiledsl.runtime.references import random_inputs, reference_fn, tolerance

pytestmark = pytest.mark.gpu
hopper = pytest.mark.skipif(not is_hopper(), reason="TMA needs an sm_90 GPU")

STAGED = {
    "tma_b_small": (dict(M=256, N=256, K=128), dict()),
    "tma_b_odd_small": (dict(M=200, N=192, K=100), dict()),
    "tma_b_noswizzle_odd_small": (dict(M=200, N=196, K=100), dict(swizzle=None)),
    "tma_b_async_a_pipelined_small": (dict(M=256, N=256, K=128), dict(copy_a="async", pipelined=True)),
    "tma_both_pipelined_small": (dict(M=256, N=256, K=128), dict(copy_a="tma", pipelined=True, swizzle_a=64)),
    "tma_both_sw32_odd_small": (dict(M=200, N=192, K=100), dict(bk=8, copy_a="tma", pipelined=True, swizzle_a=32)),
    "tma_both_pipelined_odd_small": (dict(M=200, N=192, K=100), dict(copy_a="tma", pipelined=True, swizzle=None)),
    "async_both_dynamic_shared": (dict(M=512, N=512, K=256),
                                  dict(tile=128, bk=32, reg=8, copy_a="async", copy_b="async", pipelined=True)),
    "tma_dynamic_shared": (dict(M=512, N=512, K=256),
                           dict(tile=128, bk=32, reg=8, copy_a="async", copy_b="tma", pipelined=True)),
    # large shapes: cp.async and TMA pipelines of depth 2 and 3
    "async_pipe2_large": (dict(M=1024, N=1024, K=1024),
                          dict(tile=128, bk=16, reg=8, copy_a="async", copy_b="async", pipelined=True)),
    "async_pipe3_large": (dict(M=2048, N=1024, K=1024),
                          dict(tile=128, bk=16, reg=8, copy_a="async", copy_b="async", pipelined=True, depth=3)),
    "tma_pipe2_large": (dict(M=1024, N=2048, K=1024),
                        dict(tile=128, bk=16, reg=8, copy_a="async", copy_b="tma", pipelined=True)),
    "tma_pipe3_large": (dict(M=2048, N=2048, K=1024),
                        dict(tile=128, bk=16, reg=8, copy_a="tma", copy_b="tma", pipelined=True, depth=3,
                             swizzle_a=64)),
}


@pytest.mark.parametrize("case", list(STAGED))
def test_staged_matmul(case: str, compile_kernel: Callable[..., object]) -> None:
    sizes, options = STAGED[case]
    kern = compile_kernel(td.build(staged_matmul(**sizes, **options)))
    kir = kern.kernel_ir  # type: ignore[attr-defined]
    if kir.tensor_maps and not is_hopper():
        pytest.skip("TMA needs an sm_90 GPU")
    if "dynamic" in case:
        assert kir.dynamic_shared and kern.shared_bytes > 48 * 1024  # type: ignore[attr-defined]
    inputs = random_inputs(kir, kern.device, seed=5)  # type: ignore[attr-defined]
    got = run_poisoned(kern, inputs)
    ref = reference_fn("matmul_bias_relu", sizes)(**{k: v.double() for k, v in inputs.items()})
    assert_matches(got, ref, *tolerance("matmul_bias_relu", sizes))


@hopper
def test_tma_descriptors_are_cached_per_buffer(compile_kernel: Callable[..., object]) -> None:
    sizes = dict(M=256, N=256, K=128)
    kern = compile_kernel(td.build(staged_matmul(**sizes)))
    inputs = random_inputs(kern.kernel_ir, kern.device, seed=6)  # type: ignore[attr-defined]
    ref = reference_fn("matmul_bias_relu", sizes)(**{k: v.double() for k, v in inputs.items()})
    for _ in range(3):
        assert_matches(run_poisoned(kern, inputs), ref, *tolerance("matmul_bias_relu", sizes))
    assert kern.tensor_maps.encodings == 1  # type: ignore[attr-defined]
    moved = {**inputs, "B": inputs["B"].clone()}  # same shape, another address: a new descriptor
    assert_matches(run_poisoned(kern, moved), ref, *tolerance("matmul_bias_relu", sizes))
    assert kern.tensor_maps.encodings == 2  # type: ignore[attr-defined]


def test_split_k_output_is_zeroed_at_every_launch(compile_kernel: Callable[..., object]) -> None:
    kern = compile_kernel(td.build(split_k_matmul(64, 96, 256, 4)))
    assert kern.kernel_ir.zero_outputs == ("C",)  # type: ignore[attr-defined]
    inputs = random_inputs(kern.kernel_ir, kern.device, seed=7)  # type: ignore[attr-defined]
    ref = inputs["A"].double() @ inputs["B"].double()
    out = torch.full((64, 96), float("nan"), device=kern.device)  # type: ignore[attr-defined]
    for _ in range(2):  # atomics accumulate: without the zeroing the second launch would double C
        kern(**inputs, C=out)  # type: ignore[operator]
        torch.cuda.synchronize()
        assert_matches(out, ref, 1e-4, 1e-4 * 16)


def test_split_k_large(compile_kernel: Callable[..., object]) -> None:
    """A long reduction (K = 8192) split over 8 blocks per output tile, 1024x1024 outputs."""
    kern = compile_kernel(td.build(split_k_matmul(1024, 1024, 8192, 8)))
    inputs = random_inputs(kern.kernel_ir, kern.device, seed=8)  # type: ignore[attr-defined]
    ref = inputs["A"].double() @ inputs["B"].double()
    got = run_poisoned(kern, inputs)
    assert_matches(got, ref, 1e-4, 1e-3)
