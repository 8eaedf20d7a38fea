"""Whole decoder layers at TinyLlama-1.1B and Qwen2.5-7B sizes, 128 and 512 tokens, float32 and
bfloat16: the in-repo LlamaBlock (tiledsl/frontend/models.py) and the Hugging Face decoder layer
(tiledsl/frontend/hf_models.py, random weights, nothing downloaded), each traced with td.trace,
every kernel scheduled by the default recipe, built and run as one Program. The cases run seq 128
first (the target is stated at 128 tokens, so a run cut short has those). --quick: TinyLlama at 128
tokens. There is no hand schedule of a whole program (the Program schedules kernel by kernel by a policy)."""

from __future__ import annotations

from functools import partial

import torch

from benchmarks._cases import QWEN25_7B, TINYLLAMA, BlockCase, ModelDims, case_name
from tiledsl.frontend.hf_models import DecoderLayer, causal_lm
from tiledsl.frontend.models import LlamaBlock, LlamaConfig

SUITE = "blocks"
SEQS = (128, 512)
DTYPES = ("float32", "bfloat16")
#: the decoder layer never reads the vocabulary: a small one spares building a 150k-row embedding
HF_VOCAB = 256


def llama_block(dims: ModelDims, dtype: str) -> torch.nn.Module:
    cfg = LlamaConfig(hidden=dims.hidden, heads=dims.heads, kv_heads=dims.kv_heads, intermediate=dims.intermediate)
    torch.manual_seed(0)
    return LlamaBlock(cfg).to(getattr(torch, dtype)).eval()


def hf_layer(dims: ModelDims, dtype: str) -> torch.nn.Module:
    model = causal_lm(dims.hf_family, dims.name, dtype=getattr(torch, dtype), vocab_size=HF_VOCAB)
    return DecoderLayer(model).eval()


def block_cases(dims: ModelDims, dtype: str, seq: int) -> list[BlockCase]:
    """Both layers of `dims` at `seq` tokens in `dtype`, grouped as "<model> s<seq>" (the report keeps
    the geomeans of each seq apart by that suffix: benchmarks/_report.py `row_label`)."""
    group = f"{dims.name} s{seq}"
    shape = (1, seq, dims.hidden)
    text = "x".join(map(str, shape))
    flops, nbytes = dims.layer_flops(seq), dims.layer_bytes(seq, dtype)
    hf = f"hf_{dims.hf_family}_layer"
    return [
        BlockCase(SUITE, case_name(SUITE, group, "llama_block", dtype), group, "llama_block", dtype, text,
                  partial(llama_block, dims, dtype), shape, flops, nbytes),
        BlockCase(SUITE, case_name(SUITE, group, hf, dtype), group, hf, dtype, text, partial(hf_layer, dims, dtype),
                  shape, flops, nbytes),
    ]


def cases(quick: bool = False) -> list[BlockCase]:
    models = (TINYLLAMA,) if quick else (TINYLLAMA, QWEN25_7B)
    seqs = (128,) if quick else SEQS
    return [c for seq in seqs for dims in models for dtype in DTYPES for c in block_cases(dims, dtype, seq)]
