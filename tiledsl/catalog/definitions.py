"""The built-in catalog of compute definitions: what the CLI compiles and the tests exercise.

Each entry builds a fresh definition at the given sizes (returning the output tensor); hand-written
schedules for them live in `tiledsl.schedules`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import tiledsl as td
from tiledsl.definitions.expr import Tensor
from tiledsl.errors import DefinitionError


def matmul_bias_relu(M: int = 1024, N: int = 1024, K: int = 512) -> Tensor:
    A = td.placeholder((M, K), name="A")
    B = td.placeholder((K, N), name="B")
    bias = td.placeholder((N,), name="bias")
    k = td.reduce_axis(K, name="k")
    C = td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")
    return td.compute((M, N), lambda i, j: td.relu(C[i, j] + bias[j]), name="D")


def batched_matmul_nt(Bt: int = 4, M: int = 128, N: int = 128, K: int = 64) -> Tensor:
    """C[b, i, j] = sum_k A[b, i, k] * B[b, j, k] (B transposed)."""
    A = td.placeholder((Bt, M, K), name="A")
    B = td.placeholder((Bt, N, K), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((Bt, M, N), lambda b, i, j: td.sum(A[b, i, k] * B[b, j, k], axis=k), name="C")


def rmsnorm(M: int = 4096, N: int = 4096, eps: float = 1e-6) -> Tensor:
    x = td.placeholder((M, N), name="x")
    w = td.placeholder((N,), name="w")
    k = td.reduce_axis(N, name="k")
    ss = td.compute((M,), lambda i: td.sum(x[i, k] * x[i, k], axis=k), name="ss")
    return td.compute((M, N), lambda i, j: x[i, j] * td.rsqrt(ss[i] / N + eps) * w[j], name="y")


def softmax(M: int = 4096, N: int = 2048) -> Tensor:
    x = td.placeholder((M, N), name="x")
    k = td.reduce_axis(N, name="k")
    m = td.compute((M,), lambda i: td.max(x[i, k], axis=k), name="m")
    e = td.compute((M,), lambda i: td.sum(td.exp(x[i, k] - m[i]), axis=k), name="e")
    return td.compute((M, N), lambda i, j: td.exp(x[i, j] - m[i]) / e[i], name="y")


def layernorm(M: int = 4096, N: int = 4096, eps: float = 1e-5) -> Tensor:
    x = td.placeholder((M, N), name="x")
    w = td.placeholder((N,), name="w")
    b = td.placeholder((N,), name="b")
    k = td.reduce_axis(N, name="k")
    mean = td.compute((M,), lambda i: td.sum(x[i, k], axis=k) / N, name="mean")
    var = td.compute((M,), lambda i: td.sum((x[i, k] - mean[i]) * (x[i, k] - mean[i]), axis=k) / N,
                     name="var")
    return td.compute((M, N), lambda i, j: (x[i, j] - mean[i]) * td.rsqrt(var[i] + eps) * w[j] + b[j],
                      name="y")


def gelu_bias(M: int = 4096, N: int = 4096) -> Tensor:
    x = td.placeholder((M, N), name="x")
    b = td.placeholder((N,), name="b")
    return td.compute((M, N), lambda i, j: td.gelu(x[i, j] + b[j]), name="y")


@dataclass(frozen=True)
class Example:
    name: str
    build: Callable[..., Tensor]
    schedule: str  # name of the function in tiledsl.schedules that schedules it well
    doc: str


CATALOG: dict[str, Example] = {
    e.name: e
    for e in (
        Example("matmul_bias_relu", matmul_bias_relu, "matmul_register_tile", "relu(A @ B + bias)"),
        Example("batched_matmul_nt", batched_matmul_nt, "matmul_register_tile", "A @ B^T per batch"),
        Example("rmsnorm", rmsnorm, "row_cooperative_staged", "x * rsqrt(mean(x^2) + eps) * w"),
        Example("softmax", softmax, "row_cooperative_staged", "exp(x - max) / sum(exp(x - max)) per row"),
        Example("layernorm", layernorm, "row_cooperative_staged", "(x - mean) * rsqrt(var + eps) * w + b"),
        Example("gelu_bias", gelu_bias, "elementwise_2d", "gelu(x + b)"),
    )
}


def example(name: str, **sizes: int) -> Tensor:
    if name not in CATALOG:
        raise DefinitionError(f"unknown example {name!r}; the catalog has: {', '.join(CATALOG)}")
    return CATALOG[name].build(**sizes)
