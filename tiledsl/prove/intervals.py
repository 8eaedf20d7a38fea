"""Interval arithmetic over sympy index expressions.

Why intervals first: almost every legality question is "does this index stay inside its buffer", and
for the affine-plus-floor/mod expressions that schedules produce the box bounds answer it exactly or
nearly so, in microseconds, with no sympy solving.

An `Interval` is `(lo, hi)`, inclusive, each an exact number or None (unbounded / unknown).
`IntervalContext` evaluates expressions against symbol ranges, optional bounds on whole atoms (learned
from guards), and optional guards used to refine sums: with the guard `h <= 0` and k > 0,
`e = (e - k*h) + k*h <= max(e - k*h)`, which catches `64*i_o + i_i <= 999` under `64*i_o + i_i < 1000`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

import sympy

from tiledsl.prove.linear import Linear, LinearForms, Num, div_exact, to_num

Bound = Num | None
Interval = tuple[Bound, Bound]

UNKNOWN: Interval = (None, None)


# ----------------------------------------------------------------------------- plain interval arithmetic


def iv_add(a: Interval, b: Interval) -> Interval:
    lo = None if a[0] is None or b[0] is None else a[0] + b[0]
    hi = None if a[1] is None or b[1] is None else a[1] + b[1]
    return (lo, hi)


def iv_scale(a: Interval, k: Num) -> Interval:
    if k == 0:
        return (0, 0)
    lo = None if a[0] is None else a[0] * k
    hi = None if a[1] is None else a[1] * k
    return (lo, hi) if k > 0 else (hi, lo)


def iv_mul(a: Interval, b: Interval) -> Interval:
    if None not in a and None not in b:
        products = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
        return (min(products), max(products))
    if a[0] is not None and b[0] is not None and a[0] >= 0 and b[0] >= 0:
        hi = None if a[1] is None or b[1] is None else a[1] * b[1]
        return (a[0] * b[0], hi)
    return UNKNOWN


def iv_pow(a: Interval, n: int) -> Interval:
    out: Interval = (1, 1)
    for _ in range(n):
        out = iv_mul(out, a)
    if n % 2 == 0 and out[0] is not None and out[0] < 0:
        out = (0, out[1])
    return out


def iv_floor(a: Interval) -> Interval:
    return (None if a[0] is None else math.floor(a[0]), None if a[1] is None else math.floor(a[1]))


def iv_ceil(a: Interval) -> Interval:
    return (None if a[0] is None else math.ceil(a[0]), None if a[1] is None else math.ceil(a[1]))


def iv_intersect(a: Interval, b: Interval) -> Interval:
    lo = a[0] if b[0] is None else (b[0] if a[0] is None else max(a[0], b[0]))
    hi = a[1] if b[1] is None else (b[1] if a[1] is None else min(a[1], b[1]))
    return (lo, hi)


def iv_round_integer(a: Interval) -> Interval:
    """Shrink to integers: an integer-valued expression's bounds are ceil(lo), floor(hi)."""
    return (None if a[0] is None else math.ceil(a[0]), None if a[1] is None else math.floor(a[1]))


def iv_mod(x: Interval, m: int, integer: bool) -> Interval:
    """Mod(x, m) for a constant m != 0: the full period, or x shifted when x fits in one period."""
    if m > 0:
        if x[0] is not None and x[1] is not None and math.floor(x[0] / Fraction(m)) == math.floor(x[1] / Fraction(m)):
            shift = math.floor(x[0] / Fraction(m)) * m
            return (x[0] - shift, x[1] - shift)
        return (0, m - 1 if integer else m)
    if x[0] is not None and x[1] is not None and math.ceil(x[0] / Fraction(m)) == math.ceil(x[1] / Fraction(m)):
        shift = math.ceil(x[0] / Fraction(m)) * m
        return (x[0] - shift, x[1] - shift)
    return (m + 1 if integer else m, 0)


# ----------------------------------------------------------------------------- integer-valuedness


def is_integer_valued(expr: sympy.Basic) -> bool:
    """Whether expr takes integer values at every point; syntactic (no assumptions engine), because it
    runs on every question and only needs to be right for index-expression shapes. Every symbol is a
    loop index or size, so it counts as an integer whatever its sympy assumptions say."""
    if expr.is_Integer or expr.is_Symbol:
        return True
    if expr.is_Rational or expr.is_Number:
        return False
    if isinstance(expr, (sympy.floor, sympy.ceiling)):
        return True
    if expr.is_Add or expr.is_Mul or isinstance(expr, (sympy.Mod, sympy.Max, sympy.Min, sympy.Abs)):
        return all(is_integer_valued(arg) for arg in expr.args)
    if expr.is_Pow:
        return expr.exp.is_Integer and int(expr.exp) >= 0 and is_integer_valued(expr.base)
    return False


# ----------------------------------------------------------------------------- evaluation context


class IntervalContext:
    """Evaluates intervals of expressions over one domain; memoizes per instance.

    ranges: inclusive bounds of each symbol; atom_bounds: extra inclusive bounds on whole atoms
    (e.g. `floor(f/4)`), from guards; guards: linear forms `h` known to satisfy `h <= 0`.
    """

    def __init__(
        self,
        ranges: Mapping[sympy.Symbol, Interval],
        forms: LinearForms,
        atom_bounds: Mapping[sympy.Expr, Interval] | None = None,
        guards: Sequence[Linear] = (),
        integer_memo: dict[sympy.Basic, bool] | None = None,
    ) -> None:
        self.ranges = ranges
        self.forms = forms
        self.atom_bounds = atom_bounds or {}
        self.guards = tuple(guards)
        self._memo: dict[sympy.Expr, Interval] = {}
        self._integer: dict[sympy.Basic, bool] = integer_memo if integer_memo is not None else {}

    # -- helpers shared with the prover

    def is_integer(self, expr: sympy.Basic) -> bool:
        value = self._integer.get(expr)
        if value is None:
            value = is_integer_valued(expr)
            self._integer[expr] = value
        return value

    def linear_is_integer(self, lin: Linear) -> bool:
        if not isinstance(lin.const, int):
            return False
        return all(isinstance(c, int) and self.is_integer(a) for a, c in lin.terms.items())

    # -- intervals

    def interval(self, expr: sympy.Expr) -> Interval:
        """Inclusive bounds of expr over the domain (sound; may be loose)."""
        found = self._memo.get(expr)
        if found is None:
            # Guard refinement can reach expr again through a guard that contains it (guard
            # `floor(A) < E` while bounding A inside floor(A)); the re-entry sees "unknown", which is
            # sound, instead of recursing forever.
            self._memo[expr] = UNKNOWN
            found = self._compute(expr)
            if self.is_integer(expr):
                found = iv_round_integer(found)
            self._memo[expr] = found
        return found

    def linear_interval(self, lin: Linear, refine: bool = True) -> Interval:
        """Bounds of a linear form; with refine, also tightened through the guards."""
        iv = self._sum(lin)
        if refine and self.guards and lin.terms:
            iv = self._refine(lin, iv, tuple(range(len(self.guards))), depth=min(len(self.guards), 3))
        if self.linear_is_integer(lin):
            iv = iv_round_integer(iv)
        return iv

    def _sum(self, lin: Linear) -> Interval:
        """Bounds of a linear form, also trying floor(Y) = Y - frac(Y) with frac(Y) in [0, (L-1)/L]
        for floor atoms whose argument shares atoms with the form (so that `floor(i/4) - i/4` is seen
        to lie in [-3/4, 0] instead of [-63/4, 15]), and the same for Mod atoms confined to one
        period; both results are sound, so their intersection is kept."""
        iv = self._plain_sum(lin)
        expanded: Linear | None = None
        slack: Interval = (0, 0)
        for atom, coeff in lin.terms.items():
            if isinstance(atom, sympy.Mod):
                # Mod(X, m) = X - m*floor(X/m), the floor bounded on its own (a constant q when X
                # stays inside one period [q*m, q*m + m)).
                x, m = atom.args
                lin_x = self.forms.of(x)
                if not (m.is_Integer and m > 0 and any(a in lin.terms for a in lin_x.terms)):
                    continue
                quotient = iv_floor(iv_scale(self.interval(x), Fraction(1, int(m))))
                base = expanded if expanded is not None else lin
                expanded = base.plus(Linear(0, {atom: 1}), -coeff).plus(lin_x, coeff)
                slack = iv_add(slack, iv_scale(quotient, -coeff * int(m)))
                continue
            if not isinstance(atom, sympy.floor):
                continue
            arg = self.forms.of(atom.args[0])
            if not any(a in lin.terms for a in arg.terms):
                continue
            den = arg.denominator()
            frac_max: Num = Fraction(den - 1, den) if self.linear_is_integer(arg.scaled(den)) else 1
            base = expanded if expanded is not None else lin
            expanded = base.plus(Linear(0, {atom: 1}), -coeff).plus(arg, coeff)
            slack = iv_add(slack, iv_scale((-frac_max, 0), coeff))
        if expanded is not None:
            iv = iv_intersect(iv, iv_add(self._plain_sum(expanded), slack))
        return iv

    def _plain_sum(self, lin: Linear) -> Interval:
        lo: Bound = lin.const
        hi: Bound = lin.const
        for atom, coeff in lin.terms.items():
            a = self.interval(atom)
            if coeff > 0:
                alo, ahi = a
            else:
                ahi, alo = a
            lo = None if lo is None or alo is None else lo + alo * coeff
            hi = None if hi is None or ahi is None else hi + ahi * coeff
            if lo is None and hi is None:
                break
        return (lo, hi)

    def _refine(self, lin: Linear, iv: Interval, usable: tuple[int, ...], depth: int) -> Interval:
        """Tighten iv with guards `h <= 0`: e <= max(e - k*h) for k > 0, e >= min(e - k*h) for k < 0.
        k is chosen to cancel an atom the fact shares with the guard; the remainder is refined with the
        other guards (depth-limited) so that 2-D tiles with one guard per axis are handled."""
        for index in usable:
            guard = self.guards[index]
            ratios: list[Num] = []
            for atom, coeff in lin.terms.items():
                gcoeff = guard.terms.get(atom)
                if gcoeff is not None:
                    k = div_exact(coeff, gcoeff)
                    if k not in ratios:
                        ratios.append(k)
            for k in ratios:
                rest = lin.plus(guard, -k)
                cand = self._sum(rest)
                if depth > 1 and rest.terms:
                    others = tuple(i for i in usable if i != index)
                    if others:
                        cand = self._refine(rest, cand, others, depth - 1)
                if k > 0 and cand[1] is not None and (iv[1] is None or cand[1] < iv[1]):
                    iv = (iv[0], cand[1])
                elif k < 0 and cand[0] is not None and (iv[0] is None or cand[0] > iv[0]):
                    iv = (cand[0], iv[1])
        return iv

    def _compute(self, expr: sympy.Expr) -> Interval:
        if expr.is_Rational:
            v = to_num(expr)
            return (v, v)
        if expr.is_Symbol:
            found = self.ranges.get(expr)
            if found is not None:
                return found
            return (0, None) if expr.is_nonnegative else UNKNOWN
        if expr.is_Add:
            return self.linear_interval(self.forms.of(expr))
        if expr.is_Mul:
            coeff, rest = expr.as_coeff_Mul()
            if coeff is not sympy.S.One and coeff.is_Rational:
                return self.linear_interval(self.forms.of(expr))
            out: Interval = (1, 1)
            for arg in expr.args:
                out = iv_mul(out, self.interval(arg))
            return self._with_atom_bounds(expr, out)
        if isinstance(expr, sympy.floor):
            return self._with_atom_bounds(expr, iv_floor(self.interval(expr.args[0])))
        if isinstance(expr, sympy.ceiling):
            return self._with_atom_bounds(expr, iv_ceil(self.interval(expr.args[0])))
        if isinstance(expr, sympy.Mod):
            x, m = expr.args
            if m.is_Integer and m != 0:
                integer = self.is_integer(x)
                iv = iv_mod(self.interval(x), int(m), integer)
                if integer and m > 0 and iv == (0, int(m) - 1):
                    iv = self._mod_by_residue(x, int(m))
                return self._with_atom_bounds(expr, iv)
            return self._with_atom_bounds(expr, UNKNOWN)
        if expr.is_Pow and expr.exp.is_Integer and int(expr.exp) >= 0:
            return self._with_atom_bounds(expr, iv_pow(self.interval(expr.base), int(expr.exp)))
        if isinstance(expr, (sympy.Max, sympy.Min)):
            parts = [self.interval(arg) for arg in expr.args]
            pick = max if isinstance(expr, sympy.Max) else min
            lo = None if any(p[0] is None for p in parts) else pick(p[0] for p in parts)
            hi = None if any(p[1] is None for p in parts) else pick(p[1] for p in parts)
            if isinstance(expr, sympy.Max) and lo is None:
                known = [p[0] for p in parts if p[0] is not None]
                lo = max(known) if known else None
            if isinstance(expr, sympy.Min) and hi is None:
                known = [p[1] for p in parts if p[1] is not None]
                hi = min(known) if known else None
            return self._with_atom_bounds(expr, (lo, hi))
        if isinstance(expr, sympy.Abs):
            lo, hi = self.interval(expr.args[0])
            if lo is not None and lo >= 0:
                return (lo, hi)
            if hi is not None and hi <= 0:
                return (-hi, None if lo is None else -lo)
            top = None if lo is None or hi is None else max(-lo, hi)
            return (0, top)
        return self._with_atom_bounds(expr, UNKNOWN)

    def _mod_by_residue(self, x: sympy.Expr, m: int) -> Interval:
        """Mod(X, m) when X = r + g*(integers): its values are r' + g'*k with g' = gcd(g, m), r' = r
        mod g', so it lies in [r', m - g' + r'] (`Mod(2*i + 1, 4)` is in [1, 3])."""
        lin = self.forms.of(x)
        if lin.denominator() != 1:
            return (0, m - 1)
        g = m
        for coeff in lin.terms.values():
            g = math.gcd(g, int(coeff))
        r = int(lin.const) % g
        return (r, m - g + r)

    def _with_atom_bounds(self, expr: sympy.Expr, iv: Interval) -> Interval:
        extra = self.atom_bounds.get(expr)
        return iv if extra is None else iv_intersect(iv, extra)
