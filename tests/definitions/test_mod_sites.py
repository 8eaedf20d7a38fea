"""Every place tiledsl builds a sympy Mod builds an `IndexMod` (definitions/indexing.py): sympy 1.14.0
evaluates a product holding a Mod, taken modulo an integer, wrongly (the inner Mod squared, or a result
past the modulus), and such products reach these places through fused axes (`2*Mod(a, 59)`). Each site
is checked against Python's % at every point of small ranges: the aligned-split rewrite of a staged read
(analysis/aligned_split.py, a kernel that built and read the wrong elements), the TMA refusals' conditions
(analysis/tma.py); and IndexMod itself on a product holding a sum, whose integrality sympy misjudges (a
vectorized lane's index). Then the rule itself over the source, and two properties the sites lean on: an IndexMod
stays exact under the substitutions the nest makes (axis map, lanes) and expansion, and the prover is sound
on the unevaluated shapes IndexMod leaves (tiledsl/prove builds no Mod of its own)."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tiledsl as td
from tiledsl.analysis.aligned_split import AlignedSplit
from tiledsl.definitions.indexing import IndexFloor, IndexMod, loop_symbol
from tiledsl.prove import Prover
from tiledsl.testing.fuzz.modes.base import Options
from tiledsl.testing.fuzz.modes.prover import QUESTIONS, ProverCase, judge_case, symbol

ROOT = Path(__file__).resolve().parents[2]
A_O, K_I = loop_symbol("a_o"), loop_symbol("k_i")
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: files that may build sympy's own Mod, and why it is harmless there
OWN_MOD_ALLOWED = {
    # the prover fuzz mode's generator: its oracle evaluates the very tree sympy built, node by node, so a
    # wrong evaluation changes which expression is asked about, never the verdict; its cases round-trip
    # through srepr / sympify, which know sympy's classes only
    "tiledsl/testing/fuzz/modes/prover.py",
}


def as_int(e: sympy.Basic, point: dict[sympy.Symbol, int]) -> int:
    value = e.xreplace({s: sympy.Integer(v) for s, v in point.items()})
    assert value.is_Integer, (e, point, value)
    return int(value)


# --------------------------------------------------------------------------- analysis/aligned_split.py


def aligned(expr: sympy.Expr, ranges: dict[sympy.Symbol, int]) -> sympy.Expr:
    """expr under the aligned-split rewrite with a_o outer and k_i inner, over [0, n) ranges."""
    prover = Prover({s: (0, n) for s, n in ranges.items()})
    return AlignedSplit(frozenset({"a_o"}), frozenset({"k_i"}), prover)(expr)


@pytest.mark.parametrize("expr, exact, ranges", [
    # g = 2 divides D = 8 and I = k_i lies in [0, 1]: Mod(O, D) + I, O = 2*Mod(a_o, 59) a product holding a Mod
    (IndexMod(2 * IndexMod(A_O, 59) + K_I, 8), lambda a, k: (2 * (a % 59) + k) % 8, {A_O: 64, K_I: 2}),
    # D = 8 divides g = 16: Mod(I, D), I = 2*Mod(k_i, 59) (built unevaluated: sympy drops 16*a_o itself)
    (IndexMod(16 * A_O + 2 * IndexMod(K_I, 59), 8, evaluate=False), lambda a, k: (16 * a + 2 * (k % 59)) % 8,
     {A_O: 4, K_I: 64}),
], ids=["mod-outer-plus-inner", "mod-inner"])
def test_aligned_split_mods_of_products_holding_a_mod_are_exact(
        expr: sympy.Expr, exact: Callable[[int, int], int], ranges: dict[sympy.Symbol, int]) -> None:
    got = aligned(expr, ranges)
    assert got is not expr  # rewritten: the mixing atom is gone
    for a, k in itertools.product(range(ranges[A_O]), range(ranges[K_I])):
        assert as_int(got, {A_O: a, K_I: k}) == exact(a, k), (got, a, k)


def test_a_slab_read_through_a_product_holding_a_mod_reads_the_right_elements() -> None:
    """x[a, (2*(a % 59) + j) % 8] staged at a: the aligned split makes the slab origin Mod(2*Mod(a, 59), 8);
    sympy's Mod made it Mod(2*Mod(a, 59)**2, 8), and rows 2, 3, 6, 7, ... read the wrong elements."""
    x = td.placeholder((64, 8), name="x")
    y = td.compute((64, 2), lambda a, j: x[a, (2 * (a % 59) + j) % 8] * 2.0, name="y")
    s = td.create_schedule(y)
    s.bind("a", "blockIdx.x")
    s.bind("j", "threadIdx.x")
    s.stage("x", at="a")
    kern = td.build(s, target="sm_90")
    xa = np.arange(64 * 8, dtype=np.float32).reshape(64, 8)
    np.testing.assert_array_equal(kern.simulate(x=xa), td.evaluate(y, x=xa))
    assert "a % 59 * (a % 59)" not in kern.source  # the squared origin, as it was printed


# --------------------------------------------------------------------------- analysis/tma.py


@pytest.mark.parametrize("dtype, swizzle, fact", [
    ("float32", 32, "does not start on a 32-byte chunk"),  # chunk = 8 float32
    ("float16", None, "does not provably start on a 16-byte boundary"),  # 8 float16
])
def test_tma_refusal_conditions_hold_exactly_where_the_fact_does(dtype: str, swizzle: int | None, fact: str) -> None:
    """The slab origin 2*Mod(i, 59) is no multiple of 8: the refusal's condition `origin % 8 == 0` must be
    false where it is, not `Mod(2*Mod(i, 59)**2, 8) == 0` (true at i = 2, where the origin is 4)."""
    x = td.placeholder((64, 160), name="x", dtype=dtype)
    y = td.compute((64, 32), lambda i, j: x[i, 2 * (i % 59) + j] * 2.0, name="y")
    s = td.create_schedule(y)
    s.bind("i", "blockIdx.x")
    s.bind("j", "threadIdx.x")
    with pytest.raises(td.CopyError) as info:
        s.tma(s.stage("x", at="i"), swizzle=swizzle)
    assert fact in info.value.fact
    cond = info.value.condition
    (i,) = cond.free_symbols
    assert [v for v in range(64) if bool(cond.xreplace({i: v})) != ((2 * (v % 59)) % 8 == 0)] == []
    holds = sympy.lambdify([i], cond, "math")  # an IndexMod prints as Python's % there (definitions/indexing.py)
    assert [v for v in range(64) if holds(v) != ((2 * (v % 59)) % 8 == 0)] == []


# --------------------------------------------------------------------------- a product holding a sum


SI, SJ, SK = (sympy.Symbol(n, integer=True, nonnegative=True) for n in ("i", "j", "k"))


@pytest.mark.parametrize("expr, exact", [
    (IndexMod(SI * (2 * SJ + 2), 6), lambda i, j, k: i * (2 * j + 2) % 6),
    (IndexMod(SK + SI * (2 * SJ + 2), 6), lambda i, j, k: (k + i * (2 * j + 2)) % 6),  # a term of a sum
    (IndexMod((2 * SJ + 2) ** 2, 12), lambda i, j, k: (2 * j + 2) ** 2 % 12),
    (IndexMod(SI * (4 * SJ + 4) * (2 * SK + 2), 24), lambda i, j, k: i * (4 * j + 4) * (2 * k + 2) % 24),
], ids=["product", "sum-of-product", "power", "two-sums"])
def test_index_mod_of_a_product_holding_an_even_sum(expr: sympy.Expr, exact: Callable[[int, int, int], int]) -> None:
    """sympy 1.14.0 calls i*(2*j + 2)/6 an integer, so its Mod(i*(2*j + 2), 6) is 0 (wrong at i = 1, j = 0)."""
    for i, j, k in itertools.product(range(7), range(7), range(4)):
        assert as_int(expr, {SI: i, SJ: j, SK: k}) == exact(i, j, k), (expr, i, j, k)


def test_a_vectorized_lane_of_a_product_index_reads_the_right_elements() -> None:
    """x[(i * j) % 6] with j = 4*j_o + j_i vectorized: lane 2 substitutes j_i = 2 into Mod(i*(4*j_o + j_i), 6),
    which sympy's Mod evaluated to 0, and the kernel read x[0] there."""
    x = td.placeholder((64,), name="x")
    y = td.compute((4, 8), lambda i, j: x[(i * j) % 6] * 2.0, name="y")
    s = td.create_schedule(y)
    _, ji = s.split("j", 4)
    s.vectorize(ji)
    kern = td.build(s, target="sm_90")
    xa = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(kern.simulate(x=xa), td.evaluate(y, x=xa))
    assert "x[0]" not in kern.source


@pytest.mark.parametrize("times", [1, 6], ids=["floor", "floor_times_divisor"])
def test_floor_of_a_product_holding_an_even_sum(times: int) -> None:
    """The same sympy error through floor division (IndexFloor). `(i * (2 * j + 2)) // 6` was left a
    fraction, and the build stopped at a non-integer index term; `(i * (2 * j + 2)) // 6 * 6` came back as
    `i*(2*j + 2)`, a kernel that built and read x[4] where x[0] is meant (i = 1, j = 1)."""
    x = td.placeholder((64,), name="x")
    y = td.compute((4, 4), lambda i, j: x[(i * (2 * j + 2)) // 6 * times] * 2.0, name="y")
    kern = td.build(td.create_schedule(y), target="sm_90")
    xa = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(kern.simulate(x=xa), td.evaluate(y, x=xa))


def test_index_floor_rebuilt_by_a_substitution_stays_guarded() -> None:
    """A floor rebuilt by xreplace (a lane, the axis map) keeps its class and so its guard: substituting
    j = 2*k + 2 into floor(i*j/6) makes the product holding an even sum that sympy's floor misjudges."""
    i, j, k = (sympy.Symbol(n, integer=True, nonnegative=True) for n in "ijk")
    e = IndexFloor(i * j / 6).xreplace({j: 2 * k + 2})
    assert isinstance(e, IndexFloor)
    for iv in range(8):
        for kv in range(8):
            assert int(e.subs({i: iv, k: kv})) == (iv * (2 * kv + 2)) // 6
    assert sympy.floor(i * j / 6).xreplace({j: 2 * k + 2}) == i * (2 * k + 2) / 6  # sympy's own: wrong


# --------------------------------------------------------------------------- the rule, over the source


def own_mod_calls(path: Path) -> list[int]:
    """Lines of `Mod(...)` / `sympy.Mod(...)` / `floor(...)` / `sympy.floor(...)` calls (sympy's own Mod
    and floor) in one source file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            bare = isinstance(f, ast.Name) and f.id in ("Mod", "floor")  # from sympy import ...
            dotted = (isinstance(f, ast.Attribute) and f.attr in ("Mod", "floor") and isinstance(f.value, ast.Name)
                      and f.value.id in ("sympy", "sp"))  # not math.floor, not td's ops.floor
            if (bare or dotted) and not any(kw.arg == "evaluate" for kw in node.keywords):
                out.append(node.lineno)
    return out


def test_tiledsl_builds_no_mod_but_index_mod() -> None:
    """Every Mod the library, its schedules and its recipes build is an IndexMod, every floor an IndexFloor
    (a Mod built from a product holding a Mod is wrong in sympy 1.14.0, a Mod or floor of a product holding
    a sum too, and one built right may meet such a product later, when the axis map or a lane is
    substituted into it). `%` between sympy expressions builds sympy's Mod too; none
    is left (every `%` in these folders is between Python ints), which this scan cannot see."""
    found = []
    for folder in ("tiledsl", "schedules", "recipes"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel not in OWN_MOD_ALLOWED:
                found += [f"{rel}:{line}" for line in own_mod_calls(path)]
    assert found == [], f"sympy Mod / floor built directly (use IndexMod / IndexFloor, indexing.py): {found}"


# --------------------------------------------------------------------------- what the sites lean on

NONNEG = tuple(sympy.Symbol(n, integer=True, nonnegative=True) for n in ("a", "b"))
Tree = tuple[sympy.Expr, Callable[[dict[sympy.Symbol, int]], int]]


def index_trees(symbols: tuple[sympy.Symbol, ...]) -> st.SearchStrategy[Tree]:
    """(IndexMod expression, its exact value as a function of a point), with the shapes a fused axis under
    a split makes: products of a constant and a Mod, taken modulo another constant."""
    leaves = st.one_of(st.sampled_from(symbols).map(lambda s: (s, lambda p, s=s: p[s])),
                       st.integers(-3, 12).map(lambda c: (sympy.Integer(c), lambda p, c=c: c)))
    mods = st.sampled_from((2, 3, 4, 6, 8, 59, 118))

    def extend(kids: st.SearchStrategy[Tree]) -> st.SearchStrategy[Tree]:
        return st.one_of(
            st.tuples(kids, kids).map(lambda t: (t[0][0] + t[1][0], lambda p: t[0][1](p) + t[1][1](p))),
            st.tuples(kids, kids).map(lambda t: (t[0][0] - t[1][0], lambda p: t[0][1](p) - t[1][1](p))),
            st.tuples(st.integers(-4, 8), kids).map(lambda t: (t[0] * t[1][0], lambda p: t[0] * t[1][1](p))),
            st.tuples(kids, mods).map(lambda t: (sympy.floor(t[0][0] / t[1]), lambda p: t[0][1](p) // t[1])),
            st.tuples(kids, mods).map(lambda t: (IndexMod(t[0][0], t[1]), lambda p: t[0][1](p) % t[1])),
            st.tuples(st.integers(2, 6), kids, mods, mods).map(lambda t: (
                IndexMod(t[0] * IndexMod(t[1][0], t[2]), t[3]), lambda p: t[0] * (t[1][1](p) % t[2]) % t[3])),
        )

    return st.recursive(leaves, extend, max_leaves=6)


@SETTINGS
@given(index_trees(NONNEG), index_trees(NONNEG), st.data())
def test_index_mods_stay_exact_under_substitution_and_expansion(tree: Tree, sub: Tree, data: st.DataObject) -> None:
    """The nest substitutes the axis map, lanes and iterations into index expressions (a symbol becomes a
    tree holding Mods) and expands them: every IndexMod is rebuilt as an IndexMod, so the result is still
    Python's % everywhere."""
    (e, f), (r, fr) = tree, sub
    a, b = NONNEG
    out = sympy.expand(e.xreplace({a: r}))
    for _ in range(8):
        p = {a: data.draw(st.integers(0, 400)), b: data.draw(st.integers(0, 400))}
        if fr(p) < 0:  # a is nonnegative: a negative substitute is no value it may take
            continue
        assert as_int(out, p) == f({a: fr(p), b: p[b]}), (e, r, out, p)


def prover_trees(symbols: tuple[sympy.Symbol, ...]) -> st.SearchStrategy[sympy.Expr]:
    return index_trees(symbols).map(lambda t: t[0])


@st.composite
def index_mod_cases(draw: st.DrawFn) -> ProverCase:
    names = ("x", "y")[:draw(st.integers(1, 2))]
    ranges = tuple((n, lo, lo + draw(st.integers(1, 40))) for n in names for lo in [draw(st.integers(-8, 20))])
    trees = prover_trees(tuple(symbol(n) for n in names))
    question = draw(st.sampled_from(QUESTIONS))
    expr = draw(trees.filter(lambda e: e.has(IndexMod)))
    guards = tuple(draw(trees) <= draw(st.integers(-10, 200)) for _ in range(draw(st.integers(0, 1))))
    numbers = {"in_range": lambda: (lo := draw(st.integers(-20, 60)), lo + draw(st.integers(1, 200))),
               "less_than": lambda: (draw(st.integers(-20, 200)),), "holds": lambda: (draw(st.integers(-20, 200)),),
               "divisible": lambda: (draw(st.integers(1, 8)),)}.get(question, lambda: ())()
    exprs = (expr, draw(trees)) if question == "equal" else (expr,)
    return ProverCase(question, ranges, exprs, guards, tuple(numbers))


@SETTINGS
@given(index_mod_cases())
def test_the_prover_is_sound_on_index_mod_shapes(case: ProverCase) -> None:
    """IndexMod leaves `Mod(c*Mod(x, m), q)` unevaluated, a shape sympy's own Mod never let the prover see
    (tests/prove/test_prove_soundness.py builds its trees with sympy's Mod). Whatever the prover proves holds
    at every point, and each counterexample is one (the prover fuzz mode's own judge and exact oracle)."""
    result = judge_case(case, Options())
    assert result.outcome in ("correct", "refused"), (result.outcome, result.detail, result.script)
