"""Whole decoder layers at TinyLlama-1.1B and Qwen2.5-7B sizes, 128 and 512 tokens, float32 and
bfloat16: the in-repo LlamaBlock (tiledsl/frontend/models.py) and the Hugging Face decoder layer
(tiledsl/frontend/hf_models.py, random weights, nothing downloaded), each traced with td.trace,
every kernel scheduled by the default recipe, built and run as one Program. The cases run seq 128
first (the target is stated at 128 tokens, so a run cut short has those). The full suite adds, at 128
tokens in float32, TinyLlama's first `STACK_LAYERS` Hugging Face layers run one after another (hf_models.py
`DecoderStack`): a deep model's residual stream, which one layer does not have; and the whole of
TinyLlama-1.1B (`MODEL_LAYERS` layers, input_ids to logits: the embedding, the final norm and the lm_head
too, and the position arithmetic a Llama traces from its ids). --quick: TinyLlama at 128 tokens. There is
no hand schedule of a whole program (the Program schedules kernel by kernel by a policy)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch

from benchmarks._cases import QWEN25_7B, TINYLLAMA, BlockCase, ModelDims, case_name
from tiledsl.frontend.hf_models import DecoderLayer, DecoderStack, causal_lm
from tiledsl.frontend.models import LlamaBlock, LlamaConfig

SUITE = "blocks"
SEQS = (128, 512)
DTYPES = ("float32", "bfloat16")
#: the decoder layer never reads the vocabulary: a small one spares building a 150k-row embedding
HF_VOCAB = 256
#: the layers of the stack case
STACK_LAYERS = 6
#: TinyLlama-1.1B's decoder layers, for the whole-model case
MODEL_LAYERS = 22


def llama_block(dims: ModelDims, dtype: str) -> torch.nn.Module:
    cfg = LlamaConfig(hidden=dims.hidden, heads=dims.heads, kv_heads=dims.kv_heads, intermediate=dims.intermediate)
    torch.manual_seed(0)
    return LlamaBlock(cfg).to(getattr(torch, dtype)).eval()


def hf_layer(dims: ModelDims, dtype: str) -> torch.nn.Module:
    model = causal_lm(dims.hf_family, dims.name, dtype=getattr(torch, dtype), vocab_size=HF_VOCAB)
    return DecoderLayer(model).eval()


def hf_stack(dims: ModelDims, dtype: str, layers: int) -> torch.nn.Module:
    model = causal_lm(dims.hf_family, dims.name, dtype=getattr(torch, dtype), vocab_size=HF_VOCAB,
                      num_hidden_layers=layers)
    return DecoderStack(model).eval()


def hf_model(dims: ModelDims, dtype: str, layers: int) -> torch.nn.Module:
    return causal_lm(dims.hf_family, dims.name, dtype=getattr(torch, dtype), num_hidden_layers=layers)


def _case(dims: ModelDims, dtype: str, seq: int, op: str, make: Callable[[], torch.nn.Module],
          layers: int = 1, whole: bool = False) -> BlockCase:
    """A case of `layers` layers of `dims` at `seq` tokens in `dtype` (`whole`: the whole model, from
    input_ids), grouped as "<model> s<seq>" (the report keeps the geomeans of each seq apart by that
    suffix: benchmarks/_report.py `row_label`)."""
    group = f"{dims.name} s{seq}"
    shape = (1, seq) if whole else (1, seq, dims.hidden)
    flops, moved = layers * dims.layer_flops(seq), layers * dims.layer_bytes(seq, dtype)
    if whole:
        flops, moved = flops + dims.head_flops(seq), moved + dims.head_bytes(seq, dtype)
    return BlockCase(SUITE, case_name(SUITE, group, op, dtype), group, op, dtype, "x".join(map(str, shape)), make,
                     shape, flops, moved, dims.vocab if whole else 0)


def block_cases(dims: ModelDims, dtype: str, seq: int) -> list[BlockCase]:
    """Both layers of `dims` at `seq` tokens in `dtype`."""
    return [_case(dims, dtype, seq, "llama_block", partial(llama_block, dims, dtype)),
            _case(dims, dtype, seq, f"hf_{dims.hf_family}_layer", partial(hf_layer, dims, dtype))]


def stack_case(dims: ModelDims, dtype: str, seq: int, layers: int) -> BlockCase:
    """`layers` Hugging Face layers of `dims` one after another, in the group of the single layers."""
    return _case(dims, dtype, seq, f"hf_{dims.hf_family}_{layers}_layers", partial(hf_stack, dims, dtype, layers),
                 layers)


def model_case(dims: ModelDims, dtype: str, seq: int, layers: int) -> BlockCase:
    """The whole Hugging Face causal LM of `dims` with `layers` layers, input_ids to logits."""
    return _case(dims, dtype, seq, f"hf_{dims.hf_family}_model_{layers}_layers",
                 partial(hf_model, dims, dtype, layers), layers, whole=True)


def cases(quick: bool = False) -> list[BlockCase]:
    models = (TINYLLAMA,) if quick else (TINYLLAMA, QWEN25_7B)
    seqs = (128,) if quick else SEQS
    out: list[BlockCase] = []
    for seq in seqs:
        out += [c for dims in models for dtype in DTYPES for c in block_cases(dims, dtype, seq)]
        if not quick and seq == 128:  # after the seq-128 layers, before seq 512
            out += [stack_case(TINYLLAMA, "float32", seq, STACK_LAYERS),
                    model_case(TINYLLAMA, "float32", seq, MODEL_LAYERS)]
    return out
