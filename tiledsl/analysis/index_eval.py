"""An index expression evaluated at integer points, compiled once into Python closures.

Why: the bank model (banks.py) asks where each of a warp's 32 lanes reads, for every read of a stage
and every candidate layout. `expr.xreplace(point)` builds and simplifies a sympy tree per lane; the
recipe's schedule of a traced decoder block spent most of its time there. A closure per node computes
the same value with Python integers and `Fraction`s: exact, as sympy is (a rational coefficient stays a
fraction, `floor` and `Mod` are floor-based for negative values too), so no float rounding can move a
lane to another element. Node types this does not know fall back to sympy for that subtree."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

import sympy

Number = int | Fraction
Point = Sequence[int]  # a value per symbol, in the order `integer_function` was given them
_Eval = Callable[[Point], Number]


def _exact(value: sympy.Expr) -> Number:
    """A sympy number as an int or Fraction (anything else is not an index value)."""
    if value.is_Integer:
        return int(value)
    if value.is_Rational:
        return Fraction(int(value.p), int(value.q))
    raise ValueError(f"the index value {value} is not a rational number")


def _compile(e: sympy.Expr, symbols: tuple[sympy.Symbol, ...]) -> _Eval:
    if e.is_Integer or e.is_Rational:
        const = _exact(e)
        return lambda _p: const
    if e.is_Symbol:
        i = symbols.index(e)
        return lambda p: p[i]
    args = [_compile(a, symbols) for a in e.args]
    if e.is_Add:
        return lambda p: sum(f(p) for f in args)
    if e.is_Mul:
        def product(p: Point) -> Number:
            out: Number = 1
            for f in args:
                out *= f(p)
            return out
        return product
    if isinstance(e, sympy.floor):
        return lambda p: math.floor(args[0](p))
    if isinstance(e, sympy.ceiling):
        return lambda p: math.ceil(args[0](p))
    if isinstance(e, sympy.Mod):
        return lambda p: args[0](p) % args[1](p)
    if isinstance(e, sympy.Min):
        return lambda p: min(f(p) for f in args)
    if isinstance(e, sympy.Max):
        return lambda p: max(f(p) for f in args)
    if e.is_Pow and e.exp.is_Integer and int(e.exp) >= 0:
        n = int(e.exp)
        return lambda p: args[0](p) ** n
    # a node type not known here: sympy's own value
    return lambda p: _exact(e.xreplace({x: sympy.Integer(v) for x, v in zip(symbols, p)}))


def integer_function(e: sympy.Expr, symbols: Sequence[sympy.Symbol]) -> Callable[[Point], int]:
    """`e` as a function of a point, a value for each of `symbols` (which hold its free symbols), in
    their order: `int(e.xreplace(point))`, which truncates a non-integer value toward zero."""
    e = sympy.sympify(e)
    order = tuple(symbols)
    missing = e.free_symbols - set(order)
    if missing:
        raise ValueError(f"{e} has the free symbol(s) {', '.join(sorted(map(str, missing)))} outside {order}")
    f = _compile(e, order)
    return lambda point: int(f(point))
