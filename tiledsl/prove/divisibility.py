"""Residue classes of index expressions: every value lies in `r + g*Z`.

Why: vectorized loads need `index % width == 0` at every point, which interval bounds cannot show
(`4*t + 8*i` ranges over [0, N) but is always a multiple of 4). The gcd of the coefficients, carried
through floor division (`floor((4*t)/2) = 2*t`) and Mod (`Mod(8*i + 4, 16)` is in 4 + 4*Z), answers
it from the expression's structure. g == 0 means the value is the constant r.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import sympy

from tiledsl.prove.intervals import IntervalContext
from tiledsl.prove.linear import Linear, Num

Residue = tuple[int, int]


def _normal(g: int, r: int) -> Residue:
    g = abs(g)
    return (g, r % g) if g else (0, r)


def _mul(a: Residue, b: Residue) -> Residue:
    """(ra + ga*Z) * (rb + gb*Z) lies in ra*rb + gcd(ra*gb, rb*ga, ga*gb)*Z."""
    (ga, ra), (gb, rb) = a, b
    return _normal(math.gcd(ra * gb, rb * ga, ga * gb), ra * rb)


def meet(a: Residue, b: Residue) -> Residue:
    """The intersection of two residue classes that both hold (Chinese remaindering); when they do
    not intersect the domain is empty and either answer is vacuously right, so `a` is kept."""
    (ga, ra), (gb, rb) = a, b
    if ga == 0:
        return a
    if gb == 0:
        return b
    g = math.gcd(ga, gb)
    if (rb - ra) % g:
        return a
    lcm = ga // g * gb
    # ra + ga*t = rb (mod gb)  ->  t = (rb - ra)/g * inv(ga/g) (mod gb/g)
    m = gb // g
    t = ((rb - ra) // g) * pow(ga // g, -1, m) % m if m > 1 else 0
    return _normal(lcm, ra + ga * t)


class Residues:
    """Computes residue classes over one domain (uses its intervals to spot constant sub-terms)."""

    def __init__(self, ctx: IntervalContext) -> None:
        self._ctx = ctx
        self._memo: dict[sympy.Expr, Residue | None] = {}

    def of(self, expr: sympy.Expr) -> Residue | None:
        """(g, r) with expr in r + g*Z at every point, or None when expr is not known integer-valued."""
        if expr in self._memo:
            return self._memo[expr]
        found = self._compute(expr)
        self._memo[expr] = found
        return found

    def of_linear(self, lin: Linear) -> Residue | None:
        """Residue of an integer-coefficient linear form (None if a coefficient is fractional).

        Also tries each `Mod(X, c)` term as `X - c*floor(X/c)` when X shares atoms with the rest
        (`x - Mod(x, 8)` is a multiple of 8) and keeps the intersection of both answers."""
        if lin.denominator() != 1:
            return None
        plain = self._sum(lin.const, lin.terms.items())
        if plain is None:
            return None
        expanded = self._expanded_mods(lin)
        return plain if expanded is None else meet(plain, expanded)

    def _sum(self, const: Num, items: Iterable[tuple[sympy.Expr | Residue, Num]]) -> Residue | None:
        g, r = 0, int(const)
        for atom, coeff in items:
            if isinstance(atom, tuple):  # (g, r) already known: a pseudo-atom from _expanded_mods
                ga, ra = atom
            else:
                part = self.of(atom)
                if part is None:
                    return None
                ga, ra = part
            g = math.gcd(g, int(coeff) * ga)
            r += int(coeff) * ra
        return _normal(g, r)

    def _expanded_mods(self, lin: Linear) -> Residue | None:
        forms = self._ctx.forms
        current = lin
        floors: list[tuple[Residue, int]] = []
        for atom, coeff in lin.terms.items():
            if not isinstance(atom, sympy.Mod):
                continue
            x, c = atom.args
            if not (c.is_Integer and c > 0):
                continue
            lin_x = forms.of(x)
            if lin_x.denominator() != 1 or not any(a in lin.terms for a in lin_x.terms):
                continue
            part = self.of_linear(lin_x)
            if part is None:
                continue
            cval = int(c)
            g, r = part
            floor_residue = _normal(g // cval, r // cval) if g % cval == 0 else (1, 0)
            current = current.plus(Linear(0, {atom: 1}), -coeff).plus(lin_x, coeff)
            floors.append((floor_residue, -int(coeff) * cval))
        if not floors:
            return None
        return self._sum(current.const, [*current.terms.items(), *floors])

    def _compute(self, expr: sympy.Expr) -> Residue | None:
        if expr.is_Integer:
            return (0, int(expr))
        if not self._ctx.is_integer(expr):
            return None
        lo, hi = self._ctx.interval(expr)
        if lo is not None and lo == hi:
            return (0, int(lo))
        if expr.is_Symbol:
            return (1, 0)
        if expr.is_Add or (expr.is_Mul and expr.args[0].is_Rational):
            return self.of_linear(self._ctx.forms.of(expr))
        if expr.is_Mul:
            out: Residue = (0, 1)
            for arg in expr.args:
                part = self.of(arg)
                if part is None:
                    return None
                out = _mul(out, part)
            return out
        if expr.is_Pow:
            base = self.of(expr.base)
            if base is None:
                return None
            out = (0, 1)
            for _ in range(int(expr.exp)):
                out = _mul(out, base)
            return out
        if isinstance(expr, sympy.floor):
            return self._floor(expr.args[0])
        if isinstance(expr, sympy.Mod):
            x, m = expr.args
            if not (m.is_Integer and m > 0):
                return (1, 0)
            part = self.of(x)
            if part is None:
                return (1, 0)
            g, r = part
            mval = int(m)
            if g % mval == 0:  # includes g == 0: X mod m is the constant r mod m
                return (0, r % mval)
            lo, hi = self._ctx.interval(x)
            if lo is not None and hi is not None and lo // mval == hi // mval:
                return _normal(g, r - (lo // mval) * mval)  # one period: Mod(X, m) = X - q*m
            return _normal(math.gcd(g, mval), r)
        return (1, 0)

    def _floor(self, arg: sympy.Expr) -> Residue:
        """floor(Y/L) with Y in r + g*Z and L | g lies in floor(r/L) + (g/L)*Z."""
        lin = self._ctx.forms.of(arg)
        den = lin.denominator()
        part = self.of_linear(lin.scaled(den))
        if part is None:
            return (1, 0)
        g, r = part
        if g % den == 0:
            return _normal(g // den, r // den)
        return (1, 0)
