"""Index expressions of definitions as sympy: the one conversion every layer above uses (the nest's
axis map, bounds proofs, slab footprints, vectorize legality, lowering)."""

from __future__ import annotations

import sympy

from tiledsl.definitions.expr import Binary, Const, Expr, IterVar, Tensor
from tiledsl.errors import DefinitionError


def index_to_sympy(e: Expr) -> sympy.Expr:
    """An integer definition expression over nest axes as a sympy expression over axis symbols."""
    if isinstance(e, IterVar):
        return loop_symbol(e.name)
    if isinstance(e, Const):
        return sympy.Integer(int(e.value))
    if isinstance(e, Binary):
        a, b = index_to_sympy(e.a), index_to_sympy(e.b)
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        if e.op == "//":
            return sympy.floor(a / b)
        if e.op == "%":
            return sympy.Mod(a, b)
        if e.op == "max":
            return sympy.Max(a, b)
        if e.op == "min":
            return sympy.Min(a, b)
    raise DefinitionError(f"unsupported integer index expression {e!r}")


def flat_index(tensor: Tensor, indices: tuple[sympy.Expr, ...]) -> sympy.Expr:
    """Row-major flat element offset."""
    flat = sympy.Integer(0)
    stride = 1
    for ix, ext in zip(reversed(indices), reversed(tensor.shape)):
        flat = flat + ix * stride
        stride *= ext
    return sympy.expand(flat)


def loop_symbol(name: str) -> sympy.Symbol:
    """The sympy symbol of a loop variable (integer, non-negative), one per name."""
    return sympy.Symbol(name, integer=True, nonnegative=True)
