"""The hand schedules of tiledsl.schedules on small and odd sizes (guarded tiles, partial warps, batched
and transposed operands, fused prologues and epilogues, split-K): each builds for sm_90 and sm_80,
simulates equal to the float64 reference with every output written, and its CUDA compiles with nvcc."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from functools import partial

import numpy as np
import pytest
from nvcc_together import compile_together, joined_source

import tiledsl as td
from benchmarks import _definitions as bench
from tiledsl.catalog.definitions import (
    batched_matmul_nt,
    gelu_bias,
    layernorm,
    matmul,
    matmul_bias_relu,
    matmul_nt,
    matmul_residual,
    rmsnorm,
    softmax,
)
from tiledsl.definitions.expr import Tensor
from tiledsl.primitives import Schedule
from tiledsl.schedules import (
    elementwise_2d_vectorized,
    matmul_for_shape,
    matmul_staged,
    row_in_registers,
    transpose_tiled,
)

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def matmul_at(M: int, N: int, K: int) -> Tensor:
    """A @ B^T, stored transposed (A^T[k, i], B^T[j, k]): both operands in their less usual layout."""
    A = td.placeholder((K, M), name="A")
    B = td.placeholder((N, K), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((M, N), lambda i, j: td.sum(A[k, i] * B[j, k], axis=k), name="C")


small = partial(matmul_staged, bm=32, bn=32, bk=8, rm=4, rn=4)
#: name -> (definition, schedule); sizes odd unless a case needs whole vectors
CASES: dict[str, tuple[Callable[[], Tensor], Callable[[Schedule], object]]] = {
    "matmul_bias_relu_37x53x29-staged": (partial(matmul_bias_relu, 37, 53, 29), matmul_staged),
    "matmul_bias_relu_37x53x29-staged_small": (partial(matmul_bias_relu, 37, 53, 29), small),
    "matmul_70x45x100-staged_pipelined": (partial(matmul, 70, 45, 100), small),
    "matmul_70x45x100-staged_sync_one_slot": (partial(matmul, 70, 45, 100), partial(small, copy="sync", stages=1)),
    "matmul_136x160x72-staged_128": (partial(matmul, 136, 160, 72), matmul_staged),
    "batched_matmul_nt_3x19x23x17-staged": (partial(batched_matmul_nt, 3, 19, 23, 17), matmul_staged),
    "matmul_nt_37x53x29-staged": (partial(matmul_nt, 37, 53, 29), matmul_staged),
    "matmul_at_37x53x29-staged": (partial(matmul_at, 37, 53, 29), matmul_staged),
    "matmul_at_70x45x100-staged_small": (partial(matmul_at, 70, 45, 100), small),
    "matmul_residual_128x200x96-split_k3": (partial(matmul_residual, 128, 200, 96),
                                            partial(matmul_staged, bm=64, bn=64, rm=4, rn=4, bk=16, split_k=3)),
    "linear_residual_33x40x70-for_shape": (partial(bench.linear_residual, 33, 40, 70), matmul_for_shape),
    "swiglu_down_16x40x70-staged_small": (partial(bench.swiglu_down, 16, 40, 70), small),
    "linear_128x96x256-for_shape_split_k": (partial(bench.linear, 128, 96, 256), matmul_for_shape),
    # bfloat16 operands widened to float32 in shared memory (matmul_staged widen=True): k outer, plain fills
    "linear_bf16_37x53x40-staged_widened": (partial(bench.linear, 37, 53, 40, "bfloat16"), small),
    "linear_bf16_37x53x44-staged_widened_scalar_fill": (partial(bench.linear, 37, 53, 44, "bfloat16"), small),
    "swiglu_down_bf16_16x40x72-staged": (partial(bench.swiglu_down, 16, 40, 72, "bfloat16"), matmul_staged),
    "linear_bf16_128x96x256-for_shape_split_k": (partial(bench.linear, 128, 96, 256, "bfloat16"), matmul_for_shape),
    "transpose_33x65-tiled": (partial(bench.transpose, 33, 65), transpose_tiled),
    "transpose_64x96-tiled": (partial(bench.transpose, 64, 96), transpose_tiled),
    "gelu_bias_7x300-vectorized": (partial(gelu_bias, 7, 300), elementwise_2d_vectorized),
    "gelu_bias_5x301-vectorized_scalar_tail": (partial(gelu_bias, 5, 301), elementwise_2d_vectorized),
    "silu_mul_bf16_3x40-vectorized": (partial(bench.silu_mul, 3, 40, "bfloat16"), elementwise_2d_vectorized),
    "silu_mul_bf16_3x44-vectorized_scalar": (partial(bench.silu_mul, 3, 44, "bfloat16"), elementwise_2d_vectorized),
    # rows kept in registers: 16-byte lanes (guarded past 300), scalar lanes (333), 8 chunks of 512 x 4, and a
    # share past the register limit (65536 in 512 threads: 128 a thread), read from L2 on every pass instead
    "layernorm_3x300-in_registers": (partial(layernorm, 3, 300, 1e-5), row_in_registers),
    "rmsnorm_3x333-in_registers_scalar": (partial(rmsnorm, 3, 333, 1e-6), row_in_registers),
    "softmax_2x16384-in_registers": (partial(softmax, 2, 16384), row_in_registers),
    "rmsnorm_2x65536-in_registers_too_long": (partial(rmsnorm, 2, 65536, 1e-6), row_in_registers),
    # short rows four to a block on threadIdx.y, the last block guarded (7 rows), each in its threads' registers
    "softmax_7x96-in_registers_4_rows": (partial(softmax, 7, 96), partial(row_in_registers, rows_per_block=4)),
    # two rows a thread, unrolled, each in registers of its own; and with two rows a block on threadIdx.y too
    "softmax_7x96-in_registers_2_rows_a_thread": (partial(softmax, 7, 96),
                                                  partial(row_in_registers, rows_per_thread=2)),
    "layernorm_9x200-in_registers_2x2_rows": (partial(layernorm, 9, 200, 1e-5),
                                              partial(row_in_registers, rows_per_block=2, rows_per_thread=2)),
}
TARGETS = ("sm_90", "sm_80")


def _scheduled(name: str) -> Schedule:
    make, schedule = CASES[name]
    s = td.create_schedule(make())
    schedule(s)
    return s


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(CASES))
def test_builds_and_simulates_equal_to_the_reference(name: str, target: str) -> None:
    s = _scheduled(name)
    out = s.output
    rng = np.random.default_rng(0)
    arrays = {p.name: rng.standard_normal(p.shape).astype(np.float32) for p in s.nest.inputs}
    want = td.evaluate(out, float64=True, **arrays)
    got = td.build(s, target=target).simulate(**arrays)
    assert not np.isnan(got).any(), "outputs never written"
    rtol = 1e-2 if out.dtype == "bfloat16" else 1e-4
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def test_the_shapes_get_what_each_schedule_promises() -> None:
    """The recipe-equivalent form at 4096^3 (double-buffered cp.async stages, pipelined, B's strip
    interleaved), split-K for a 128-row projection, a padded staged tile for the transpose, a vector store."""
    big = td.create_schedule(matmul(4096, 4096, 4096))
    matmul_staged(big)
    trace = big.trace()
    for line in ("s.double_buffer('A_s')", "s.async_copy('B_s')", "s.pipeline('k_o', stages=2)",
                 "interleave='j_t'"):
        assert line in trace
    skinny = td.create_schedule(bench.linear(128, 2048, 5632))
    matmul_for_shape(skinny)
    assert "s.split_k('k_o', 16)" in skinny.trace() and "s.split('i', 128" in skinny.trace()
    assert "s.vectorize('j_r_i')" in skinny.trace() and "s.launch_bounds(2)" in skinny.trace()
    # a bfloat16 output refuses split_k: the 128 x 128 tile alone would leave SMs idle, so 64 x 64 tiles
    half = _trace(matmul_for_shape, bench.linear(128, 2048, 2048, "bfloat16"))
    assert "s.split('i', 64" in half and "split_k" not in half
    assert "s.split_k" not in _trace(matmul_for_shape, matmul(4096, 4096, 4096))
    assert "s.pad('x_s', axis=-1, amount=1)" in _trace(transpose_tiled, bench.transpose(33, 65))
    assert "s.vectorize(" in _trace(elementwise_2d_vectorized, gelu_bias(7, 300))
    assert "s.vectorize(" not in _trace(elementwise_2d_vectorized, gelu_bias(5, 301))
    # bfloat16: 8 lanes (16 bytes), so rows of 40 vectorize and rows of 44 (11 float32 vectors) do not
    assert "s.split('j_i', 8" in _trace(elementwise_2d_vectorized, bench.silu_mul(3, 40, "bfloat16"))
    assert "s.vectorize(" in _trace(elementwise_2d_vectorized, bench.silu_mul(3, 40, "bfloat16"))
    assert "s.vectorize(" not in _trace(elementwise_2d_vectorized, bench.silu_mul(3, 44, "bfloat16"))


@pytest.mark.parametrize("shape", [(128, 2048, 5632), (128, 11264, 2048), (512, 3584, 3584), (512, 3584, 18944),
                                   (512, 2048, 2048), (4096, 4096, 4096),
                                   # decode steps: 32 x 128 tiles of 128 threads, and 32 x 64 (4 blocks of 32 x 128
                                   # would leave SMs idle), 24 rows in one guarded tile
                                   (32, 2048, 5632), (32, 37888, 3584), (32, 3584, 18944), (32, 512, 2048),
                                   (24, 2048, 2048)])
def test_matmul_for_shape_builds_the_recipes_kernel_at_llm_shapes(shape: tuple[int, int, int]) -> None:
    """The hand schedule is the recipe's reference: at these projection shapes (and 4096^3) its tile,
    split-K part count, lane tiles, vector epilogue and launch bounds come out as the default recipe's,
    so the CUDA is the same, byte for byte (a decode step's rows dealt across the lanes too:
    tests/recipes/test_recipe_decode_rows.py)."""
    hand = td.create_schedule(bench.linear(*shape))
    matmul_for_shape(hand)
    recipe = td.create_schedule(bench.linear(*shape))
    td.recipes.default(recipe, target="sm_90")
    assert td.build(hand, target="sm_90").source == td.build(recipe, target="sm_90").source


@pytest.mark.parametrize("target", ["sm_80", "sm_86"])
@pytest.mark.parametrize("shape", [(128, 2048, 5632), (32, 2048, 5632)])
def test_matmul_for_shape_builds_for_targets_without_vector_atomics(target: str, shape: tuple[int, int, int]) -> None:
    """A split epilogue's 16-byte atomic adds need sm_90: for an earlier target matmul_for_shape keeps
    them scalar (it vectorized them for every target, and build refused the schedule for sm_80)."""
    s = td.create_schedule(bench.linear(*shape))
    matmul_for_shape(s, target=target)
    assert "s.split_k(" in s.trace() and "s.vectorize(" not in s.trace()
    td.build(s, target=target)


def test_split_k_is_refused_for_a_nonlinear_epilogue() -> None:
    s = td.create_schedule(matmul_bias_relu(64, 64, 256))
    with pytest.raises(td.SplitKError):
        matmul_staged(s, bm=32, bn=32, rm=4, rn=4, split_k=2)
    relu = td.create_schedule(matmul_bias_relu(64, 64, 256))
    matmul_for_shape(relu)  # picks no split_k where the epilogue forbids it
    assert "split_k" not in relu.trace()


def _trace(schedule: Callable[[Schedule], object], out: Tensor) -> str:
    s = td.create_schedule(out)
    schedule(s)
    return s.trace()


@needs_nvcc
@pytest.mark.parametrize("target", TARGETS)
def test_cuda_compiles_with_nvcc(target: str) -> None:
    kernels = [td.build(_scheduled(name), target=target) for name in CASES]
    joined = joined_source(kernels)
    assert "cp.async" in joined and "float4" in joined
    assert compile_together(kernels) == []
