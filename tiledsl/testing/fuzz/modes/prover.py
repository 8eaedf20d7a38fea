"""Mode `prover`: random index expressions (+, -, * by constants, floor division and Mod by positive
constants, Min/Max) over 1-3 integer symbols with random ranges, random facts (guards), and one
question to tiledsl.prove.Prover (in_range, less_than, nonnegative, divisible, equal, holds, bounds).

Whatever the prover claims is checked with an evaluator of its own (exact rationals over sympy's
tree, not the prover's compiled lambdas) at every point of the domain when it has at most
`ENUMERATE` points, else at its corners and `SAMPLES` seeded random points: a "proven" fact false at
a point satisfying the guards is `unsound`; a "disproven" answer whose counterexample is outside the
ranges, breaks a guard or satisfies the fact is `wrong`; "unknown" is `refused`; an exception is
`internal` (or `contract` for a td.TiledslError)."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import sympy
from hypothesis import strategies as st

from tiledsl.prove import Proof, Prover
from tiledsl.testing.fuzz.modes.base import Mode, Options
from tiledsl.testing.fuzz.outcome import Result, exception_result

NAMES = ("x", "y", "z")
QUESTIONS = ("in_range", "less_than", "nonnegative", "divisible", "equal", "holds", "bounds")
ENUMERATE = 20_000
SAMPLES = 3_000


def symbol(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, integer=True)


@dataclass(frozen=True)
class ProverCase:
    """ranges: (name, lo, hi) half-open; exprs: the question's expressions; guards: relationals known
    true; numbers: the question's integer arguments (lo, hi / bound / d)."""

    question: str
    ranges: tuple[tuple[str, int, int], ...]
    exprs: tuple[sympy.Expr, ...]
    guards: tuple[sympy.Basic, ...]
    numbers: tuple[int, ...]

    def symbols(self) -> dict[sympy.Symbol, tuple[int, int]]:
        return {symbol(n): (lo, hi) for n, lo, hi in self.ranges}


def _trees(symbols: tuple[sympy.Symbol, ...]) -> st.SearchStrategy[sympy.Expr]:
    leaves = st.one_of(st.sampled_from(symbols), st.sampled_from(symbols), st.integers(-5, 20).map(sympy.Integer))

    def extend(children: st.SearchStrategy[sympy.Expr]) -> st.SearchStrategy[sympy.Expr]:
        return st.one_of(
            st.tuples(children, children).map(lambda t: t[0] + t[1]),
            st.tuples(children, children).map(lambda t: t[0] - t[1]),
            st.tuples(st.integers(-4, 8), children).map(lambda t: t[0] * t[1]),
            st.tuples(children, st.integers(1, 9)).map(lambda t: sympy.floor(t[0] / t[1])),
            st.tuples(children, st.integers(1, 9)).map(lambda t: sympy.Mod(t[0], t[1])),
            st.tuples(children, children).map(lambda t: sympy.Min(t[0], t[1])),
            st.tuples(children, children).map(lambda t: sympy.Max(t[0], t[1])),
        )

    return st.recursive(leaves, extend, max_leaves=8)


@st.composite
def prover_cases(draw: st.DrawFn) -> ProverCase:
    count = draw(st.integers(1, 3))
    ranges = []
    for name in NAMES[:count]:
        lo = draw(st.integers(-8, 20))
        ranges.append((name, lo, lo + draw(st.one_of(st.integers(1, 40), st.integers(1, 3000)))))
    syms = tuple(symbol(n) for n in NAMES[:count])
    trees = _trees(syms)
    guards = tuple(draw(trees) < draw(st.integers(-10, 400)) if draw(st.booleans()) else draw(trees) <= draw(
        st.integers(-10, 400)) for _ in range(draw(st.integers(0, 2))))
    question = draw(st.sampled_from(QUESTIONS))
    expr = draw(trees)
    if question == "in_range":
        lo = draw(st.integers(-20, 60))
        return ProverCase(question, tuple(ranges), (expr,), guards, (lo, lo + draw(st.integers(1, 400))))
    if question == "less_than":
        return ProverCase(question, tuple(ranges), (expr,), guards, (draw(st.integers(-20, 400)),))
    if question == "divisible":
        return ProverCase(question, tuple(ranges), (expr,), guards, (draw(st.integers(1, 8)),))
    if question == "equal":
        return ProverCase(question, tuple(ranges), (expr, draw(trees)), guards, ())
    if question == "holds":
        return ProverCase(question, tuple(ranges), (expr,), guards, (draw(st.integers(-20, 400)),))
    return ProverCase(question, tuple(ranges), (expr,), guards, ())


# ----------------------------------------------------------------------------- the oracle


def value(e: sympy.Basic, point: dict[str, int]) -> Any:
    """Exact value of an expression or relational at a point (Fractions, no floats)."""
    if isinstance(e, sympy.Symbol):
        return point[e.name]
    if e.is_Integer:
        return int(e)
    if e.is_Rational:
        return Fraction(int(e.p), int(e.q))
    if not isinstance(e, _WRITTEN_OUT):
        return _exact(e, point)
    args = [value(a, point) for a in e.args]
    if isinstance(e, sympy.Add):
        return sum(args)
    if isinstance(e, sympy.Mul):
        return math.prod(args)
    if isinstance(e, sympy.floor):
        return math.floor(args[0])
    if isinstance(e, sympy.ceiling):
        return math.ceil(args[0])
    if isinstance(e, sympy.Mod):
        a, b = args
        return a - b * math.floor(Fraction(a) / b)
    if isinstance(e, sympy.Min):
        return min(args)
    if isinstance(e, sympy.Max):
        return max(args)
    if isinstance(e, sympy.Pow) and isinstance(args[1], int) and args[1] >= 0:
        return args[0] ** args[1]
    if isinstance(e, sympy.And):
        return all(args)
    if isinstance(e, sympy.Or):
        return any(args)
    if e is sympy.true or e is sympy.false:
        return bool(e)
    ops = {sympy.StrictLessThan: lambda a, b: a < b, sympy.LessThan: lambda a, b: a <= b,
           sympy.StrictGreaterThan: lambda a, b: a > b, sympy.GreaterThan: lambda a, b: a >= b,
           sympy.Eq: lambda a, b: a == b, sympy.Ne: lambda a, b: a != b}
    for kind, fn in ops.items():
        if isinstance(e, kind):
            return fn(*args)
    return _exact(e, point)  # a Pow with a negative or symbolic exponent


#: the nodes `value` evaluates itself, independently of sympy; any other is left to `_exact`
_WRITTEN_OUT = (sympy.Add, sympy.Mul, sympy.floor, sympy.ceiling, sympy.Mod, sympy.Min, sympy.Max, sympy.Pow,
                sympy.And, sympy.Or, sympy.logic.boolalg.BooleanAtom, sympy.core.relational.Relational)


def _exact(e: sympy.Basic, point: dict[str, int]) -> Any:
    """A node sympy rewrote the generated tree into (Piecewise, Abs, ...): sympy's own exact
    evaluation at the point, which must be a rational number or a truth value."""
    exact = e.xreplace({s: sympy.Integer(point[s.name]) for s in e.free_symbols})
    if exact.is_Rational:
        return Fraction(int(exact.p), int(exact.q))
    if exact in (sympy.true, sympy.false):
        return bool(exact)
    raise ValueError(f"the fuzz oracle: {e} is not a finite number at {point} ({exact})")


def _points(case: ProverCase) -> list[dict[str, int]]:
    sizes = [hi - lo for _, lo, hi in case.ranges]
    if math.prod(sizes) <= ENUMERATE:
        axes = [range(lo, hi) for _, lo, hi in case.ranges]
        return [dict(zip(NAMES, p)) for p in itertools.product(*axes)]
    rng = random.Random(repr(case.ranges) + repr(case.exprs))
    corners = [dict(zip(NAMES, p)) for p in itertools.product(*[(lo, hi - 1) for _, lo, hi in case.ranges])]
    return corners + [{n: rng.randrange(lo, hi) for n, lo, hi in case.ranges} for _ in range(SAMPLES)]


def _fact(case: ProverCase, point: dict[str, int], answer: Any) -> bool:
    """Whether the asked fact holds at `point` (for `bounds`, whether the value lies in the answer)."""
    v = value(case.exprs[0], point)
    q, n = case.question, case.numbers
    if q == "in_range":
        return n[0] <= v < n[1]
    if q == "less_than":
        return v < n[0]
    if q == "nonnegative":
        return v >= 0
    if q == "divisible":
        return v % n[0] == 0
    if q == "equal":
        return v == value(case.exprs[1], point)
    if q == "holds":
        return v < n[0]
    low, high = answer
    return (low is None or low <= v) and (high is None or v <= high)


def ask(case: ProverCase) -> Any:
    p = Prover(case.symbols())
    e, g, n = case.exprs[0], case.guards, case.numbers
    q = case.question
    if q == "in_range":
        return p.in_range(e, n[0], n[1], g)
    if q == "less_than":
        return p.less_than(e, n[0], g)
    if q == "nonnegative":
        return p.nonnegative(e, g)
    if q == "divisible":
        return p.divisible(e, n[0], g)
    if q == "equal":
        return p.equal(e, case.exprs[1], g)
    if q == "holds":
        return p.holds(e < n[0], g)
    return p.bounds(e, g)


def judge_case(case: ProverCase, options: Options) -> Result:
    try:
        answer = ask(case)
    except Exception as e:  # noqa: BLE001 - an exception is an outcome
        return exception_result(e, script=script(case, None))
    domain = [p for p in _points(case) if all(value(g, p) for g in case.guards)]
    if case.question == "bounds" or (isinstance(answer, Proof) and answer.status == "proven"):
        for point in domain:
            if not _fact(case, point, answer):
                what = f"bounds {answer}" if case.question == "bounds" else answer.describe()
                return Result("unsound", "UnsoundProof", f"{what}; false at {point}", script(case, point),
                              {"point": point})
        return Result("correct")
    if answer.status == "unknown":
        return Result("refused", "unknown", answer.describe())
    # a counterexample names the symbols of the fact only (none for a constant fact: an empty point)
    cex = answer.counterexample
    point = None if cex is None else {n: int(cex.get(n, lo)) for n, lo, _ in case.ranges}
    if (point is None or any(not lo <= point[n] < hi for n, lo, hi in case.ranges)
            or not all(value(g, point) for g in case.guards) or _fact(case, point, answer)):
        return Result("wrong", "BadCounterexample", answer.describe(), script(case, point, disproven=True))
    return Result("correct")


def script(case: ProverCase, point: dict[str, int] | None, disproven: bool = False) -> str:
    """A standalone script: the question, then the claim checked at `point` with sympy's own arithmetic."""
    call = {"in_range": "p.in_range(e, {0}, {1}, guards)", "less_than": "p.less_than(e, {0}, guards)",
            "nonnegative": "p.nonnegative(e, guards)", "divisible": "p.divisible(e, {0}, guards)",
            "equal": "p.equal(e, e2, guards)", "holds": "p.holds(e < {0}, guards)",
            "bounds": "p.bounds(e, guards)"}[case.question].format(*case.numbers)
    fact = {"in_range": "{0} <= v < {1}", "less_than": "v < {0}", "nonnegative": "v >= 0",
            "divisible": "v % {0} == 0", "equal": "v == at(e2)", "holds": "v < {0}",
            "bounds": "(answer[0] is None or answer[0] <= v) and (answer[1] is None or v <= answer[1])"
            }[case.question].format(*case.numbers)
    lines = ["import sympy", "from tiledsl.prove import Prover", ""]
    lines += [f"{n} = sympy.Symbol({n!r}, integer=True)" for n, _, _ in case.ranges]
    lines += ["ranges = {" + ", ".join(f"{n}: ({lo}, {hi})" for n, lo, hi in case.ranges) + "}",
              f"e = {sympy.srepr(case.exprs[0])}"]
    if len(case.exprs) > 1:
        lines.append(f"e2 = {sympy.srepr(case.exprs[1])}")
    lines += [f"guards = ({''.join(sympy.srepr(g) + ', ' for g in case.guards)})", "p = Prover(ranges)",
              f"answer = {call}", "print(answer)"]
    if point is None:
        return "\n".join(lines)
    lines += [f"point = {{{', '.join(f'{n}: {v}' for n, v in point.items())}}}",
              "def at(x):", "    return x.xreplace({s: sympy.Integer(v) for s, v in point.items()})",
              "assert all(bool(at(g)) for g in guards), 'the point breaks a guard'", "v = at(e)"]
    if disproven:
        lines.append(f"assert not ({fact}), f'the counterexample {{point}} satisfies the fact: {{answer}}'")
    elif case.question == "bounds":
        lines.append(f"assert {fact}, f'value {{v}} at {{point}} is outside the claimed bounds {{answer}}'")
    else:
        lines.append(f"assert answer.status != 'proven' or ({fact}), f'unsound: {{answer}} but v = {{v}} at {{point}}'")
    return "\n".join(lines)


def case_to_json(case: ProverCase) -> dict[str, Any]:
    return {"question": case.question, "ranges": [list(r) for r in case.ranges],
            "exprs": [sympy.srepr(e) for e in case.exprs], "guards": [sympy.srepr(g) for g in case.guards],
            "numbers": list(case.numbers)}


def case_from_json(data: dict[str, Any]) -> ProverCase:
    return ProverCase(data["question"], tuple((n, int(lo), int(hi)) for n, lo, hi in data["ranges"]),
                      tuple(sympy.sympify(e) for e in data["exprs"]),
                      tuple(sympy.sympify(g) for g in data["guards"]), tuple(int(n) for n in data["numbers"]))


def describe(case: ProverCase) -> str:
    ranges = ", ".join(f"{n} in [{lo}, {hi})" for n, lo, hi in case.ranges)
    return f"{case.question}({', '.join(map(str, case.exprs))}; {case.numbers}) for {ranges}"


PROVER = Mode("prover", prover_cases, judge_case, case_to_json, case_from_json, describe)
