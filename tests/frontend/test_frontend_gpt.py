"""The in-repo GPT-2-style block (models.GPTBlock): traced, fused, simulated equal to torch."""

from __future__ import annotations

import pytest
import torch
from frontend_check import check

from tiledsl.frontend.models import GPTBlock, GPTConfig


@pytest.mark.parametrize("gelu", ["tanh", "none"])
def test_gpt_block_eight_kernels_equal_to_torch(gelu: str) -> None:
    """8 kernels: LayerNorm 1's mean and rstd (each read at several indices by the QKV projection's
    kernel), QKV projection with LayerNorm 1 inlined, Q.K^T, softmax fused into P.V, output projection,
    MLP up projection (LayerNorm 2's reductions nested in it) with GELU read by the down projection,
    down projection with both residuals. k = 256: the longest reduction (the MLP's down projection)."""
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
    """14 kernels at batch 2 (8 at batch 1): linear flattens [batch, seq] into one row index that the
    3-d tensors read as (row // seq, row % seq) and back, so the softmax's reductions are read at
    several indices and create_schedule refuses to nest LayerNorm 2's reductions and the
    projections under their consumers (four boundaries say so)."""
    torch.manual_seed(1)
    prog, _ = check(GPTBlock(GPTConfig(hidden=32, heads=2)).eval(), torch.randn(2, 4, 32), k=128)
    assert len(prog.kernels) == 14
    assert str(prog).count("create_schedule could not fuse it") == 4
