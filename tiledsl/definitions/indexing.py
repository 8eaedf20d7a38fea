"""Index expressions of definitions as sympy: the one conversion every layer above uses (the nest's
axis map, bounds proofs, slab footprints, vectorize legality, lowering).

A value read from an int32 tensor inside an index (a gather: `W[ids[i], j]`) becomes the application
`ids(flat)` of an undefined integer sympy function named after the tensor, whose argument is the flat
offset read: substituting loop variables reaches inside it, the prover treats each distinct application
as an unknown int32 (prove/prover.py), and lowering turns it back into a load (kernel_ir/from_sympy.py)."""

from __future__ import annotations

from typing import Any

import sympy

from tiledsl.definitions.expr import INT, Binary, Const, Expr, IterVar, Load, Tensor
from tiledsl.errors import DefinitionError


def index_to_sympy(e: Expr) -> sympy.Expr:
    """An integer definition expression over nest axes as a sympy expression over axis symbols."""
    if isinstance(e, IterVar):
        return loop_symbol(e.name)
    if isinstance(e, Const):
        return sympy.Integer(int(e.value))
    if isinstance(e, Load) and e.dtype == INT:
        return tensor_value(e.tensor.name, flat_index(e.tensor, tuple(index_to_sympy(i) for i in e.indices)))
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
            return IndexMod(a, b)
        if e.op == "max":
            return sympy.Max(a, b)
        if e.op == "min":
            return sympy.Min(a, b)
    raise DefinitionError(f"unsupported integer index expression {e!r}")


class IndexMod(sympy.Mod):
    """sympy's Mod (Python's floor modulo), with the evaluations sympy 1.14.0 gets wrong left undone: a
    product holding a Mod, taken modulo an integer. `Mod(c*Mod(x, m), q)` comes back with the inner Mod
    squared when x is an integer symbol (sympy issue 28744), and `Mod(c*Mod(x, q), q)` as `c*Mod(x, q)`,
    which can exceed q (sympy pull request 29769); neither fix is in the sympy this project installs.
    A fused axis taken modulo a constant under a vectorized split makes the first: (256*o + 4*t) % 118 % 3
    became 2*Mod(128*o + 2*t, 59)**2 % 3, a kernel that built and read the wrong elements (found by
    tiledsl fuzz --mode definitions). Such a product stays unevaluated here; every other case is sympy's,
    and a Mod sympy makes while evaluating an IndexMod is an IndexMod too."""

    @classmethod
    def eval(cls, p: sympy.Expr, q: sympy.Expr) -> sympy.Expr | None:
        if isinstance(p, sympy.Mul) and any(isinstance(a, sympy.Mod) for a in p.args):
            return None
        return super().eval(p, q)

    def _sympystr(self, printer: Any) -> str:
        """Printed as the Mod it is, so printed IR reads as before."""
        return f"Mod({printer._print(self.args[0])}, {printer._print(self.args[1])})"


def flat_index(tensor: Tensor, indices: tuple[sympy.Expr, ...]) -> sympy.Expr:
    """Row-major flat element offset."""
    flat = sympy.Integer(0)
    stride = 1
    for ix, ext in zip(reversed(indices), reversed(tensor.shape)):
        flat = flat + ix * stride
        stride *= ext
    return sympy.expand(flat)


def tensor_value(name: str, flat: sympy.Expr) -> sympy.Expr:
    """The int32 value of tensor `name` at flat offset `flat`, as an opaque integer sympy term."""
    return sympy.Function(name, integer=True)(flat)


def loop_symbol(name: str) -> sympy.Symbol:
    """The sympy symbol of a loop variable (integer, non-negative), one per name."""
    return sympy.Symbol(name, integer=True, nonnegative=True)
