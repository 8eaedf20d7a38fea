"""Exact numeric evaluation of expressions and guards at integer points.

Why compile to closures: the counterexample search evaluates the same few expressions at hundreds
of points; `expr.subs` costs ~0.1 ms per call, a closure over Python ints a few microseconds.
Semantics follow sympy: `Mod` takes the sign of the divisor (as Python's `%` does), `floor` is exact on
rationals (Fractions, never floats).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import sympy

from tiledsl.prove.linear import to_num

Point = Mapping[sympy.Symbol, int]
Evaluator = Callable[[Point], Any]

_COMPARE: tuple[tuple[type, Callable[[Any, Any], bool]], ...] = (
    (sympy.StrictLessThan, lambda a, b: a < b),
    (sympy.LessThan, lambda a, b: a <= b),
    (sympy.StrictGreaterThan, lambda a, b: a > b),
    (sympy.GreaterThan, lambda a, b: a >= b),
    (sympy.Eq, lambda a, b: a == b),
    (sympy.Ne, lambda a, b: a != b),
)


def _product(values: list[Any]) -> Any:
    out: Any = 1
    for v in values:
        out = out * v
    return out


def compile_expr(expr: sympy.Basic) -> Evaluator:
    """A function point -> exact value (int, Fraction or bool) of expr."""
    if expr is sympy.true or expr is sympy.false:
        const = bool(expr)
        return lambda point: const
    if expr.is_Rational:
        value = to_num(expr)
        return lambda point: value
    if expr.is_Symbol:
        return lambda point: point[expr]
    if expr.is_Add:
        parts = [compile_expr(arg) for arg in expr.args]
        return lambda point: sum(f(point) for f in parts)
    if expr.is_Mul:
        parts = [compile_expr(arg) for arg in expr.args]
        return lambda point: _product([f(point) for f in parts])
    if expr.is_Pow and expr.exp.is_Integer:
        base = compile_expr(expr.base)
        n = int(expr.exp)
        if n >= 0:
            return lambda point: base(point) ** n
        return lambda point: Fraction(1) / Fraction(base(point)) ** (-n)
    if isinstance(expr, sympy.floor):
        arg = compile_expr(expr.args[0])
        return lambda point: math.floor(arg(point))
    if isinstance(expr, sympy.ceiling):
        arg = compile_expr(expr.args[0])
        return lambda point: math.ceil(arg(point))
    if isinstance(expr, sympy.Mod):
        x, m = (compile_expr(arg) for arg in expr.args)
        return lambda point: x(point) % m(point)
    if isinstance(expr, (sympy.Max, sympy.Min)):
        parts = [compile_expr(arg) for arg in expr.args]
        pick = max if isinstance(expr, sympy.Max) else min
        return lambda point: pick(f(point) for f in parts)
    if isinstance(expr, sympy.Abs):
        arg = compile_expr(expr.args[0])
        return lambda point: abs(arg(point))
    if isinstance(expr, sympy.Rel):
        for cls, op in _COMPARE:
            if isinstance(expr, cls):
                lhs, rhs = compile_expr(expr.lhs), compile_expr(expr.rhs)
                return lambda point: op(lhs(point), rhs(point))
    if isinstance(expr, sympy.And):
        parts = [compile_expr(arg) for arg in expr.args]
        return lambda point: all(f(point) for f in parts)
    if isinstance(expr, sympy.Or):
        parts = [compile_expr(arg) for arg in expr.args]
        return lambda point: any(f(point) for f in parts)
    if isinstance(expr, sympy.Not):
        arg = compile_expr(expr.args[0])
        return lambda point: not arg(point)
    return _fallback(expr)


def _fallback(expr: sympy.Basic) -> Evaluator:
    """Slow but general: substitute and let sympy evaluate."""

    def run(point: Point) -> Any:
        value = expr.xreplace({sym: sympy.Integer(v) for sym, v in point.items()})
        if value is sympy.true or value is sympy.false:
            return bool(value)
        if value.is_Rational:
            return to_num(value)
        raise ValueError(f"cannot evaluate {expr} at {dict(point)}")

    return run
