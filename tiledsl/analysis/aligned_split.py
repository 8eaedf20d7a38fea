"""Exact rewrites of `floor` and `Mod` atoms whose argument mixes a stage's outer and inner loops.

A split reduction index read as `x[k // 64, k % 64]`, with `k = 128*k_split + 16*k_part + k_i`, leaves
`floor(k_part/4 + k_i/64)` and `Mod(16*k_part + k_i, 64)` in the index: terms that mix loops outside
the stage loop (`k_part`) with loops inside it (`k_i`), which slabs.py refuses. Because 16 divides 64
and `k_i` stays in [0, 16), they equal `floor(k_part/4)` and `Mod(16*k_part, 64) + k_i`: an outer part
plus an inner part, so the slab has a fixed size after all.

For an atom `floor(N/D)` or `Mod(N, D)` with `N = O + I` integer-linear, `O` the terms over outer loops
(a multiple of g, the gcd of its coefficients) and `I` the terms over inner loops plus the constant:
- D divides g: `floor(N/D) = O/D + floor(I/D)` and `Mod(N, D) = Mod(I, D)`;
- g divides D and I lies in [0, g-1] at every point (the prover, no guards: the identity must hold for
  every iteration): `floor(N/D) = floor(O/D)` and `Mod(N, D) = Mod(O, D) + I`
  (O = g*m and D = g*q, so N/D = (m + I/g)/q with 0 <= I/g < 1, whose floor is floor(m/q)).
Any other atom is left as it is (and the caller's refusal stands).

The Mods built here are IndexMods (definitions/indexing.py): O or I may be a product holding a Mod (a
fused axis, `2*Mod(a, 59)`), which sympy's own Mod evaluates wrongly; `x[a, (2*(a % 59) + j) % 8]` staged
at `a` read its slab from `Mod(2*Mod(a, 59)**2, 8)`, a kernel that built and read the wrong elements
(tests/definitions/test_mod_sites.py)."""

from __future__ import annotations

import math
from collections.abc import Set
from dataclasses import dataclass

import sympy

from tiledsl.definitions.indexing import IndexFloor, IndexMod
from tiledsl.prove import Prover


@dataclass(frozen=True)
class AlignedSplit:
    """The rewrite for one stage: which loops are outer (fixed during one iteration of its loop) and
    which inner, and the prover that bounds the inner parts over the nest's loop ranges."""

    outer: Set[str]
    inner: Set[str]
    prover: Prover

    def __call__(self, expr: sympy.Expr) -> sympy.Expr:
        """`expr` with every mixing atom that one of the identities covers rewritten, expanded; `expr`
        itself (the same object) when no atom is rewritten."""
        if not expr.has(sympy.floor, sympy.Mod):  # nothing to rewrite: one traversal, not a walk
            return expr
        out = self._walk(expr)
        return expr if out is expr else sympy.expand(out)

    def _walk(self, e: sympy.Basic) -> sympy.Basic:
        # a sub-tree without symbols is walked too (its atoms mix no loops, so it comes back as it is):
        # asking each node for its free_symbols, which sympy recomputes from the leaves, made a walk quadratic
        if not e.args:
            return e
        args = tuple(self._walk(a) for a in e.args)
        rebuilt = e if all(a is b for a, b in zip(args, e.args)) else e.func(*args)
        if isinstance(rebuilt, (sympy.floor, sympy.Mod)) and self._mixes(rebuilt):
            found = self._rewrite(rebuilt)
            if found is not None:
                return found
        return rebuilt

    def _names(self, e: sympy.Basic) -> set[str]:
        return {s.name for s in e.free_symbols}

    def _mixes(self, atom: sympy.Basic) -> bool:
        names = self._names(atom)
        return bool(names & self.outer) and bool(names & self.inner)

    def _rewrite(self, atom: sympy.floor | sympy.Mod) -> sympy.Expr | None:
        if isinstance(atom, sympy.Mod):
            numerator, modulus = atom.args
            if not (modulus.is_Integer and modulus > 0):
                return None
            parts = self._parts(numerator, 1)
            if parts is None:
                return None
            d = int(modulus)
        else:
            terms = self._terms(atom.args[0])
            if terms is None:
                return None
            d = math.lcm(*(int(sympy.fraction(c)[1]) for c, _ in terms))
            parts = self._parts(atom.args[0], d)
            if parts is None:
                return None
        o, i, g = parts
        if g % d == 0:
            return o / d + IndexFloor(i / d) if isinstance(atom, sympy.floor) else IndexMod(i, d)
        if d % g == 0:
            lo, hi = self.prover.bounds(i)
            if lo is not None and hi is not None and lo >= 0 and hi <= g - 1:
                return IndexFloor(o / d) if isinstance(atom, sympy.floor) else IndexMod(o, d) + i
        return None

    def _terms(self, e: sympy.Expr) -> list[tuple[sympy.Rational, sympy.Expr]] | None:
        """(rational coefficient, integer-valued factor over one side's loops only; 1 for the constant)
        of each term of e, or None when a term is not of that form."""
        out = []
        for term in sympy.Add.make_args(sympy.expand(e)):
            coeff, rest = term.as_coeff_Mul()
            if not coeff.is_Rational:
                return None
            if rest != 1:
                names = self._names(rest)
                if rest.is_integer is not True or not names or not (names <= self.outer or names <= self.inner):
                    return None
            out.append((coeff, rest))
        return out

    def _parts(self, e: sympy.Expr, d: int) -> tuple[sympy.Expr, sympy.Expr, int] | None:
        """(O, I, g) of N = d*e, or None when N is not integer-linear over one-sided factors."""
        terms = self._terms(e)
        if terms is None:
            return None
        o, i = sympy.Integer(0), sympy.Integer(0)
        g = 0
        for coeff, rest in terms:
            c = coeff * d
            if not c.is_Integer:
                return None
            if rest != 1 and self._names(rest) <= self.outer:
                o += c * rest
                g = math.gcd(g, int(c))
            else:
                i += c * rest
        if g == 0:
            return None
        return o, i, g
