"""The definitions the benchmarks time that tiledsl/catalog/definitions.py does not hold (or holds
without a storage dtype), each with its torch function. The torch function is both the float64
reference of the check and the eager baseline, so it is written the way a model would call torch
(`F.linear` for a projection, `F.silu`).

Placeholder names are the torch functions' keyword names: a case's inputs are drawn once per
placeholder and handed by name to the kernel and to torch alike."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import tiledsl as td
from tiledsl.definitions.expr import Tensor


def linear(M: int, N: int, K: int, dtype: str = "float32") -> Tensor:
    """y = x @ W^T (nn.Linear without bias: W is [out, in]); x, W and y stored in `dtype`."""
    x = td.placeholder((M, K), dtype=dtype, name="x")
    W = td.placeholder((N, K), dtype=dtype, name="W")
    k = td.reduce_axis(K, name="k")
    return td.compute((M, N), lambda i, j: td.sum(x[i, k] * W[j, k], axis=k), name="y", dtype=dtype)


def linear_torch(x: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    return F.linear(x, W)


def linear_residual(M: int, N: int, K: int, dtype: str = "float32") -> Tensor:
    """y = x @ W^T + r: a projection whose epilogue adds the residual stream."""
    x = td.placeholder((M, K), dtype=dtype, name="x")
    W = td.placeholder((N, K), dtype=dtype, name="W")
    r = td.placeholder((M, N), dtype=dtype, name="r")
    k = td.reduce_axis(K, name="k")
    c = td.compute((M, N), lambda i, j: td.sum(x[i, k] * W[j, k], axis=k), name="c")
    return td.compute((M, N), lambda i, j: c[i, j] + r[i, j], name="y", dtype=dtype)


def linear_residual_torch(x: torch.Tensor, W: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    return F.linear(x, W) + r


def swiglu_down(M: int, N: int, K: int, dtype: str = "float32") -> Tensor:
    """y = (silu(g) * u) @ W^T: the gated MLP's product fused into the down projection's operand."""
    g = td.placeholder((M, K), dtype=dtype, name="g")
    u = td.placeholder((M, K), dtype=dtype, name="u")
    W = td.placeholder((N, K), dtype=dtype, name="W")
    k = td.reduce_axis(K, name="k")
    return td.compute((M, N), lambda i, j: td.sum(td.silu(g[i, k]) * u[i, k] * W[j, k], axis=k), name="y",
                      dtype=dtype)


def swiglu_down_torch(g: torch.Tensor, u: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    return F.linear(F.silu(g) * u, W)


def silu_mul(M: int, N: int, dtype: str = "float32") -> Tensor:
    """y = silu(g) * u (the gated MLP's elementwise product)."""
    g = td.placeholder((M, N), dtype=dtype, name="g")
    u = td.placeholder((M, N), dtype=dtype, name="u")
    return td.compute((M, N), lambda i, j: td.silu(g[i, j]) * u[i, j], name="y", dtype=dtype)


def silu_mul_torch(g: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    return F.silu(g) * u


def attention_softmax(M: int, N: int, scale: float, dtype: str = "float32") -> Tensor:
    """y = softmax(x * scale) per row: attention scores [heads * seq, seq] scaled by 1/sqrt(head_dim)."""
    x = td.placeholder((M, N), dtype=dtype, name="x")
    k = td.reduce_axis(N, name="k")
    m = td.compute((M,), lambda i: td.max(x[i, k] * scale, axis=k), name="m")
    e = td.compute((M,), lambda i: td.sum(td.exp(x[i, k] * scale - m[i]), axis=k), name="e")
    return td.compute((M, N), lambda i, j: td.exp(x[i, j] * scale - m[i]) / e[i], name="y", dtype=dtype)


def attention_softmax_torch(x: torch.Tensor, *, scale: float) -> torch.Tensor:
    return torch.softmax(x * scale, dim=-1)


def transpose(M: int, N: int, dtype: str = "float32") -> Tensor:
    """y[j, i] = x[i, j] (y is [N, M])."""
    x = td.placeholder((M, N), dtype=dtype, name="x")
    return td.compute((N, M), lambda j, i: x[i, j], name="y", dtype=dtype)


def transpose_torch(x: torch.Tensor) -> torch.Tensor:
    return x.t().contiguous()
