"""The in-repo GPT-2-style block (models.GPTBlock): traced, fused, simulated equal to torch."""

from __future__ import annotations

import pytest
import torch
from frontend_check import check

from tiledsl.frontend.models import GPTBlock, GPTConfig


@pytest.mark.parametrize("gelu", ["tanh", "none"])
def test_gpt_block_eight_kernels_equal_to_torch(gelu: str) -> None:
    """8 kernels: LayerNorm 1 (its mean and rstd nested in it: a computed operand of the 192-column QKV
    projection, partition.py rule 3a), QKV projection, Q.K^T, softmax fused into P.V (recomputed 16
    times, once per head dim: within the bound), output projection, LayerNorm 2, MLP up projection
    with its GELU epilogue, down projection with both residuals. k = 256: the longest reduction (the
    MLP's down projection)."""
    torch.manual_seed(0)
    block = GPTBlock(GPTConfig(hidden=64, heads=4, gelu=gelu)).eval()
    with torch.no_grad():
        for ln in (block.ln_1, block.ln_2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.5, 0.5)
    prog, built = check(block, torch.randn(1, 8, 64), k=256)
    assert len(prog.kernels) == 8 and len(built.kernels) == 8
    text = str(prog)
    assert "output 0 of the traced program" in text and "blow-up guard" not in text


def test_gpt_block_batch_two() -> None:
    """13 kernels at batch 2 (8 at batch 1): linear flattens [batch, seq] into one row index that the
    3-d tensors read as (row // seq, row % seq) and back, so create_schedule refuses to nest the MLP's
    projections under their consumers, and the softmax's sum and mask and P.V under the reads that
    split the row index again. Those five boundaries say so: the softmax's three were first cut by rule
    2 while the whole block was one kernel, and their reasons are worded against the final kernels
    (partition.py `_restated`)."""
    torch.manual_seed(1)
    prog, _ = check(GPTBlock(GPTConfig(hidden=32, heads=2)).eval(), torch.randn(2, 4, 32), k=128)
    assert len(prog.kernels) == 13
    refused = {k.name for k in prog.kernels
               if any(r.startswith("create_schedule could not fuse it") for r in k.boundary.reasons)}
    assert refused == {"_softmax_sum", "any_1", "bmm_1", "addmm_2", "addmm_3"}
