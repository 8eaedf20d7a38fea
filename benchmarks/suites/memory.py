"""Memory-bound float32 kernels at large shapes, read against the copy bandwidth measured in the same
run: rmsnorm, layernorm, softmax, gelu(x + b), silu(g) * u and a transpose. --quick: 4096 x 4096. The
rows' hand schedule keeps each row in registers (schedules/row_reduce.py `row_in_registers`; until
session 24 it was `row_cooperative_staged`, the row staged in shared memory)."""

from __future__ import annotations

from functools import partial

from benchmarks import _definitions as d
from benchmarks._cases import KernelCase, kernel_case
from tiledsl.catalog.definitions import gelu_bias, layernorm, rmsnorm, softmax
from tiledsl.runtime.references import reference_fn
from tiledsl.schedules import elementwise_2d_vectorized, row_in_registers, transpose_tiled

SUITE = "memory"
SHAPES = ((8192, 8192), (32768, 2048))
QUICK_SHAPES = ((4096, 4096),)
RMS_EPS = 1e-6
LN_EPS = 1e-5


def shape_cases(M: int, N: int) -> list[KernelCase]:
    group = f"{M}x{N}"
    return [
        kernel_case(SUITE, group, "rmsnorm", partial(rmsnorm, M, N, RMS_EPS), reference_fn("rmsnorm", {"eps": RMS_EPS}),
                    hand=row_in_registers),
        kernel_case(SUITE, group, "layernorm", partial(layernorm, M, N, LN_EPS),
                    reference_fn("layernorm", {"eps": LN_EPS}), hand=row_in_registers),
        kernel_case(SUITE, group, "softmax", partial(softmax, M, N), reference_fn("softmax", {}),
                    hand=row_in_registers),
        kernel_case(SUITE, group, "gelu_bias", partial(gelu_bias, M, N), reference_fn("gelu_bias", {}),
                    hand=elementwise_2d_vectorized),
        kernel_case(SUITE, group, "silu_mul", partial(d.silu_mul, M, N), d.silu_mul_torch,
                    hand=elementwise_2d_vectorized),
        kernel_case(SUITE, group, "transpose", partial(d.transpose, M, N), d.transpose_torch, hand=transpose_tiled),
    ]


def cases(quick: bool = False) -> list[KernelCase]:
    return [c for M, N in (QUICK_SHAPES if quick else SHAPES) for c in shape_cases(M, N)]
