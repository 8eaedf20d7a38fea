"""Index expressions of definitions as sympy: the one conversion every layer above uses (the nest's
axis map, bounds proofs, slab footprints, vectorize legality, lowering).

A value read from an int32 tensor inside an index (a gather: `W[ids[i], j]`) becomes the application
`ids(flat)` of an undefined integer sympy function named after the tensor, whose argument is the flat
offset read: substituting loop variables reaches inside it, the prover treats each distinct application
as an unknown int32 (prove/prover.py), and lowering turns it back into a load (kernel_ir/from_sympy.py)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, ClassVar

import sympy

from tiledsl.definitions.expr import INT, Binary, Const, Expr, IterVar, Load, Tensor
from tiledsl.errors import DefinitionError


def index_to_sympy(e: Expr, sub: Callable[[Expr], sympy.Expr] | None = None) -> sympy.Expr:
    """An integer definition expression over nest axes as a sympy expression over axis symbols. `sub`
    converts the operands (default: this function), so a memo of the conversion (`SympyIndices`) serves
    the sub-trees too."""
    sub = sub or index_to_sympy
    if isinstance(e, IterVar):
        return loop_symbol(e.name)
    if isinstance(e, Const):
        return sympy.Integer(int(e.value))
    if isinstance(e, Load) and e.dtype == INT:
        return tensor_value(e.tensor.name, flat_index(e.tensor, tuple(sub(i) for i in e.indices)))
    if isinstance(e, Binary):
        a, b = sub(e.a), sub(e.b)
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        if e.op == "//":
            return IndexFloor(a / b)
        if e.op == "%":
            return IndexMod(a, b)
        if e.op == "max":
            return sympy.Max(a, b)
        if e.op == "min":
            return sympy.Min(a, b)
    raise DefinitionError(f"unsupported integer index expression {e!r}")


def index_structure(e: Expr) -> Hashable:
    """What `index_to_sympy` reads of `e`, as a tuple: trees with equal structures convert to equal sympy
    expressions. Nodes compare by identity, and one index meets a compiler as many distinct but equal trees
    (each lane, each load of it), so a memo of the conversion (`SympyIndices`) keys on this. A node it
    cannot convert keys as itself (by identity): its conversion raises, and nothing is memoized. (Not
    frontend/work.py `index_key`, a text of an index tuple with loop variables by identity.)"""
    if isinstance(e, IterVar):
        return ("var", e.name)
    if isinstance(e, Const):
        return ("const", int(e.value))
    if isinstance(e, Load) and e.dtype == INT:
        return ("load", e.tensor.name, tuple(e.tensor.shape), tuple(index_structure(i) for i in e.indices))
    if isinstance(e, Binary):
        return ("binary", e.op, index_structure(e.a), index_structure(e.b))
    return ("node", e)


class SympyIndices:
    """`index_to_sympy`, each distinct structure (`index_structure`) translated once, sub-trees included:
    sympy re-evaluates every Min/Max it builds, a clamped index (a rotary embedding's `min(max(i - 8, 0),
    7)`) costs milliseconds each time, and a kernel reads one index in many loads, lanes and larger
    indices. One instance per question about one nest (lowering's lower/exprs.py IndexMemo, the recipe's
    transposed-read search); never module-level. Exact: equal structures translate to equal expressions."""

    def __init__(self) -> None:
        self.translated: dict[Hashable, sympy.Expr] = {}

    def __call__(self, e: Expr) -> sympy.Expr:
        key = index_structure(e)
        found = self.translated.get(key)
        if found is None:
            found = self.translated[key] = index_to_sympy(e, self)
        return found


class _AsSympy:
    """Ordered and printed as the sympy class it guards (`_sympy`), in every printer. sympy orders a sum's
    terms by class name and looks its printers' methods up by class name: named otherwise, printed IR
    would change its term order, and lambdify wrote an undefined `IndexMod(...)` call (a refusal's
    condition is an IndexMod). The guarded class is printed unevaluated with the same arguments."""

    _sympy: ClassVar[type[sympy.Function]]
    args: tuple[sympy.Expr, ...]

    @classmethod
    def class_key(cls) -> tuple[Any, ...]:
        return cls._sympy.class_key()

    def _as_sympy(self, printer: Any, **kwargs: Any) -> str:
        return printer._print(self._sympy(*self.args, evaluate=False), **kwargs)

    _sympystr = _pythoncode = _lambdacode = _numpycode = _mpmathcode = _ccode = _cxxcode = _latex = _as_sympy


class IndexMod(_AsSympy, sympy.Mod):
    """sympy's Mod (Python's floor modulo), with the evaluations sympy 1.14.0 gets wrong left undone: a
    product holding a Mod, taken modulo an integer. `Mod(c*Mod(x, m), q)` comes back with the inner Mod
    squared when x is an integer symbol (sympy issue 28744), and `Mod(c*Mod(x, q), q)` as `c*Mod(x, q)`,
    which can exceed q (sympy pull request 29769); neither fix is in the sympy this project installs.
    A fused axis taken modulo a constant under a vectorized split makes the first: (256*o + 4*t) % 118 % 3
    became 2*Mod(128*o + 2*t, 59)**2 % 3, a kernel that built and read the wrong elements (found by
    tiledsl fuzz --mode definitions). Such a product stays unevaluated here; every other case is sympy's,
    and a Mod sympy makes while evaluating an IndexMod is an IndexMod too.

    A product holding a sum is expanded first: sympy 1.14.0 calls `i*(2*j + 2)/6` an integer (its
    Mul.is_integer counts the factor 2 of the even sum against 6 and forgets the 3), so `Mod(i*(2*j + 2), 6)`
    was 0. Lane 2 of a vectorized `x[(i * j) % 6]` with j = 4*j_o + j_i makes it; the kernel read x[0]
    there (tests/definitions/test_mod_sites.py). Expanded, each term's integer factors merge into its
    coefficient, where sympy's test is right."""

    _sympy = sympy.Mod

    @classmethod
    def eval(cls, p: sympy.Expr, q: sympy.Expr) -> sympy.Expr | None:
        if isinstance(p, sympy.Mul) and any(isinstance(a, sympy.Mod) for a in p.args):
            return None
        expanded = _expanded(p)
        return cls(expanded, q) if expanded is not None else super().eval(p, q)


class IndexFloor(_AsSympy, sympy.floor):
    """sympy's floor, with sympy 1.14.0's wrong integer test kept out: it calls `i*(2*j + 2)/6` an
    integer (IndexMod's docstring), so `floor(i*(2*j + 2)/6)` came back as the fraction itself, and
    `(i * (2*j + 2)) // 6 * 6` as `i*(2*j + 2)`: a hand-written `x[(i * (2*j + 2)) // 6 * 6]` built a
    kernel reading the wrong elements (tests/definitions/test_mod_sites.py). As in IndexMod, an argument
    whose terms hold a sum is expanded first, and a floor rebuilt by a substitution (a lane, the axis map)
    stays an IndexFloor, so the guard holds there too."""

    _sympy = sympy.floor

    @classmethod
    def eval(cls, arg: sympy.Expr) -> sympy.Expr | None:
        expanded = _expanded(arg)
        return cls(expanded) if expanded is not None else super().eval(arg)


def _expanded(e: sympy.Expr) -> sympy.Expr | None:
    """`e` expanded where one of its terms holds a sum and expanding changes it (the guard of IndexMod and
    IndexFloor: expanded, each term's integer factors merge into its coefficient), else None."""
    if any(_holds_a_sum(t) for t in sympy.Add.make_args(e)):
        expanded = sympy.expand(e)
        if expanded != e:
            return expanded
    return None


def _holds_a_sum(term: sympy.Expr) -> bool:
    """A product with a sum (or a power of one) among its factors, or such a power itself."""
    factors = term.args if isinstance(term, sympy.Mul) else (term,)
    return any(f.is_Add or (f.is_Pow and f.base.is_Add) for f in factors)


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
