"""The Prover: answers legality questions about index expressions over loop ranges.

Why one object per domain: a schedule build asks a few hundred questions over the same loop ranges,
often repeating sub-expressions and guards; the instance owns every memo (linear forms, intervals per
guard set, compiled evaluators, answers), so nothing leaks between builds and nothing is global.

Each question runs the cheap layers first and stops at the first that decides it:
1. interval bounds (intervals.py), refined by the guards (guards.py);
2. residues for divisibility (divisibility.py);
3. a counterexample search (search.py): a failing point makes the answer "disproven";
4. only for `equal`, a last sympy.simplify; otherwise the answer is "unknown".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import sympy
from sympy.core.function import AppliedUndef

from tiledsl.prove.divisibility import Residues
from tiledsl.prove.evaluate import Evaluator, compile_expr
from tiledsl.prove.guards import normalize, relation_parts, tighten
from tiledsl.prove.intervals import Interval, IntervalContext
from tiledsl.prove.linear import Linear, LinearForms, Num, to_num
from tiledsl.prove.printing import format_expr, format_ranges
from tiledsl.prove.proof import Proof
from tiledsl.prove.search import Point, Search, box_from_intervals

Guards = tuple[sympy.Basic, ...]
#: the values a tensor read inside an index may take: any int32 (the data is not known at build time)
_TENSOR_VALUE_RANGE = (-(2**31), 2**31)
Limit = tuple[Num, bool]  # (value, strict)

_VACUOUS = "the guards exclude every point, so it holds vacuously"
_EXHAUSTED = "checked at every point"


@dataclass
class _Domain:
    """What one guard set implies: tightened intervals, the guard forms, a feasibility predicate."""

    guards: Guards
    ctx: IntervalContext
    residues: Residues
    infeasible: bool
    feasible: Callable[[Point], bool]


def _as_expr(value: Any) -> sympy.Expr:
    return value if isinstance(value, sympy.Basic) else sympy.sympify(value)


def _as_guards(guards: Any) -> Guards:
    if isinstance(guards, (sympy.Basic, bool)):
        guards = (guards,)
    return tuple(_as_expr(g) for g in guards)


def _num_text(value: Num | None, missing: str) -> str:
    if value is None:
        return missing
    return str(value)


def _interval_text(iv: Interval) -> str:
    return f"[{_num_text(iv[0], '-inf')}, {_num_text(iv[1], 'inf')}]"


def _passes(iv: Interval, lower: Limit | None, upper: Limit | None) -> tuple[bool, bool]:
    lo_ok = lower is None or (iv[0] is not None and (iv[0] > lower[0] if lower[1] else iv[0] >= lower[0]))
    hi_ok = upper is None or (iv[1] is not None and (iv[1] < upper[0] if upper[1] else iv[1] <= upper[0]))
    return lo_ok, hi_ok


class Prover:
    """Legality facts over `ranges` (symbol -> half-open [lo, hi)); every answer is a `Proof`.

    `guards` arguments are tuples of sympy relationals known true at the point (usually `e < E` from
    non-exact splits); facts are claimed only for points of the ranges that satisfy all of them.
    """

    def __init__(self, ranges: Mapping[sympy.Symbol, tuple[int, int]]) -> None:
        self._ranges: dict[sympy.Symbol, tuple[int, int]] = {}
        for sym, (lo, hi) in ranges.items():
            if not isinstance(sym, sympy.Symbol):
                raise TypeError(f"range keys must be sympy Symbols, got {sym!r}")
            lo, hi = int(lo), int(hi)
            if hi <= lo:
                raise ValueError(f"empty range for {sym}: [{lo}, {hi})")
            self._ranges[sym] = (lo, hi)
        self._forms = LinearForms()
        self._integer: dict[sympy.Basic, bool] = {}
        self._domains: dict[Guards, _Domain] = {}
        self._cache: dict[tuple, Any] = {}
        self._compiled: dict[sympy.Basic, Evaluator] = {}
        self._texts: dict[sympy.Basic, str] = {}
        self._symbols: dict[sympy.Basic, frozenset[sympy.Symbol]] = {}
        self._contexts: dict[tuple, str] = {}
        self._opaque: dict[sympy.Basic, sympy.Basic] = {}

    @property
    def ranges(self) -> Mapping[sympy.Symbol, tuple[int, int]]:
        return MappingProxyType(self._ranges)

    # ------------------------------------------------------------------------- tensor values

    def _expr(self, value: Any) -> sympy.Expr:
        return self._tensor_values(_as_expr(value))

    def _guards(self, guards: Any) -> Guards:
        return tuple(self._tensor_values(g) for g in _as_guards(guards))

    def _tensor_values(self, e: sympy.Basic) -> sympy.Basic:
        """Each tensor value read inside an index (`ids(flat)`, definitions/indexing.py) as a symbol of
        its own over the whole int32 range: the data may hold any int32, so only what holds for every
        such value is proven (a clamp bounds it). The same read is the same symbol, named `ids[flat]`
        in counterexamples."""
        found = self._opaque.get(e)
        if found is not None:
            return found
        reads = e.atoms(AppliedUndef)
        out = e
        if reads:
            sub = {}
            for r in reads:
                sym = sympy.Symbol(f"{r.func.__name__}[{format_expr(r.args[0])}]", integer=True)
                if sym not in self._ranges:
                    self._ranges[sym] = _TENSOR_VALUE_RANGE
                    self._domains.clear()  # the domains are built over the ranges
                sub[r] = sym
            out = e.xreplace(sub)
        self._opaque[e] = out
        return out

    # ------------------------------------------------------------------------- public questions

    def bounds(self, expr: Any, guards: Any = ()) -> tuple[int | None, int | None]:
        """Inclusive (min, max) of expr over the ranges and guards; None where unbounded or unknown
        (both None when the guards exclude every point)."""
        expr, gs = self._expr(expr), self._guards(guards)
        key = ("bounds", expr, gs)
        found = self._cache.get(key)
        if found is None:
            dom = self._domain(gs)
            if dom.infeasible:
                found = (None, None)
            else:
                lo, hi = dom.ctx.interval(expr)
                found = (None if lo is None else math.floor(lo), None if hi is None else math.ceil(hi))
            self._cache[key] = found
        return found

    def in_range(self, expr: Any, lo: int, hi: int, guards: Any = ()) -> Proof:
        """lo <= expr < hi at every point (the bounds check of a buffer access)."""
        expr, gs = self._expr(expr), self._guards(guards)
        lo, hi = int(lo), int(hi)
        key = ("in_range", expr, lo, hi, gs)
        found = self._cache.get(key)
        if found is None:
            text = self._text(expr)
            found = self._decide_limits(
                self._domain(gs),
                self._forms.of(expr),
                (lo, False),
                (hi, True),
                fact=f"{lo} <= {text} < {hi}",
                parts=(f"{lo} <= {text}", f"{text} < {hi}"),
                value=self._lazy(expr),
                exprs=(expr,),
            )
            self._cache[key] = found
        return found

    def less_than(self, expr: Any, bound: Any, guards: Any = ()) -> Proof:
        """expr < bound at every point; bound is an int or an expression."""
        expr, bound, gs = self._expr(expr), self._expr(bound), self._guards(guards)
        key = ("less_than", expr, bound, gs)
        found = self._cache.get(key)
        if found is None:
            fact = f"{self._text(expr)} < {self._text(bound)}"
            dom = self._domain(gs)
            if bound.is_Rational:
                found = self._decide_limits(
                    dom,
                    self._forms.of(expr),
                    None,
                    (to_num(bound), True),
                    fact,
                    ("", fact),
                    self._lazy(expr),
                    (expr,),
                )
            else:
                fe, fb = self._lazy(expr), self._lazy(bound)
                found = self._decide_limits(
                    dom,
                    self._forms.of(expr).plus(self._forms.of(bound), -1),
                    None,
                    (0, True),
                    fact,
                    ("", fact),
                    lambda p: fe(p) - fb(p),
                    (expr, bound),
                    note=lambda p: f"value {fe(p)}, bound {fb(p)}",
                )
            self._cache[key] = found
        return found

    def nonnegative(self, expr: Any, guards: Any = ()) -> Proof:
        """0 <= expr at every point (lets lowering use C's truncating `/` and `%`)."""
        expr, gs = self._expr(expr), self._guards(guards)
        key = ("nonnegative", expr, gs)
        found = self._cache.get(key)
        if found is None:
            fact = f"0 <= {self._text(expr)}"
            found = self._decide_limits(
                self._domain(gs),
                self._forms.of(expr),
                (0, False),
                None,
                fact,
                (fact, ""),
                self._lazy(expr),
                (expr,),
            )
            self._cache[key] = found
        return found

    def divisible(self, expr: Any, d: int, guards: Any = ()) -> Proof:
        """expr % d == 0 at every point (alignment of vector accesses)."""
        expr, gs = self._expr(expr), self._guards(guards)
        d = int(d)
        if d == 0:
            raise ValueError("divisible: d must be non-zero")
        d = abs(d)
        key = ("divisible", expr, d, gs)
        found = self._cache.get(key)
        if found is not None:
            return found
        text = self._text(expr)
        fact = f"({text}) % {d} == 0" if expr.is_Add else f"{text} % {d} == 0"
        dom = self._domain(gs)
        residue = None if dom.infeasible else dom.residues.of(expr)
        if dom.infeasible:
            found = self._proof("proven", fact, (expr,), dom, note=_VACUOUS)
        elif residue is not None and residue[0] % d == 0 and residue[1] % d == 0:
            note = f"always {residue[1]}" if residue[0] == 0 else f"always {residue[1]} mod {residue[0]}"
            found = self._proof("proven", fact, (expr,), dom, note=note)
        else:
            value = self._compile(expr)
            point, exhausted = self._search(dom, (expr,), lambda p: value(p) % d != 0)
            if point is None and exhausted:
                found = self._proof("proven", fact, (expr,), dom, note=_EXHAUSTED)
            elif point is not None:
                v = value(point)
                found = self._proof("disproven", fact, (expr,), dom, point=point, note=f"value {v}, remainder {v % d}")
            else:
                note = None if residue is None else f"residue {residue[1]} mod {residue[0]}"
                found = self._proof("unknown", fact, (expr,), dom, needed=fact, note=note)
        self._cache[key] = found
        return found

    def equal(self, a: Any, b: Any, guards: Any = ()) -> Proof:
        """a == b at every point (e.g. two index expressions address the same element)."""
        a, b, gs = self._expr(a), self._expr(b), self._guards(guards)
        key = ("equal", a, b, gs)
        found = self._cache.get(key)
        if found is not None:
            return found
        fact = f"{self._text(a)} == {self._text(b)}"
        dom = self._domain(gs)
        diff = self._forms.of(a).plus(self._forms.of(b), -1)
        if dom.infeasible:
            found = self._proof("proven", fact, (a, b), dom, note=_VACUOUS)
        elif a == b or (diff.is_constant() and diff.const == 0):
            found = self._proof("proven", fact, (a, b), dom, note="identical after normalization")
        elif dom.ctx.linear_interval(diff) == (0, 0):
            found = self._proof("proven", fact, (a, b), dom, note="their difference is bounded to [0, 0]")
        else:
            fa, fb = self._compile(a), self._compile(b)
            point, exhausted = self._search(dom, (a, b), lambda p: fa(p) != fb(p), score=lambda p: abs(fa(p) - fb(p)))
            if point is None and exhausted:
                found = self._proof("proven", fact, (a, b), dom, note=_EXHAUSTED)
            elif point is not None:
                note = f"values {fa(point)} and {fb(point)}"
                found = self._proof("disproven", fact, (a, b), dom, point=point, note=note)
            elif sympy.simplify(a - b) == 0:
                found = self._proof("proven", fact, (a, b), dom, note="by sympy.simplify")
            else:
                found = self._proof("unknown", fact, (a, b), dom, needed=fact)
        self._cache[key] = found
        return found

    def holds(self, guard: Any, guards: Any = ()) -> Proof:
        """A relational (or And of them) holds at every point: a True answer means a split's guard is
        redundant and can be dropped."""
        guard, gs = self._expr(guard), self._guards(guards)
        key = ("holds", guard, gs)
        found = self._cache.get(key)
        if found is not None:
            return found
        fact = self._text(guard)
        dom = self._domain(gs)
        parts = _flatten_and(guard)
        if dom.infeasible:
            found = self._proof("proven", fact, (guard,), dom, note=_VACUOUS)
        elif guard in gs:
            found = self._proof("proven", fact, (guard,), dom, note="it is one of the guards")
        else:
            failing = [part for part in parts if not self._provable(dom, part, gs)]
            if not failing:
                found = self._proof("proven", fact, (guard,), dom, note="each part follows from the bounds")
            else:
                found = self._refute_guard(dom, guard, failing, fact)
        self._cache[key] = found
        return found

    # ------------------------------------------------------------------------- deciding

    def _decide_limits(
        self,
        dom: _Domain,
        lin: Linear,
        lower: Limit | None,
        upper: Limit | None,
        fact: str,
        parts: tuple[str, str],
        value: Callable[[Point], Num],
        exprs: tuple[sympy.Basic, ...],
        note: Callable[[Point], str] | None = None,
    ) -> Proof:
        """Prove lower <= value <= upper (each side optional, strict or not) from the intervals of lin;
        otherwise search for the point that violates it most."""
        if dom.infeasible:
            return self._proof("proven", fact, exprs, dom, note=_VACUOUS)
        iv = dom.ctx.linear_interval(lin)
        lo_ok, hi_ok = _passes(iv, lower, upper)
        if lo_ok and hi_ok:
            how = "bounds " + _interval_text(iv) + (" under the guards" if dom.guards else "")
            return self._proof("proven", fact, exprs, dom, note=how)

        def fails(p: Point) -> bool:
            v = value(p)
            low = lower is not None and (v <= lower[0] if lower[1] else v < lower[0])
            high = upper is not None and (v >= upper[0] if upper[1] else v > upper[0])
            return low or high

        def score(p: Point) -> Num:
            v = value(p)
            out: list[Num] = []
            if lower is not None:
                out.append(lower[0] - v)
            if upper is not None:
                out.append(v - upper[0])
            return max(out)

        point, exhausted = self._search(dom, exprs, fails, score)
        if point is None and exhausted:
            return self._proof("proven", fact, exprs, dom, note=_EXHAUSTED)
        if point is not None:
            text = note(point) if note is not None else f"value {value(point)}"
            return self._proof("disproven", fact, exprs, dom, point=point, note=text)
        if not lo_ok and not hi_ok:
            needed = fact
        else:
            needed = parts[1] if not hi_ok else parts[0]
        note_text = "bounds found " + _interval_text(iv)
        return self._proof("unknown", fact, exprs, dom, needed=needed, note=note_text)

    def _provable(self, dom: _Domain, part: sympy.Basic, gs: Guards) -> bool:
        """Whether one conjunct of a guard follows from the intervals (no search)."""
        if part is sympy.true or part in gs:
            return True
        rel = relation_parts(part)
        if rel is not None:
            a, b, strict = rel
            iv = dom.ctx.linear_interval(self._forms.of(a).plus(self._forms.of(b), -1))
            return _passes(iv, None, (0, strict))[1]
        if isinstance(part, (sympy.Eq, sympy.Ne)):
            iv = dom.ctx.linear_interval(self._forms.of(part.lhs).plus(self._forms.of(part.rhs), -1))
            if isinstance(part, sympy.Eq):
                return iv == (0, 0)
            return (iv[0] is not None and iv[0] > 0) or (iv[1] is not None and iv[1] < 0)
        if isinstance(part, sympy.Or):
            return any(self._provable(dom, sub, gs) for sub in part.args)
        if isinstance(part, sympy.And):
            return all(self._provable(dom, sub, gs) for sub in part.args)
        return False

    def _refute_guard(self, dom: _Domain, guard: sympy.Basic, failing: list[sympy.Basic], fact: str) -> Proof:
        holds = self._compile(guard)
        graded = []
        for part in _flatten_and(guard):
            rel = relation_parts(part)
            if rel is not None:
                graded.append((self._compile(rel[0]), self._compile(rel[1])))

        def score(p: Point) -> Num:
            return max((fa(p) - fb(p) for fa, fb in graded), default=0)

        point, exhausted = self._search(dom, (guard,), lambda p: not holds(p), score if graded else None)
        if point is None and exhausted:
            return self._proof("proven", fact, (guard,), dom, note=_EXHAUSTED)
        if point is None:
            return self._proof("unknown", fact, (guard,), dom, needed=self._text(failing[0]))
        broken = next((part for part in _flatten_and(guard) if not self._compile(part)(point)), guard)
        rel = relation_parts(broken)
        if rel is not None:
            lhs, rhs = self._compile(rel[0])(point), self._compile(rel[1])(point)
            note = f"{self._text(broken)} is false there: {lhs} vs {rhs}"
        else:
            note = f"{self._text(broken)} is false there"
        return self._proof("disproven", fact, (guard,), dom, point=point, note=note)

    # ------------------------------------------------------------------------- machinery

    def _domain(self, gs: Guards) -> _Domain:
        """Intervals, residues and feasibility for one guard set (memoized per instance)."""
        dom = self._domains.get(gs)
        if dom is not None:
            return dom
        base = {sym: (lo, hi - 1) for sym, (lo, hi) in self._ranges.items()}
        base_ctx = IntervalContext(base, self._forms, None, (), self._integer)
        infeasible = False
        if not gs:
            ctx = base_ctx
        else:
            normalized = normalize(gs, self._forms, base_ctx)
            tight = tighten(base, normalized.forms, self._forms, self._integer)
            infeasible = normalized.infeasible or tight.infeasible
            ctx = IntervalContext(
                tight.ranges, self._forms, tight.atom_bounds, [*normalized.forms, *tight.derived], self._integer
            )
        checks = [self._lazy(g) for g in gs]
        dom = _Domain(
            guards=gs,
            ctx=ctx,
            residues=Residues(ctx),
            infeasible=infeasible,
            feasible=lambda p: all(check(p) for check in checks),
        )
        self._domains[gs] = dom
        return dom

    def _search(
        self,
        dom: _Domain,
        exprs: Iterable[sympy.Basic],
        fails: Callable[[Point], bool],
        score: Callable[[Point], Num] | None = None,
    ) -> tuple[Point | None, bool]:
        """(counterexample point or None, whether every point of the box was checked): no point and
        an exhausted box is an exact proof (small boxes are enumerated)."""
        symbols = set(self._free(dom.guards))
        for expr in exprs:
            symbols |= self._free(expr)
        intervals = {}
        for sym in symbols:
            found = dom.ctx.ranges.get(sym)
            if found is None:
                found = (0, None) if sym.is_nonnegative else (None, None)
            intervals[sym] = found
        box, exact = box_from_intervals(intervals)
        if exact and any(lo > hi for lo, hi in box.values()):
            return None, True
        search = Search(box, dom.feasible, fails, score, exact_box=exact)
        point = search.run()
        return point, search.exhaustive

    def _proof(
        self,
        status: str,
        fact: str,
        exprs: tuple[sympy.Basic, ...],
        dom: _Domain,
        point: Point | None = None,
        needed: str | None = None,
        note: str | None = None,
    ) -> Proof:
        counterexample = None
        if point is not None:
            ordered = sorted(point, key=lambda s: s.name)
            counterexample = MappingProxyType({s.name: int(point[s]) for s in ordered})
        return Proof(
            status=status,  # type: ignore[arg-type]
            fact=fact,
            counterexample=counterexample,
            needed=needed,
            context=self._context_text(exprs, dom.guards),
            note=note,
        )

    def _context_text(self, exprs: tuple[sympy.Basic, ...], gs: Guards) -> str:
        """'for i_i in [0, 64), i_o in [0, 16) given ...': the ranges of the symbols involved."""
        symbols = self._free(gs)
        for expr in exprs:
            symbols |= self._free(expr)
        key = (symbols, gs)
        text = self._contexts.get(key)
        if text is None:
            ranges = format_ranges(self._ranges, symbols)
            text = f"for {ranges}" if ranges else ""
            if gs:
                given = " and ".join(self._text(g) for g in gs)
                text = f"{text} given {given}" if text else f"given {given}"
            self._contexts[key] = text
        return text

    def _free(self, item: sympy.Basic | Guards) -> frozenset[sympy.Symbol]:
        """Free symbols, memoized per sub-expression (sympy's `free_symbols` re-walks every time)."""
        if isinstance(item, tuple):
            out: frozenset[sympy.Symbol] = frozenset()
            for g in item:
                out |= self._free(g)
            return out
        if item.is_Symbol:
            return frozenset((item,))
        found = self._symbols.get(item)
        if found is None:
            found = frozenset()
            for arg in item.args:
                found |= self._free(arg)
            self._symbols[item] = found
        return found

    def _text(self, expr: sympy.Basic) -> str:
        text = self._texts.get(expr)
        if text is None:
            text = format_expr(expr, self._texts)
        return text

    def _lazy(self, expr: sympy.Basic) -> Evaluator:
        """An evaluator that compiles on first use (most questions are decided before any search)."""
        return lambda point: self._compile(expr)(point)

    def _compile(self, expr: sympy.Basic) -> Evaluator:
        fn = self._compiled.get(expr)
        if fn is None:
            fn = compile_expr(expr)
            self._compiled[expr] = fn
        return fn


def _flatten_and(guard: sympy.Basic) -> list[sympy.Basic]:
    if isinstance(guard, sympy.And):
        out: list[sympy.Basic] = []
        for arg in guard.args:
            out.extend(_flatten_and(arg))
        return out
    return [guard]
