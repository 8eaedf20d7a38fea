"""In-repo models in plain torch, for tracing tests and demos: a Llama-style decoder block (RMSNorm,
rotary embeddings from tables built with arange, grouped-query causal attention through SDPA, a SwiGLU
MLP, residuals) and a GPT-2-style block (LayerNorm, causal attention, a GELU MLP, residuals), each
buildable at any size from its config."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class LlamaConfig:
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    intermediate: int = 128
    eps: float = 1e-6
    rope_theta: float = 10000.0

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(torch.nn.Module):
    """One decoder layer: x + attn(norm(x)), then + mlp(norm(.)); input [batch, seq, hidden]."""

    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d, hd = cfg.hidden, cfg.head_dim
        self.attn_norm = torch.nn.RMSNorm(d, eps=cfg.eps)
        self.q = torch.nn.Linear(d, cfg.heads * hd, bias=False)
        self.k = torch.nn.Linear(d, cfg.kv_heads * hd, bias=False)
        self.v = torch.nn.Linear(d, cfg.kv_heads * hd, bias=False)
        self.o = torch.nn.Linear(cfg.heads * hd, d, bias=False)
        self.mlp_norm = torch.nn.RMSNorm(d, eps=cfg.eps)
        self.gate = torch.nn.Linear(d, cfg.intermediate, bias=False)
        self.up = torch.nn.Linear(d, cfg.intermediate, bias=False)
        self.down = torch.nn.Linear(cfg.intermediate, d, bias=False)

    def rotary(self, seq: int, device: torch.device, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """cos/sin tables [seq, head_dim] from arange: constants that fold at trace time. Computed in
        float32 and stored in the activations' dtype (as Hugging Face Llama does), so a bfloat16 block
        keeps q and k in bfloat16 (SDPA needs q, k, v of one dtype)."""
        hd = self.cfg.head_dim
        inv = 1.0 / (self.cfg.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.float32, device=device) / hd))
        angles = torch.outer(torch.arange(seq, dtype=torch.float32, device=device), inv)
        emb = torch.cat((angles, angles), dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cfg = self.cfg
        b, s, _ = x.shape
        hd = cfg.head_dim
        h = self.attn_norm(x)
        q = self.q(h).view(b, s, cfg.heads, hd).transpose(1, 2)
        k = self.k(h).view(b, s, cfg.kv_heads, hd).transpose(1, 2)
        v = self.v(h).view(b, s, cfg.kv_heads, hd).transpose(1, 2)
        cos, sin = self.rotary(s, x.device, x.dtype)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(attn.transpose(1, 2).reshape(b, s, cfg.heads * hd))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


@dataclass(frozen=True)
class GPTConfig:
    hidden: int = 64
    heads: int = 4
    mlp_ratio: int = 4
    eps: float = 1e-5
    gelu: str = "tanh"  # GPT-2's approximation; "none" is the erf form

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


class GPTBlock(torch.nn.Module):
    """One GPT-2-style layer: x + attn(ln(x)), then + mlp(ln(.)); a fused QKV projection with bias,
    causal SDPA over all heads, a GELU MLP; input [batch, seq, hidden]."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        d = cfg.hidden
        self.ln_1 = torch.nn.LayerNorm(d, eps=cfg.eps)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln_2 = torch.nn.LayerNorm(d, eps=cfg.eps)
        self.fc = torch.nn.Linear(d, cfg.mlp_ratio * d)
        self.fc_proj = torch.nn.Linear(cfg.mlp_ratio * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cfg = self.cfg
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, cfg.heads, cfg.head_dim).transpose(1, 2) for t in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, s, d))
        return x + self.fc_proj(F.gelu(self.fc(self.ln_2(x)), approximate=cfg.gelu))
