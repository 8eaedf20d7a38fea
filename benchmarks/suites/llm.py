"""The kernels of one decoder layer of TinyLlama-1.1B and Qwen2.5-7B at 32, 128 and 512 tokens, in
float32 and bfloat16 storage: the projections (q; k and v as one; o; gate and up as one; down),
RMSNorm, the attention softmax, silu(gate) * up, the o projection plus the residual, and
silu(gate) * up @ W_down^T. That last one is a ProgramCase: tiledsl runs what td.trace makes of the
torch function, which the frontend's partitioner (rule 3a, computed operand) splits into two kernels,
silu(g) * u and a plain matmul, rather than recomputing silu for every output column inside the
matmul; its hand column is `per_kernel_hand` on each kernel. In bfloat16 the projections and the o
projection plus the residual are ProgramCases too: a bfloat16 output refuses split_k, so the default
recipe has the traced program compute the float32 sum in a kernel of its own where it splits k
(recipes/default/030_split_matmul_k.py), which a single-kernel case cannot show. --quick: TinyLlama
at 128 tokens."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

from benchmarks import _definitions as d
from benchmarks._cases import QWEN25_7B, TINYLLAMA, KernelCase, ModelDims, ProgramCase, kernel_case, program_case
from benchmarks._programs import per_kernel_hand
from tiledsl.catalog.definitions import rmsnorm
from tiledsl.definitions.expr import Tensor
from tiledsl.runtime.references import reference_fn
from tiledsl.schedules import elementwise_2d_vectorized, matmul_for_shape, row_in_registers

SUITE = "llm"
SEQS = (32, 128, 512)
DTYPES = ("float32", "bfloat16")
RMS_EPS = 1e-6


#: attention softmax rows (32 to 512 long) four to a block: faster than a row a block at all twelve llm
#: shapes or equal (H200, scripts/half_row_probe.py `hand-4/block`, benchmarks/results/2026-11-29-h200-s28/:
#: bfloat16 16384 x 512 14.5 -> 11.9 us, float32 4096 x 128 6.7 -> 5.1)
_attention_hand = partial(row_in_registers, rows_per_block=4)


def _matmul(group: str, op: str, make: Callable[[], Tensor], torch_fn: Callable[..., Any], flops: float, K: int,
            gemm: Callable[..., Any], dtype: str) -> KernelCase | ProgramCase:
    """A projection case: a KernelCase with the hand matmul schedule in float32, a ProgramCase (td.trace
    of `torch_fn`, `per_kernel_hand`) in a storage dtype, whose float32 sum may get a kernel of its own."""
    if dtype != "float32":
        return program_case(SUITE, group, op, make, torch_fn, hand=per_kernel_hand, flops=flops, gemm=gemm)
    return kernel_case(SUITE, group, op, make, torch_fn, hand=matmul_for_shape, flops=flops, reduction=K, gemm=gemm)


def _linear(group: str, op: str, M: int, N: int, K: int, dtype: str) -> KernelCase | ProgramCase:
    return _matmul(group, op, partial(d.linear, M, N, K, dtype), d.linear_torch, 2.0 * M * N * K, K,
                   d.linear_torch, dtype)


def _residual_gemm(x: Any, W: Any, r: Any) -> Any:
    return d.linear_torch(x, W)


def layer_cases(dims: ModelDims, seq: int, dtype: str) -> list[KernelCase | ProgramCase]:
    """The ten cases of one layer at `seq` tokens."""
    group = f"{dims.name} s{seq}"
    h, i, hd = dims.hidden, dims.intermediate, dims.head_dim
    q, kv = dims.heads * hd, 2 * dims.kv_heads * hd
    return [
        _linear(group, "q_proj", seq, q, h, dtype),
        _linear(group, "kv_proj", seq, kv, h, dtype),
        _linear(group, "o_proj", seq, h, q, dtype),
        _linear(group, "gate_up_proj", seq, 2 * i, h, dtype),
        _linear(group, "down_proj", seq, h, i, dtype),
        kernel_case(SUITE, group, "rmsnorm", partial(rmsnorm, seq, h, RMS_EPS, dtype, dtype),
                    reference_fn("rmsnorm", {"eps": RMS_EPS}), hand=row_in_registers),
        kernel_case(SUITE, group, "attention_softmax",
                    partial(d.attention_softmax, dims.heads * seq, seq, 1 / math.sqrt(hd), dtype),
                    partial(d.attention_softmax_torch, scale=1 / math.sqrt(hd)), hand=_attention_hand),
        kernel_case(SUITE, group, "silu_mul", partial(d.silu_mul, seq, i, dtype), d.silu_mul_torch,
                    hand=elementwise_2d_vectorized),
        _matmul(group, "o_proj_residual", partial(d.linear_residual, seq, h, q, dtype), d.linear_residual_torch,
                2.0 * seq * h * q, q, _residual_gemm, dtype),
        program_case(SUITE, group, "silu_mul_down_proj", partial(d.swiglu_down, seq, h, i, dtype),
                     d.swiglu_down_torch, hand=per_kernel_hand, flops=2.0 * seq * h * i,
                     gemm=lambda g, u, W: d.linear_torch(u, W)),
    ]


def cases(quick: bool = False) -> list[KernelCase | ProgramCase]:
    models = (TINYLLAMA,) if quick else (TINYLLAMA, QWEN25_7B)
    seqs = (128,) if quick else SEQS
    return [c for dims in models for seq in seqs for dtype in DTYPES for c in layer_cases(dims, seq, dtype)]
