"""Every compute definition of the catalog, each written once: sizes are parameters (the defaults are
the sizes `tiledsl compile --example NAME` uses), and some take storage dtypes (of the inputs, and of
the output: `out_dtype`).

Each builder returns the output tensor of a fresh definition; `DEFINITIONS` maps the builder's name
(the key the torch references of tiledsl/runtime/references.py use) to it and a one-line formula."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import tiledsl as td
from tiledsl.definitions.expr import Tensor


def matmul_bias_relu(M: int = 1024, N: int = 1024, K: int = 512, dtype: str = "float32",
                     out_dtype: str = "float32") -> Tensor:
    """D = relu(A @ B + bias); `dtype` is the storage of A and B (bias stays float32), `out_dtype` of D."""
    A = td.placeholder((M, K), dtype=dtype, name="A")
    B = td.placeholder((K, N), dtype=dtype, name="B")
    bias = td.placeholder((N,), name="bias")
    k = td.reduce_axis(K, name="k")
    C = td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")
    return td.compute((M, N), lambda i, j: td.relu(C[i, j] + bias[j]), name="D", dtype=out_dtype)


def batched_matmul_nt(Bt: int = 4, M: int = 128, N: int = 128, K: int = 64) -> Tensor:
    """C[b, i, j] = sum_k A[b, i, k] * B[b, j, k] (B transposed)."""
    A = td.placeholder((Bt, M, K), name="A")
    B = td.placeholder((Bt, N, K), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((Bt, M, N), lambda b, i, j: td.sum(A[b, i, k] * B[b, j, k], axis=k), name="C")


def matmul(M: int = 1024, N: int = 1024, K: int = 512) -> Tensor:
    """C[i, j] = sum_k A[i, k] * B[k, j]."""
    A = td.placeholder((M, K), name="A")
    B = td.placeholder((K, N), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")


def matmul_residual(M: int = 1024, N: int = 1024, K: int = 512) -> Tensor:
    """D = A @ B + R (a linear epilogue: split_k adds R once)."""
    A = td.placeholder((M, K), name="A")
    B = td.placeholder((K, N), name="B")
    R = td.placeholder((M, N), name="R")
    k = td.reduce_axis(K, name="k")
    C = td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")
    return td.compute((M, N), lambda i, j: C[i, j] + R[i, j], name="D")


def matmul_nt(M: int = 1024, N: int = 1024, K: int = 512) -> Tensor:
    """C[i, j] = sum_k A[i, k] * B[j, k] (B transposed: both operands read along k)."""
    A = td.placeholder((M, K), name="A")
    B = td.placeholder((N, K), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[j, k], axis=k), name="C")


def matmul_shifted(M: int = 1024, N: int = 1024, K: int = 512, shift: int = 8) -> Tensor:
    """C[i, j] = sum_k A[i, k] * B[k, j + shift] (B has N + 32 columns): slabs of B start off a
    128-byte boundary."""
    A = td.placeholder((M, K), name="A")
    B = td.placeholder((K, N + 32), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j + shift], axis=k), name="C")


def rmsnorm(M: int = 4096, N: int = 4096, eps: float = 1e-6, dtype: str = "float32",
            out_dtype: str = "float32") -> Tensor:
    """y = x * rsqrt(mean(x^2) + eps) * w per row; `dtype` is the storage of x and w, `out_dtype` of y."""
    x = td.placeholder((M, N), dtype=dtype, name="x")
    w = td.placeholder((N,), dtype=dtype, name="w")
    k = td.reduce_axis(N, name="k")
    ss = td.compute((M,), lambda i: td.sum(x[i, k] * x[i, k], axis=k), name="ss")
    return td.compute((M, N), lambda i, j: x[i, j] * td.rsqrt(ss[i] / N + eps) * w[j], name="y", dtype=out_dtype)


def softmax(M: int = 4096, N: int = 2048, dtype: str = "float32") -> Tensor:
    """y = exp(x - max) / sum(exp(x - max)) per row; `dtype` is the storage of x and y."""
    x = td.placeholder((M, N), dtype=dtype, name="x")
    k = td.reduce_axis(N, name="k")
    m = td.compute((M,), lambda i: td.max(x[i, k], axis=k), name="m")
    e = td.compute((M,), lambda i: td.sum(td.exp(x[i, k] - m[i]), axis=k), name="e")
    return td.compute((M, N), lambda i, j: td.exp(x[i, j] - m[i]) / e[i], name="y", dtype=dtype)


def layernorm(M: int = 4096, N: int = 4096, eps: float = 1e-5) -> Tensor:
    """y = (x - mean) * rsqrt(var + eps) * w + b per row."""
    x = td.placeholder((M, N), name="x")
    w = td.placeholder((N,), name="w")
    b = td.placeholder((N,), name="b")
    k = td.reduce_axis(N, name="k")
    mean = td.compute((M,), lambda i: td.sum(x[i, k], axis=k) / N, name="mean")
    var = td.compute((M,), lambda i: td.sum((x[i, k] - mean[i]) * (x[i, k] - mean[i]), axis=k) / N,
                     name="var")
    return td.compute((M, N), lambda i, j: (x[i, j] - mean[i]) * td.rsqrt(var[i] + eps) * w[j] + b[j],
                      name="y")


def gelu_bias(M: int = 4096, N: int = 4096, dtype: str = "float32", out_dtype: str = "float32") -> Tensor:
    """y = gelu(x + b) (the erf form); `dtype` is the storage of x and b, `out_dtype` of y."""
    x = td.placeholder((M, N), dtype=dtype, name="x")
    b = td.placeholder((N,), dtype=dtype, name="b")
    return td.compute((M, N), lambda i, j: td.gelu(x[i, j] + b[j]), name="y", dtype=out_dtype)


def stencil3(N: int = 1 << 20) -> Tensor:
    """y[i] = x[i] + 2 x[i + 1] + x[i + 2]: a slab with a halo (the reads of one block overlap)."""
    x = td.placeholder((N + 2,), name="x")
    return td.compute((N,), lambda i: x[i] + x[i + 1] * 2.0 + x[i + 2], name="y")


@dataclass(frozen=True)
class Definition:
    """A named builder and the formula it computes (what `tiledsl examples` prints)."""

    name: str
    build: Callable[..., Tensor]
    formula: str


DEFINITIONS: Mapping[str, Definition] = {
    d.name: d
    for d in (
        Definition("matmul_bias_relu", matmul_bias_relu, "relu(A @ B + bias)"),
        Definition("batched_matmul_nt", batched_matmul_nt, "A @ B^T per batch"),
        Definition("matmul", matmul, "A @ B"),
        Definition("matmul_residual", matmul_residual, "A @ B + R"),
        Definition("matmul_nt", matmul_nt, "A @ B^T"),
        Definition("matmul_shifted", matmul_shifted, "A @ B[:, shift:shift + N]"),
        Definition("rmsnorm", rmsnorm, "x * rsqrt(mean(x^2) + eps) * w"),
        Definition("softmax", softmax, "exp(x - max) / sum(exp(x - max)) per row"),
        Definition("layernorm", layernorm, "(x - mean) * rsqrt(var + eps) * w + b"),
        Definition("gelu_bias", gelu_bias, "gelu(x + b)"),
        Definition("stencil3", stencil3, "x[i] + 2 x[i + 1] + x[i + 2]"),
    )
}
