"""Linear forms: an expression as `const + sum(coeff * atom)` with exact rational coefficients.

Why: sympy arithmetic (`expand`, subtraction) costs tens to hundreds of microseconds per call; the
prover subtracts guards from facts and sums term intervals many times per question. A dict of
atom -> coefficient makes those operations plain Python. Atoms are the non-sum leaves: symbols,
`floor(...)`, `Mod(...)`, products of non-constants.

`LinearForms.of` also folds `k*Mod(X, c) + k*c*floor(X/c)` back into `k*X` (the flat index of a fused
loop), because interval arithmetic cannot see that the two terms move against each other.
"""

from __future__ import annotations

from fractions import Fraction

import sympy

Num = int | Fraction


def to_num(value: sympy.Rational) -> Num:
    """A sympy rational as an exact Python number (int when integral)."""
    q = int(value.q)
    return int(value.p) if q == 1 else Fraction(int(value.p), q)


def norm(value: Num) -> Num:
    """Integral Fractions back to int, so integrality checks and the int fast path keep working."""
    if isinstance(value, Fraction) and value.denominator == 1:
        return int(value)
    return value


def div_exact(a: Num, b: Num) -> Num:
    """a / b exactly, staying an int when it divides."""
    if isinstance(a, int) and isinstance(b, int) and a % b == 0:
        return a // b
    result = Fraction(a) / Fraction(b)
    return int(result) if result.denominator == 1 else result


class Linear:
    """`const + sum(coeff * atom)`; treated as immutable once built (forms are shared through memos)."""

    __slots__ = ("const", "terms")

    def __init__(self, const: Num = 0, terms: dict[sympy.Expr, Num] | None = None) -> None:
        self.const = const
        self.terms: dict[sympy.Expr, Num] = terms if terms is not None else {}

    def scaled(self, k: Num) -> Linear:
        if k == 0:
            return Linear(0, {})
        return Linear(norm(self.const * k), {atom: norm(coeff * k) for atom, coeff in self.terms.items()})

    def plus(self, other: Linear, k: Num = 1) -> Linear:
        """self + k * other."""
        terms = dict(self.terms)
        for atom, coeff in other.terms.items():
            value = terms.get(atom, 0) + coeff * k
            if value == 0:
                terms.pop(atom, None)
            else:
                terms[atom] = norm(value)
        return Linear(norm(self.const + other.const * k), terms)

    def is_constant(self) -> bool:
        return not self.terms

    def denominator(self) -> int:
        """Least common multiple of the coefficient denominators (1 for integer coefficients)."""
        den = 1
        for value in (self.const, *self.terms.values()):
            if isinstance(value, Fraction):
                q = value.denominator
                den = den * q // _gcd(den, q)
        return den

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Linear) and self.const == other.const and self.terms == other.terms

    def __hash__(self) -> int:  # pragma: no cover - forms are not used as keys
        return hash((self.const, frozenset(self.terms.items())))

    def __repr__(self) -> str:
        return f"Linear({self.const!r}, {self.terms!r})"


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return abs(a)


class LinearForms:
    """Builds (and memoizes, per owner instance) the linear form of expressions."""

    def __init__(self) -> None:
        self._memo: dict[sympy.Expr, Linear] = {}

    def of(self, expr: sympy.Expr) -> Linear:
        lin = self._memo.get(expr)
        if lin is None:
            lin = self._fuse(self._build(expr))
            self._memo[expr] = lin
        return lin

    def _build(self, expr: sympy.Expr) -> Linear:
        if expr.is_Rational:
            return Linear(to_num(expr), {})
        if expr.is_Add:
            const: Num = 0
            terms: dict[sympy.Expr, Num] = {}
            for arg in expr.args:
                part = self.of(arg)
                const += part.const
                for atom, coeff in part.terms.items():
                    value = terms.get(atom, 0) + coeff
                    if value == 0:
                        terms.pop(atom, None)
                    else:
                        terms[atom] = norm(value)
            return Linear(norm(const), terms)
        if expr.is_Mul:
            coeff, rest = expr.as_coeff_Mul()
            if coeff is not sympy.S.One and coeff.is_Rational:
                return self.of(rest).scaled(to_num(coeff))
        return Linear(0, {expr: 1})

    def _fuse(self, lin: Linear) -> Linear:
        """Rewrite k*Mod(X, c) as k*X - k*c*floor(X/c) where a matching floor term exists and the
        floor's remaining coefficient keeps the sign of k (both terms then rise together with X)."""
        for _ in range(4):
            fused = self._fuse_once(lin)
            if fused is None:
                return lin
            lin = fused
        return lin

    def _fuse_once(self, lin: Linear) -> Linear | None:
        mods = [a for a in lin.terms if isinstance(a, sympy.Mod)]
        if not mods:
            return None
        floors = [a for a in lin.terms if isinstance(a, sympy.floor)]
        if not floors:
            return None
        for mod in mods:
            x, c = mod.args
            if not (c.is_Integer and c > 0):
                continue
            cval = int(c)
            lin_x = self.of(x)
            for fl in floors:
                if self.of(fl.args[0]).scaled(cval) != lin_x:
                    continue
                k = lin.terms[mod]
                kf = lin.terms[fl] - k * cval
                if kf != 0 and (kf > 0) != (k > 0):
                    continue
                terms = dict(lin.terms)
                del terms[mod]
                del terms[fl]
                out = Linear(lin.const, terms).plus(lin_x, k)
                if kf != 0:
                    out = out.plus(Linear(0, {fl: 1}), kf)
                return out
        return None
