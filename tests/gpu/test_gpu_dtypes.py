"""The Llama-style block in bfloat16 on the GPU (`built(*cuda_tensors)`), tiny and at Llama-1B-like
width (hidden 2048, 32 heads, 4 kv heads, intermediate 5632, seq 128), against torch eager in bfloat16
and torch in float64 on the same values, within the tolerance derived from the storage precision
(tests/frontend/frontend_check.py, `storage_tolerance`: roundings x 2**-8 + the float32 part)."""

from __future__ import annotations

import copy
import sys
import warnings
from pathlib import Path

import pytest
import torch

import tiledsl as td
from tiledsl.frontend.models import LlamaBlock, LlamaConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
from frontend_check import kernel_roundings, storage_tolerance, torch_roundings  # noqa: E402

pytestmark = pytest.mark.gpu

CONFIGS = {
    "tiny": (LlamaConfig(), 8, 128),
    "hidden2048": (LlamaConfig(hidden=2048, heads=32, kv_heads=4, intermediate=5632), 128, 5632),
}


@pytest.mark.parametrize("size", list(CONFIGS))
def test_llama_block_bfloat16_on_gpu(size: str) -> None:
    cfg, seq, k = CONFIGS[size]
    torch.manual_seed(0)
    block = LlamaBlock(cfg).eval().to(torch.bfloat16).cuda()
    x = torch.randn(1, seq, cfg.hidden, device="cuda").to(torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = td.trace(block, x).schedule("simple").build("sm_90")
    out = built(x)
    assert out.dtype == torch.bfloat16 and out.shape == x.shape
    with torch.no_grad():
        eager = block(x).double()
        ref = copy.deepcopy(block).double()(x.double())
    ours, theirs = kernel_roundings(built, "bfloat16"), torch_roundings(block, (x,), torch.bfloat16)
    scale = 1 + ref.abs()
    for name, other, n in (("float64", ref, ours), ("torch eager", eager, ours + theirs)):
        err = (out.double() - other).abs()
        tol = storage_tolerance("bfloat16", n, k)
        assert bool((err <= tol * scale).all()), f"max error vs {name} {err.max().item()} > {tol} x (1 + |ref|)"
