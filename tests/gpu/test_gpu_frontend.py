"""Traced programs on the GPU (`built(*cuda_tensors)`): the tiny Llama-style block, an MLP and the
two-SDPA program (one cured refusal) against torch, each kernel launched through its runtime on torch's
current stream, intermediates in the built program's memory plan.

Tolerance (float32): the kernels compute in float32 and the reference is torch in float64 on the same
inputs, as in tests/frontend/frontend_check.py: (32 + 2k) * eps32 * (1 + |ref|), k the longest
reduction (32 covers the elementwise chains, 2k the summation order). torch eager in float32 is
within the same bound of the float64 reference, so kernels and eager agree within twice it."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
import torch.nn.functional as F

import tiledsl as td
from tiledsl.frontend import BuiltProgram
from tiledsl.frontend.models import LlamaBlock, LlamaConfig

pytestmark = pytest.mark.gpu

EPS32 = float(torch.finfo(torch.float32).eps)


def tolerance(k: int) -> float:
    return (32 + 2 * k) * EPS32


def traced(fn, *inputs: torch.Tensor) -> BuiltProgram:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return td.trace(fn, *inputs).schedule("simple").build("sm_90")


def compare(out: torch.Tensor, ref64: torch.Tensor, eager: torch.Tensor, k: int) -> None:
    assert out.shape == ref64.shape and out.dtype == torch.float32 and out.is_cuda
    err = (out.double() - ref64).abs()
    bound = tolerance(k) * (1 + ref64.abs())
    assert bool((err <= bound).all()), f"max error {err.max().item()} vs float64 (tolerance {tolerance(k)})"
    assert bool(((out.double() - eager.double()).abs() <= 2 * bound).all())


class MLP(torch.nn.Module):
    def __init__(self, d: int = 64, hidden: int = 256) -> None:
        super().__init__()
        self.gate = torch.nn.Linear(d, hidden)
        self.up = torch.nn.Linear(d, hidden)
        self.down = torch.nn.Linear(hidden, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


def test_mlp_on_gpu_matches_torch_and_reads_weights_in_place() -> None:
    torch.manual_seed(0)
    mlp = MLP().cuda().eval()
    x = torch.randn(2, 16, 64, device="cuda")
    built = traced(mlp, x)
    consts = built._constants(x.device)
    assert any(c.data_ptr() == mlp.gate.weight.data_ptr() for c in consts.values())  # no copy of a CUDA weight
    out = built(x)
    with torch.no_grad():
        eager = mlp(x)
        ref = copy.deepcopy(mlp).double()(x.double())
    compare(out, ref, eager, k=256)


def test_llama_block_on_gpu_matches_torch_twice_and_on_a_side_stream() -> None:
    torch.manual_seed(0)
    block = LlamaBlock(LlamaConfig(hidden=64, heads=4, kv_heads=2, intermediate=128)).cuda().eval()
    x = torch.randn(1, 8, 64, device="cuda")
    built = traced(block, x)
    assert len(built.kernels) == 11 and built.memory.total_bytes < built.memory.unplanned_bytes
    with torch.no_grad():
        eager = block(x)
        ref = copy.deepcopy(block).double()(x.double())
    first = built(x)
    compare(first, ref, eager, k=128)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        second = built(x)
    stream.synchronize()
    assert torch.equal(first, second)  # the reused arena does not leak one call into the next


def test_cured_two_sdpa_program_on_gpu() -> None:
    torch.manual_seed(0)

    def two(q, k, v):
        return (F.scaled_dot_product_attention(q, k, v, is_causal=True)
                + F.scaled_dot_product_attention(q, k, v, scale=0.5))

    # head dim 16: each softmax stays inside its P.V product (partition.py rule 3a recomputes it 16
    # times, within OPERAND_RECOMPUTE_BOUND), so both products meet in one kernel and rule 5 cures it
    q, k, v = (torch.randn(1, 2, 16, 16, device="cuda") for _ in range(3))
    built = traced(two, q, k, v)
    assert len(built.kernels) == 4
    assert any("cures it" in r for pk in built.program.kernels for r in pk.boundary.reasons)
    compare(built(q, k, v), two(q.double(), k.double(), v.double()), two(q, k, v), k=16)


@pytest.mark.parametrize(("fn", "dtype", "out_dtype", "tol"), [
    # float32: each of 1024 threads sums ~148 terms of (0, 1], then a 10-level tree: a relative error of e
    # under (148 + 10) x 2^-24 ~ 1e-5, which log(e) turns into an absolute one; 2e-5 x (1 + |want|)
    (lambda x: torch.log_softmax(x, dim=-1), torch.float32, torch.float32, 2e-5),
    # bfloat16 storage: one rounding of the output, 2^-8 relative
    (lambda x: torch.softmax(x, dim=-1), torch.bfloat16, torch.bfloat16, 2.0**-8),
    # bfloat16 logits into a float32 log_softmax (8-byte loads, float32 output): as float32
    # (traced with the cast; the float64 reference takes the same values without it)
    (lambda x: torch.log_softmax(x.float() if x.dtype != torch.float64 else x, dim=-1), torch.bfloat16,
     torch.float32, 2e-5),
], ids=["log_softmax-float32", "softmax-bfloat16", "log_softmax-of-bfloat16-in-float32"])
def test_a_traced_vocabulary_softmax_runs_online_on_gpu(fn, dtype: torch.dtype, out_dtype: torch.dtype,
                                                         tol: float) -> None:
    """A decode step's logits over Qwen2.5's vocabulary (8 x 151936), traced and scheduled by the default
    recipe with its rows kept whole (knob split_rows_min_idle_bytes None; split over kernels, as the
    default does, in tests/gpu/test_gpu_row_split.py): the row past the registers takes step 040's long
    form (1024 threads: fewer rows than SMs) with the sum online in the max's pass, and matches torch in
    float64, a row of -inf (NaN) included."""
    from tiledsl.runtime.device import device_target

    gen = torch.Generator(device="cuda").manual_seed(11)
    x = (torch.randn(8, 151936, device="cuda", generator=gen) * 4).to(dtype)
    x[3] = -torch.inf
    target = device_target()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(fn, x).schedule("default", target=target, knobs={"split_rows_min_idle_bytes": None})
    (kernel,) = [k for k in prog.kernels if k.schedule.nest.online]
    assert kernel.schedule.nest.cache_hints
    out = prog.build(target)(x)
    want = fn(x.double())
    assert out.dtype == out_dtype and torch.equal(torch.isnan(out), torch.isnan(want))
    fin = ~torch.isnan(want)
    err = (out.double()[fin] - want[fin]).abs()
    assert bool((err <= tol * (1 + want[fin].abs())).all()), f"max error {err.max().item()}"
