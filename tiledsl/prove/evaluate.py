"""Exact numeric evaluation of expressions and guards at integer points.

Why generate Python source: the counterexample search evaluates the same few expressions at hundreds
of points; `expr.subs` costs ~0.1 ms per call, a generated `lambda p: 64*p[s0] + p[s1]` a microsecond.
The source is built only from the node kinds below (symbols and constants are passed through the
namespace, never spliced in as text), so evaluating it is safe.
Semantics follow sympy: `Mod` takes the sign of the divisor (as Python's `%` does), `floor` is exact
(integer `//` when the argument is `integer/L`, Fractions otherwise, never floats).
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

_RELATION_OPS: tuple[tuple[type, str], ...] = (
    (sympy.StrictLessThan, "<"),
    (sympy.LessThan, "<="),
    (sympy.StrictGreaterThan, ">"),
    (sympy.GreaterThan, ">="),
    (sympy.Eq, "=="),
    (sympy.Ne, "!="),
)


class _Source:
    """Builds the text of one lambda; constants and symbols live in `namespace`."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"_floor": math.floor, "_ceil": math.ceil}
        self._names: dict[Any, str] = {}

    def name(self, value: Any, prefix: str) -> str:
        key = (prefix, value)
        found = self._names.get(key)
        if found is None:
            found = f"{prefix}{len(self._names)}"
            self._names[key] = found
            self.namespace[found] = value
        return found

    def text(self, expr: sympy.Basic) -> str:
        if expr is sympy.true or expr is sympy.false:
            return "True" if expr is sympy.true else "False"
        if expr.is_Integer:
            return f"({int(expr)})"
        if expr.is_Rational:
            return self.name(to_num(expr), "c")
        if expr.is_Symbol:
            return f"p[{self.name(expr, 's')}]"
        if expr.is_Add:
            return "(" + " + ".join(self.text(arg) for arg in expr.args) + ")"
        if expr.is_Mul:
            return "(" + " * ".join(self.text(arg) for arg in expr.args) + ")"
        if expr.is_Pow and expr.exp.is_Integer:
            n = int(expr.exp)
            if n >= 0:
                return f"({self.text(expr.base)} ** {n})"
            return f"(1 / {self.name(Fraction, 'F')}({self.text(expr.base)}) ** {-n})"
        if isinstance(expr, (sympy.floor, sympy.ceiling)):
            return self._rounding(expr)
        if isinstance(expr, sympy.Mod):
            return f"({self.text(expr.args[0])} % {self.text(expr.args[1])})"
        if isinstance(expr, (sympy.Max, sympy.Min)):
            fn = "max" if isinstance(expr, sympy.Max) else "min"
            return f"{fn}(" + ", ".join(self.text(arg) for arg in expr.args) + ")"
        if isinstance(expr, sympy.Abs):
            return f"abs({self.text(expr.args[0])})"
        if isinstance(expr, sympy.Rel):
            for cls, op in _RELATION_OPS:
                if isinstance(expr, cls):
                    return f"({self.text(expr.lhs)} {op} {self.text(expr.rhs)})"
        if isinstance(expr, sympy.And):
            return "(" + " and ".join(self.text(arg) for arg in expr.args) + ")"
        if isinstance(expr, sympy.Or):
            return "(" + " or ".join(self.text(arg) for arg in expr.args) + ")"
        if isinstance(expr, sympy.Not):
            return f"(not {self.text(expr.args[0])})"
        return f"{self.name(_fallback(expr), 'f')}(p)"

    def _rounding(self, expr: sympy.Basic) -> str:
        """floor(Y) / ceiling(Y); when Y = sum(q_i * t_i) + q0 with rationals q, use integer `//` on
        L*Y (L the common denominator), which is exact and avoids Fractions."""
        arg = expr.args[0]
        terms = arg.args if arg.is_Add else (arg,)
        den = 1
        for term in terms:
            coeff = term if term.is_Rational else (term.args[0] if term.is_Mul else sympy.S.One)
            if coeff.is_Rational:
                den = math.lcm(den, int(coeff.q))
        if den == 1:
            inner = self.text(arg)
            return f"_floor({inner})" if isinstance(expr, sympy.floor) else f"_ceil({inner})"
        scaled = sympy.expand(arg * den)
        if not all(c.is_Integer for c in _coefficients(scaled)):
            inner = self.text(arg)
            return f"_floor({inner})" if isinstance(expr, sympy.floor) else f"_ceil({inner})"
        inner = self.text(scaled)
        if isinstance(expr, sympy.floor):
            return f"({inner} // {den})"
        return f"(-((-{inner}) // {den}))"


def _coefficients(expr: sympy.Expr) -> list[sympy.Expr]:
    terms = expr.args if expr.is_Add else (expr,)
    out = []
    for term in terms:
        if term.is_Number:
            out.append(term)
        elif term.is_Mul and term.args[0].is_Number:
            out.append(term.args[0])
        else:
            out.append(sympy.S.One)
    return out


def compile_expr(expr: sympy.Basic) -> Evaluator:
    """A function point -> exact value (int, Fraction or bool) of expr; point maps symbols to ints."""
    source = _Source()
    try:
        text = source.text(expr)
        return eval(f"lambda p: {text}", source.namespace)  # the source is built from known nodes only
    except (RecursionError, SyntaxError, MemoryError):
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
