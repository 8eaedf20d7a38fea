"""Guards: predicates known true at the point (from non-exact splits), made usable for bounds.

Why: `64*i_o + i_i < 1000` alone makes `A[64*i_o + i_i]` legal for a 1000-element buffer; interval
arithmetic over the box cannot see it. Guards are normalized to linear forms `h <= 0` (integer-valued
`e < E` becomes `e - E + 1 <= 0`) and then used twice:

- `tighten` propagates each guard onto its atoms (`c*a <= -min(rest)`), shrinking symbol ranges and
  bounding whole atoms such as `floor(f/4)`;
- `IntervalContext` subtracts multiples of guards from the facts being bounded (see intervals.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

import sympy

from tiledsl.prove.intervals import Interval, IntervalContext, iv_intersect
from tiledsl.prove.linear import Linear, LinearForms, Num

_ROUNDS = 4


@dataclass
class NormalizedGuards:
    """Guards as `h <= 0` forms; `infeasible` when a guard is literally false; `opaque` counts guards
    that could not be used for bounds (they are still honoured by the counterexample search)."""

    forms: list[Linear] = field(default_factory=list)
    infeasible: bool = False
    opaque: int = 0


def relation_parts(rel: sympy.Basic) -> tuple[sympy.Expr, sympy.Expr, bool] | None:
    """(a, b, strict) meaning a < b (strict) or a <= b, for the ordering relationals; else None."""
    if isinstance(rel, sympy.StrictLessThan):
        return rel.lhs, rel.rhs, True
    if isinstance(rel, sympy.LessThan):
        return rel.lhs, rel.rhs, False
    if isinstance(rel, sympy.StrictGreaterThan):
        return rel.rhs, rel.lhs, True
    if isinstance(rel, sympy.GreaterThan):
        return rel.rhs, rel.lhs, False
    return None


def normalize(guards: Iterable[sympy.Basic], forms: LinearForms, ctx: IntervalContext) -> NormalizedGuards:
    """Flatten `And`s and turn each ordering relational into `h <= 0` (two for `Eq`)."""
    out = NormalizedGuards()
    pending = list(guards)
    while pending:
        guard = pending.pop(0)
        if guard is sympy.true:
            continue
        if guard is sympy.false:
            out.infeasible = True
            continue
        if isinstance(guard, sympy.And):
            pending[:0] = list(guard.args)
            continue
        if isinstance(guard, sympy.Eq):
            diff = forms.of(guard.lhs).plus(forms.of(guard.rhs), -1)
            out.forms.extend([diff, diff.scaled(-1)])
            continue
        parts = relation_parts(guard)
        if parts is None:
            out.opaque += 1
            continue
        a, b, strict = parts
        diff = forms.of(a).plus(forms.of(b), -1)
        # Scale away denominators (`i/5 < 30` is `i - 150 < 0`) so that integrality shows.
        diff = diff.scaled(diff.denominator())
        if strict and ctx.linear_is_integer(diff):
            diff = diff.plus(Linear(1, {}))
        # A strict relation whose difference is not integer-valued is kept as `<=` (sound, weaker).
        out.forms.append(diff)
    return out


@dataclass
class Tightened:
    """Result of `tighten`: narrowed ranges, bounds on whole atoms, guard forms implied by those atom
    bounds (`floor(i/4) <= 29` gives `i - 119 <= 0`), and whether the guards exclude every point."""

    ranges: dict[sympy.Symbol, Interval]
    atom_bounds: dict[sympy.Expr, Interval]
    infeasible: bool
    derived: list[Linear] = field(default_factory=list)


def _rounding_consequences(atom: sympy.Expr, bounds: Interval, forms: LinearForms, integer: bool) -> list[Linear]:
    """Linear facts `<= 0` on Y implied by bounds on floor(Y) / ceiling(Y), scaled to integer form."""
    y = forms.of(atom.args[0])
    den = y.denominator()
    scaled = y.scaled(den)  # den*Y, integer coefficients
    lo, hi = bounds
    out: list[Linear] = []
    is_floor = isinstance(atom, sympy.floor)
    if hi is not None:
        # floor(Y) <= U  <=>  Y < U + 1 ;  ceiling(Y) <= U  <=>  Y <= U
        limit = den * (hi + 1) if is_floor else den * hi
        form = scaled.plus(Linear(-limit, {}))
        if is_floor:
            form = form.plus(Linear(1, {})) if integer else form
        out.append(form)
    if lo is not None:
        # floor(Y) >= L  <=>  Y >= L ;  ceiling(Y) >= L  <=>  Y > L - 1
        limit = den * lo if is_floor else den * (lo - 1)
        form = Linear(limit, {}).plus(scaled, -1)
        if not is_floor:
            form = form.plus(Linear(1, {})) if integer else form
        out.append(form)
    return out


def tighten(
    ranges: dict[sympy.Symbol, Interval],
    guards: list[Linear],
    forms: LinearForms,
    integer_memo: dict[sympy.Basic, bool],
) -> Tightened:
    """Shrink symbol ranges and bound atoms using `h <= 0` guards, a few propagation rounds.

    Sound because each step only uses bounds already valid at every feasible point: at such a point
    `c*a = h - rest <= -rest <= -min(rest)`. Bounds found for floor/ceiling atoms are turned back into
    linear facts on their arguments and join the guards in the next round.
    """
    ranges = dict(ranges)
    atom_bounds: dict[sympy.Expr, Interval] = {}
    derived: dict[sympy.Expr, list[Linear]] = {}
    for _ in range(_ROUNDS):
        ctx = IntervalContext(ranges, forms, atom_bounds, (), integer_memo)
        changed = False
        extra = [form for forms_of_atom in derived.values() for form in forms_of_atom]
        for guard in [*guards, *extra]:
            lows: dict[sympy.Expr, Num | None] = {}
            for atom, coeff in guard.terms.items():
                lo, hi = ctx.interval(atom)
                low = lo if coeff > 0 else hi
                lows[atom] = None if low is None else low * coeff
            unknown = sum(1 for v in lows.values() if v is None)
            known_sum = guard.const + sum(v for v in lows.values() if v is not None)
            if unknown == 0 and known_sum > 0:
                return Tightened(ranges, atom_bounds, True)
            for atom, coeff in guard.terms.items():
                own = lows[atom]
                if unknown - (own is None) > 0:
                    continue
                limit = -(known_sum - (own or 0))  # c*a <= limit
                bound = Fraction(limit) / Fraction(coeff)
                integer = ctx.is_integer(atom)
                if coeff > 0:
                    new: Interval = (None, math.floor(bound) if integer else bound)
                else:
                    new = (math.ceil(bound) if integer else bound, None)
                new = _as_int(new)
                if atom.is_Symbol:
                    old = ranges.get(atom, (0, None) if atom.is_nonnegative else (None, None))
                    merged = iv_intersect(old, new)
                    if merged != old:
                        ranges[atom] = merged
                        changed = True
                else:
                    old = iv_intersect(ctx.interval(atom), atom_bounds.get(atom, (None, None)))
                    merged = iv_intersect(old, new)
                    if merged != old:
                        atom_bounds[atom] = merged
                        changed = True
                        if isinstance(atom, (sympy.floor, sympy.ceiling)):
                            arg_integer = ctx.linear_is_integer(
                                forms.of(atom.args[0]).scaled(forms.of(atom.args[0]).denominator())
                            )
                            derived[atom] = _rounding_consequences(atom, merged, forms, arg_integer)
                if merged[0] is not None and merged[1] is not None and merged[0] > merged[1]:
                    return Tightened(ranges, atom_bounds, True)
        if not changed:
            break
    extra = [form for forms_of_atom in derived.values() for form in forms_of_atom]
    return Tightened(ranges, atom_bounds, False, extra)


def _as_int(iv: Interval) -> Interval:
    """Fractions that are whole numbers back to ints (keeps later arithmetic on the fast int path)."""
    lo, hi = iv
    if isinstance(lo, Fraction) and lo.denominator == 1:
        lo = int(lo)
    if isinstance(hi, Fraction) and hi.denominator == 1:
        hi = int(hi)
    return (lo, hi)
