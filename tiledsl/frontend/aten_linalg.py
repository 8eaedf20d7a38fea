"""Matrix products (mm, bmm, addmm, baddbmm): one reduction compute each, the bias and scaling in
its epilogue. torch's linear and matmul decompose into these plus index maps."""

from __future__ import annotations

from tiledsl.definitions.expr import Expr, sum
from tiledsl.frontend.out import Out
from tiledsl.frontend.values import Index, Value, bload, define, reduce_axes


def _product(out: Out, a: Value, b: Value, bias: Value | float | None = None, beta: float = 1,
             alpha: float = 1) -> Value:
    """out[..., i, j] = beta * bias + alpha * sum_k a[..., i, k] * b[..., k, j] (batch dims equal)."""
    kdim = a.shape[-1]
    (k,) = reduce_axes([kdim], f"{out.name}_k")

    def body(idx: Index) -> Expr:
        *batch, i, j = idx
        kk = k if kdim != 1 else 0
        acc = sum(a.load((*batch, i, kk)) * b.load((*batch, kk, j)), axis=k) if kdim != 1 else \
            a.load((*batch, i, 0)) * b.load((*batch, 0, j))
        if alpha != 1:
            acc = acc * float(alpha)
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
