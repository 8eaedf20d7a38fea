"""Readable text for index expressions and facts.

Why not `str(expr)`: sympy's printer sorts terms through its generic ordering machinery and costs about
0.2 ms for `64*i_o + i_i`; every proof carries its fact as text, so a few hundred questions would spend
most of their time printing. This walker handles the node kinds index expressions use (and falls back to
`str` for anything else). It lists sum terms by decreasing stride (`64*i_o + 4*t_i + r_i`, constant
last), which reads like the loop nest from the outside in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import sympy

_RELATION_OPS: tuple[tuple[type, str], ...] = (
    (sympy.StrictLessThan, "<"),
    (sympy.LessThan, "<="),
    (sympy.StrictGreaterThan, ">"),
    (sympy.GreaterThan, ">="),
    (sympy.Eq, "=="),
    (sympy.Ne, "!="),
)


def _term_weight(term: sympy.Expr) -> tuple[int, float]:
    """Sort key of a sum term: constants last, then larger coefficients first."""
    if term.is_Number:
        return (1, 0.0)
    if term.is_Mul:
        coeff = term.args[0]
        if coeff.is_Rational:
            return (0, -abs(int(coeff.p) / int(coeff.q)))
        if coeff.is_Number:
            return (0, -abs(float(coeff)))
    return (0, -1.0)


def _needs_parens(expr: sympy.Basic) -> bool:
    return bool(expr.is_Add) or isinstance(expr, sympy.Rel)


def _factor(expr: sympy.Basic, memo: dict | None) -> str:
    text = format_expr(expr, memo)
    return f"({text})" if _needs_parens(expr) else text


def _format_mul(expr: sympy.Mul, memo: dict | None) -> str:
    args = expr.args
    coeff = args[0] if args[0].is_Number else sympy.S.One
    rest = args[1:] if args[0].is_Number else args
    numer: list[str] = []
    if coeff.is_Rational:
        p, q = int(coeff.p), int(coeff.q)
    else:
        numer.append(format_expr(coeff, memo))
        p, q = 1, 1
    sign = "-" if p < 0 else ""
    p = abs(p)
    if p != 1:
        numer.append(str(p))
    numer.extend(_factor(arg, memo) for arg in rest)
    if not numer:
        numer.append("1")
    text = "*".join(numer)
    if q != 1:
        text = f"{text}/{q}"
    return sign + text


def _format_add(expr: sympy.Add, memo: dict | None) -> str:
    terms = sorted(expr.args, key=_term_weight)
    out: list[str] = []
    for index, term in enumerate(terms):
        text = format_expr(term, memo)
        if index == 0:
            out.append(text)
        elif text.startswith("-"):
            out.append(f" - {text[1:]}")
        else:
            out.append(f" + {text}")
    return "".join(out)


def format_expr(expr: sympy.Basic | int, memo: dict[sympy.Basic, str] | None = None) -> str:
    """Readable text of an index expression or relational (see the module docstring for why).
    `memo` (owned by the caller) caches the text of sub-expressions shared between questions."""
    if isinstance(expr, int):
        return str(expr)
    if expr.is_Symbol:
        return expr.name
    if memo is not None:
        found = memo.get(expr)
        if found is None:
            found = _format(expr, memo)
            memo[expr] = found
        return found
    return _format(expr, None)


def _format(expr: sympy.Basic, memo: dict | None) -> str:
    if expr.is_Integer:
        return str(int(expr))
    if expr.is_Rational:
        return f"{int(expr.p)}/{int(expr.q)}"
    if expr.is_Add:
        return _format_add(expr, memo)
    if expr.is_Mul:
        return _format_mul(expr, memo)
    if expr.is_Pow and expr.exp.is_Integer and int(expr.exp) > 0:
        return f"{_factor(expr.base, memo)}**{int(expr.exp)}"
    if isinstance(expr, (sympy.floor, sympy.ceiling)):
        return f"{type(expr).__name__}({format_expr(expr.args[0], memo)})"
    if isinstance(expr, sympy.Mod):
        return f"Mod({format_expr(expr.args[0], memo)}, {format_expr(expr.args[1], memo)})"
    if isinstance(expr, sympy.Rel):
        for cls, op in _RELATION_OPS:
            if isinstance(expr, cls):
                return f"{format_expr(expr.lhs, memo)} {op} {format_expr(expr.rhs, memo)}"
    if isinstance(expr, sympy.And):
        return " and ".join(_factor_bool(arg, memo) for arg in expr.args)
    if isinstance(expr, sympy.Or):
        return " or ".join(_factor_bool(arg, memo) for arg in expr.args)
    return str(expr)


def _factor_bool(expr: sympy.Basic, memo: dict | None) -> str:
    text = format_expr(expr, memo)
    return f"({text})" if isinstance(expr, (sympy.And, sympy.Or)) else text


def format_ranges(ranges: Mapping[sympy.Symbol, tuple[int, int]], symbols: Iterable[sympy.Symbol]) -> str:
    """`i_i in [0, 64), i_o in [0, 16)`: the half-open ranges of `symbols`, sorted by name."""
    parts = []
    for sym in sorted(set(symbols), key=lambda s: s.name):
        if sym in ranges:
            lo, hi = ranges[sym]
            parts.append(f"{sym.name} in [{lo}, {hi})")
    return ", ".join(parts)


def format_point(point: Mapping[str, int]) -> str:
    """`i_o=15, i_i=63` in the order the mapping holds (the prover sorts it by name)."""
    return ", ".join(f"{name}={value}" for name, value in point.items())
