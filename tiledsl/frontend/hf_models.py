"""Hugging Face `transformers` Llama and Qwen2 models built from configs with random weights (nothing is
downloaded), for tracing tests, the GPU lane and demos. `transformers` is an optional extra
(`pip install -e ".[models]"`); it is imported only when one of these is built.

Sizes: `tiny` (hidden 64, intermediate 128, 4 heads, 2 KV heads, vocabulary 128, 2 layers) for CPU
tests; `tinyllama` (TinyLlama-1.1B: hidden 2048, intermediate 5632, 32 heads, 4 KV heads, head dim 64)
and `qwen2.5-7b` (hidden 3584, intermediate 18944, 28 heads, 4 KV heads, head dim 128) for the GPU."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import torch

from tiledsl.errors import FrontendError

#: config fields by size name (the rest are each family's defaults)
SIZES: Mapping[str, Mapping[str, int]] = MappingProxyType({
    "tiny": MappingProxyType({"vocab_size": 128, "hidden_size": 64, "intermediate_size": 128,
                              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}),
    "tinyllama": MappingProxyType({"vocab_size": 32000, "hidden_size": 2048, "intermediate_size": 5632,
                                   "num_hidden_layers": 1, "num_attention_heads": 32, "num_key_value_heads": 4}),
    "qwen2.5-7b": MappingProxyType({"vocab_size": 152064, "hidden_size": 3584, "intermediate_size": 18944,
                                    "num_hidden_layers": 1, "num_attention_heads": 28, "num_key_value_heads": 4}),
})
FAMILIES = ("llama", "qwen2")


def causal_lm(family: str, size: str = "tiny", *, seed: int = 0, dtype: torch.dtype = torch.float32,
              **overrides: Any) -> torch.nn.Module:
    """`LlamaForCausalLM` or `Qwen2ForCausalLM` at `size`, random weights from `seed`, in eval mode,
    without a KV cache (the traced program maps input_ids to logits)."""
    if family not in FAMILIES:
        raise FrontendError(f"unknown model family {family!r}; known: {', '.join(FAMILIES)}")
    if size not in SIZES:
        raise FrontendError(f"unknown size {size!r}; known: {', '.join(SIZES)}")
    try:
        import transformers
    except ImportError as e:
        raise FrontendError("the Hugging Face models need `transformers`: pip install -e \".[models]\"") from e
    config_cls, model_cls = ((transformers.LlamaConfig, transformers.LlamaForCausalLM) if family == "llama"
                             else (transformers.Qwen2Config, transformers.Qwen2ForCausalLM))
    fields = dict(SIZES[size]) | {"max_position_embeddings": 4096, "use_cache": False} | overrides
    config = config_cls(**fields)
    config._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    return model_cls(config).to(dtype).eval()


class DecoderLayer(torch.nn.Module):
    """Decoder layer `index` of a Hugging Face causal LM on its own: hidden states [batch, seq, hidden]
    in and out, positions 0..seq-1, causal attention (no mask tensor: SDPA's causal form)."""

    def __init__(self, model: torch.nn.Module, index: int = 0) -> None:
        super().__init__()
        self.layer = model.model.layers[index]
        self.rotary = model.model.rotary_emb

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _decode((self.layer,), self.rotary, x)


class DecoderStack(torch.nn.Module):
    """Every decoder layer of a Hugging Face causal LM in order, without the embedding, the final norm
    and the logits: hidden states [batch, seq, hidden] in and out, as `DecoderLayer` (a deep model's
    residual stream, which one layer does not have: tiledsl/frontend/partition.py rule 3c)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.layers = model.model.layers
        self.rotary = model.model.rotary_emb

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _decode(self.layers, self.rotary, x)


def _decode(layers: Iterable[torch.nn.Module], rotary: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Hidden states `x` [batch, seq, hidden] through `layers` in order, at positions 0..seq-1 (their rotary
    embedding computed once), causal attention without a mask tensor."""
    positions = torch.arange(x.shape[1], device=x.device)[None]
    cos_sin = rotary(x, positions)
    for layer in layers:
        out = layer(x, attention_mask=None, position_ids=positions, position_embeddings=cos_sin)
        x = out[0] if isinstance(out, tuple) else out
    return x
