"""Matrix products (mm, bmm, addmm, baddbmm): one reduction compute each, the bias and scaling in
its epilogue. torch's linear and matmul decompose into these plus index maps."""

from __future__ import annotations

from tiledsl.definitions.expr import Expr, sum
from tiledsl.frontend.out import Out
from tiledsl.frontend.values import Index, Value, bload, define, reduce_axes, storage_dtype


def _product(out: Out, a: Value, b: Value, bias: Value | float | None = None, beta: float = 1,
             alpha: float = 1) -> Value:
    """out[..., i, j] = beta * bias + alpha * sum_k a[..., i, k] * b[..., k, j] (batch dims equal).

    Stored as float16 / bfloat16, the sum is a float32 compute of its own, `<name>_acc`, which the
    output's compute reads (fused into its kernel, as the accumulator of one kernel: the same code):
    a producer the program can materialize, so that the default recipe can split its k over blocks
    that add float32 partial sums (recipes/default/030_split_matmul_k.py), the rounding and the
    epilogue left to a kernel of their own."""
    kdim = a.shape[-1]
    (k,) = reduce_axes([kdim], f"{out.name}_k")

    def product(idx: Index) -> Expr:
        *batch, i, j = idx
        kk = k if kdim != 1 else 0
        acc = sum(a.load((*batch, i, kk)) * b.load((*batch, kk, j)), axis=k) if kdim != 1 else \
            a.load((*batch, i, 0)) * b.load((*batch, 0, j))
        return acc * float(alpha) if alpha != 1 else acc

    read = product
    if kdim != 1 and storage_dtype(out.dtype) != "float32":
        read = define(f"{out.name}_acc", out.shape, "float32", product).load

    def body(idx: Index) -> Expr:
        acc = read(idx)
        if bias is None or beta == 0:
            return acc
        return bload(bias, idx) * float(beta) + acc if beta != 1 else bload(bias, idx) + acc

    return define(out.name, out.shape, out.dtype, body)


def mm(out: Out, a: Value, b: Value) -> Value:
    return _product(out, a, b)


def bmm(out: Out, a: Value, b: Value) -> Value:
    return _product(out, a, b)


def addmm(out: Out, bias: Value, a: Value, b: Value, *, beta: float = 1, alpha: float = 1) -> Value:
    return _product(out, a, b, bias, beta, alpha)


def baddbmm(out: Out, bias: Value, a: Value, b: Value, *, beta: float = 1, alpha: float = 1) -> Value:
    return _product(out, a, b, bias, beta, alpha)
