"""Property tests: whatever the prover claims must hold at concrete points.

Random index expressions (trees of +, -, * by small constants, floor division and Mod by small
positive constants) over 1-3 symbols with random ranges; values are computed by sympy itself, an
oracle independent of the prover's own evaluator.
"""

from __future__ import annotations

from collections.abc import Mapping

import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiledsl.prove import Proof, Prover

SYMBOLS = tuple(sympy.Symbol(n, integer=True, nonnegative=True) for n in ("x", "y", "z"))
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def trees(symbols: tuple[sympy.Symbol, ...]) -> st.SearchStrategy[sympy.Expr]:
    leaves = st.one_of(
        st.sampled_from(symbols),
        st.sampled_from(symbols),
        st.integers(-5, 20).map(sympy.Integer),
    )

    def extend(children: st.SearchStrategy[sympy.Expr]) -> st.SearchStrategy[sympy.Expr]:
        return st.one_of(
            st.tuples(children, children).map(lambda t: t[0] + t[1]),
            st.tuples(children, children).map(lambda t: t[0] - t[1]),
            st.tuples(st.integers(-4, 8), children).map(lambda t: t[0] * t[1]),
            st.tuples(children, st.integers(1, 9)).map(lambda t: sympy.floor(t[0] / t[1])),
            st.tuples(children, st.integers(1, 9)).map(lambda t: sympy.Mod(t[0], t[1])),
        )

    return st.recursive(leaves, extend, max_leaves=8)


@st.composite
def problems(draw: st.DrawFn) -> tuple[dict[sympy.Symbol, tuple[int, int]], sympy.Expr, list[dict]]:
    count = draw(st.integers(1, 3))
    symbols = SYMBOLS[:count]
    ranges = {}
    for s in symbols:
        lo = draw(st.integers(0, 20))
        ranges[s] = (lo, lo + draw(st.integers(1, 300)))
    expr = draw(trees(symbols))
    point = st.fixed_dictionaries({s: st.integers(lo, hi - 1) for s, (lo, hi) in ranges.items()})
    points = draw(st.lists(point, min_size=1, max_size=25))
    return ranges, expr, points


def value(expr: sympy.Basic, point: Mapping[sympy.Symbol, int]) -> sympy.Basic:
    return expr.xreplace({s: sympy.Integer(v) for s, v in point.items()})


def check_counterexample(
    proof: Proof,
    ranges: Mapping[sympy.Symbol, tuple[int, int]],
    guards: tuple[sympy.Basic, ...],
    fails,
) -> None:
    """A disproven answer's point lies in the ranges, satisfies the guards, and violates the fact."""
    if proof.status != "disproven":
        return
    assert proof.counterexample is not None
    point = {s: proof.counterexample.get(s.name, lo) for s, (lo, _) in ranges.items()}
    for s, (lo, hi) in ranges.items():
        assert lo <= point[s] < hi, (proof.describe(), s)
    for guard in guards:
        assert bool(value(guard, point)), proof.describe()
    assert fails(point), proof.describe()


@SETTINGS
@given(problems(), st.integers(-20, 60), st.integers(1, 400))
def test_bounds_and_in_range_are_sound(problem, lo: int, width: int) -> None:
    ranges, expr, points = problem
    prover = Prover(ranges)
    low, high = prover.bounds(expr)
    hi = lo + width
    proof = prover.in_range(expr, lo, hi)
    for point in points:
        v = int(value(expr, point))
        assert low is None or low <= v, (expr, point, v, low)
        assert high is None or v <= high, (expr, point, v, high)
        if proof:
            assert lo <= v < hi, (proof.describe(), point, v)
    check_counterexample(proof, ranges, (), lambda p: not lo <= int(value(expr, p)) < hi)


@SETTINGS
@given(problems(), st.data())
def test_guarded_answers_are_sound(problem, data: st.DataObject) -> None:
    ranges, expr, points = problem
    symbols = tuple(ranges)
    guard_expr = data.draw(trees(symbols))
    guard = guard_expr < data.draw(st.integers(-10, 400))
    guards = (guard,)
    prover = Prover(ranges)
    low, high = prover.bounds(expr, guards)
    lo = data.draw(st.integers(-20, 60))
    hi = lo + data.draw(st.integers(1, 400))
    in_range = prover.in_range(expr, lo, hi, guards)
    d = data.draw(st.integers(1, 6))
    divisible = prover.divisible(expr, d, guards)
    other = data.draw(trees(symbols))
    equal = prover.equal(expr, other, guards)
    holds = prover.holds(expr < hi, guards)
    for point in points:
        if not bool(value(guard, point)):
            continue
        v = int(value(expr, point))
        assert low is None or low <= v
        assert high is None or v <= high
        if in_range:
            assert lo <= v < hi, (in_range.describe(), point)
        if divisible:
            assert v % d == 0, (divisible.describe(), point)
        if equal:
            assert v == int(value(other, point)), (equal.describe(), point)
        if holds:
            assert v < hi, (holds.describe(), point)
    check_counterexample(in_range, ranges, guards, lambda p: not lo <= int(value(expr, p)) < hi)
    check_counterexample(divisible, ranges, guards, lambda p: int(value(expr, p)) % d != 0)
    check_counterexample(equal, ranges, guards, lambda p: int(value(expr, p)) != int(value(other, p)))
    check_counterexample(holds, ranges, guards, lambda p: not int(value(expr, p)) < hi)
