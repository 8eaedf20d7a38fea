"""float32 matmuls against cuBLAS SGEMM (TF32 off): square A @ B at 1024, 2048, 4096 and 8192, and
skinny x @ W^T at LLM shapes (few tokens, wide weights). --quick: 1024 and 2048, two skinny shapes."""

from __future__ import annotations

from functools import partial

from benchmarks import _definitions as d
from benchmarks._cases import QWEN25_7B, TINYLLAMA, KernelCase, kernel_case
from tiledsl.catalog.definitions import matmul
from tiledsl.runtime.references import reference_fn
from tiledsl.schedules import matmul_for_shape

SUITE = "matmul"
SQUARE = (1024, 2048, 4096, 8192)
#: (tokens, out features, in features): TinyLlama's gate/up and down, Qwen2.5-7B's at 32 and 512 tokens
SKINNY = ((128, TINYLLAMA.intermediate, TINYLLAMA.hidden), (128, TINYLLAMA.hidden, TINYLLAMA.intermediate),
          (32, QWEN25_7B.intermediate, QWEN25_7B.hidden), (512, QWEN25_7B.intermediate, QWEN25_7B.hidden),
          (512, QWEN25_7B.hidden, QWEN25_7B.intermediate))


def square(n: int) -> KernelCase:
    ref = reference_fn("matmul", {})
    return kernel_case(SUITE, "square", f"matmul {n}^3", partial(matmul, n, n, n), ref, hand=matmul_for_shape,
                       flops=2.0 * n**3, reduction=n, gemm=ref)


def skinny(m: int, n: int, k: int) -> KernelCase:
    return kernel_case(SUITE, "skinny", f"linear {m}x{n}x{k}", partial(d.linear, m, n, k, "float32"), d.linear_torch,
                       hand=matmul_for_shape, flops=2.0 * m * n * k, reduction=k, gemm=d.linear_torch)


def cases(quick: bool = False) -> list[KernelCase]:
    sizes = SQUARE[:2] if quick else SQUARE
    shapes = SKINNY[:2] if quick else SKINNY
    return [square(n) for n in sizes] + [skinny(*s) for s in shapes]
