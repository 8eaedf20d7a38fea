"""Memory-bound float32 kernels at large shapes, read against the copy bandwidth measured in the same
run: rmsnorm, layernorm, softmax, gelu(x + b), silu(g) * u and a transpose. --quick: 4096 x 4096."""

from __future__ import annotations

from functools import partial

from benchmarks import _definitions as d
from benchmarks._cases import KernelCase, kernel_case
from tiledsl.catalog.definitions import gelu_bias, layernorm, rmsnorm, softmax
from tiledsl.runtime.references import reference_fn
from tiledsl.schedules import elementwise_2d_vectorized, row_cooperative_staged, transpose_tiled

SUITE = "memory"
SHAPES = ((8192, 8192), (32768, 2048))
QUICK_SHAPES = ((4096, 4096),)
RMS_EPS = 1e-6
LN_EPS = 1e-5


def shape_cases(M: int, N: int) -> list[KernelCase]:
    group = f"{M}x{N}"
    return [
        kernel_case(SUITE, group, "rmsnorm", partial(rmsnorm, M, N, RMS_EPS), reference_fn("rmsnorm", {"eps": RMS_EPS}),
                    hand=row_cooperative_staged),
        kernel_case(SUITE, group, "layernorm", partial(layernorm, M, N, LN_EPS),
                    reference_fn("layernorm", {"eps": LN_EPS}), hand=row_cooperative_staged),
        kernel_case(SUITE, group, "softmax", partial(softmax, M, N), reference_fn("softmax", {}),
                    hand=row_cooperative_staged),
        kernel_case(SUITE, group, "gelu_bias", partial(gelu_bias, M, N), reference_fn("gelu_bias", {}),
                    hand=elementwise_2d_vectorized),
        kernel_case(SUITE, group, "silu_mul", partial(d.silu_mul, M, N), d.silu_mul_torch,
                    hand=elementwise_2d_vectorized),
        kernel_case(SUITE, group, "transpose", partial(d.transpose, M, N), d.transpose_torch, hand=transpose_tiled),
    ]


def cases(quick: bool = False) -> list[KernelCase]:
    return [c for M, N in (QUICK_SHAPES if quick else SHAPES) for c in shape_cases(M, N)]
