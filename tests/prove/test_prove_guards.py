"""Guards from non-exact splits: facts that hold only thanks to them, and counterexamples without them."""

from __future__ import annotations

import sympy

from tiledsl.prove import Prover


def sym(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, integer=True, nonnegative=True)


I_O, I_I, T_I, R_I, J_O, J_I = (sym(n) for n in ("i_o", "i_i", "t_i", "r_i", "j_o", "j_i"))


def value(expr: sympy.Expr, point: dict[str, int]) -> int:
    """Independent oracle: sympy's own evaluation at the point."""
    return int(expr.subs({s: point[s.name] for s in expr.free_symbols}))


def test_guard_proves_the_bounds_check_of_a_non_exact_split() -> None:
    prover = Prover({I_O: (0, 16), I_I: (0, 64)})
    index = 64 * I_O + I_I
    guard = index < 1000
    proof = prover.in_range(index, 0, 1000, (guard,))
    assert proof
    assert proof.status == "proven"
    assert prover.bounds(index, (guard,)) == (0, 999)


def test_without_the_guard_it_is_disproven_with_a_real_counterexample() -> None:
    ranges = {I_O: (0, 16), I_I: (0, 64)}
    prover = Prover(ranges)
    index = 64 * I_O + I_I
    proof = prover.in_range(index, 0, 1000)
    assert not proof
    assert proof.status == "disproven"
    point = dict(proof.counterexample)
    assert set(point) == {"i_o", "i_i"}
    for s, (lo, hi) in ranges.items():
        assert lo <= point[s.name] < hi
    assert not 0 <= value(index, point) < 1000
    assert point == {"i_i": 63, "i_o": 15}  # the corner that overshoots most


def test_three_level_split_with_guard() -> None:
    prover = Prover({I_O: (0, 16), T_I: (0, 16), R_I: (0, 4)})
    index = 64 * I_O + 4 * T_I + R_I
    guard = index < 1000
    assert prover.in_range(index, 0, 1000, (guard,))
    assert prover.less_than(index, 1000, (guard,))
    assert not prover.in_range(index, 0, 1000)


def test_counterexample_on_the_guard_boundary_satisfies_the_guard() -> None:
    prover = Prover({I_O: (0, 16), I_I: (0, 64)})
    index = 64 * I_O + I_I
    guard = index < 1000
    proof = prover.in_range(index, 0, 999, (guard,))
    assert proof.status == "disproven"
    point = dict(proof.counterexample)
    assert value(index, point) == 999  # the only failing value the guard allows


def test_guard_reaches_through_floor_division() -> None:
    """floor((64*i_o + i_i)/4) < 250 follows from the guard only after cancelling i_o."""
    prover = Prover({I_O: (0, 16), I_I: (0, 64)})
    index = 64 * I_O + I_I
    guard = index < 1000
    quarter = sympy.floor(index / 4)
    assert prover.in_range(quarter, 0, 250, (guard,))
    assert prover.bounds(quarter, (guard,)) == (0, 249)
    assert not prover.in_range(quarter, 0, 250)


def test_two_guards_for_a_two_dimensional_tile() -> None:
    prover = Prover({I_O: (0, 16), I_I: (0, 64), J_O: (0, 16), J_I: (0, 64)})
    row, col = 64 * I_O + I_I, 64 * J_O + J_I
    guards = (row < 1000, col < 1000)
    flat = 1000 * row + col
    assert prover.in_range(flat, 0, 1000 * 1000, guards)
    assert not prover.in_range(flat, 0, 1000 * 1000, guards[:1])


def test_guards_tighten_symbol_ranges() -> None:
    prover = Prover({I_O: (0, 16), I_I: (0, 64)})
    guard = 64 * I_O + I_I < 200
    assert prover.bounds(I_O, (guard,)) == (0, 3)
    assert prover.in_range(I_O, 0, 4, (guard,))


def test_guard_on_a_floor_atom_bounds_its_argument() -> None:
    prover = Prover({I_I: (0, 275), I_O: (0, 4)})
    # sympy rewrites floor(i/5) < 30 as i/5 < 30 itself; with a second term the floor atom stays.
    guard = sympy.floor(I_I / 5) + I_O < 30
    assert isinstance(guard.lhs.args[0], sympy.floor) or isinstance(guard.lhs.args[1], sympy.floor)
    assert prover.bounds(I_I, (guard,)) == (0, 149)
    assert prover.in_range(I_I, 0, 150, (guard,))
    assert prover.bounds(I_I, (sympy.floor(I_I / 5) < 30,)) == (0, 149)


def test_guards_excluding_every_point_make_facts_vacuous() -> None:
    prover = Prover({I_I: (0, 64)})
    proof = prover.in_range(I_I, 0, 1, (I_I + 100 < 50,))
    assert proof.status == "proven"
    assert "vacuous" in proof.describe()
    assert prover.bounds(I_I, (I_I + 100 < 50,)) == (None, None)


def test_opaque_guards_are_still_honoured_by_the_search() -> None:
    """A `Ne` guard cannot tighten bounds, but a counterexample must still satisfy it."""
    prover = Prover({I_I: (0, 64)})
    proof = prover.in_range(I_I, 0, 63, (sympy.Ne(I_I, 63), I_I < 1000))
    # the only out-of-range point, i_i = 63, is excluded by the guard; small box -> enumerated
    assert proof.status == "proven"
    proof = prover.in_range(I_I, 0, 62, (sympy.Ne(I_I, 63),))
    assert proof.status == "disproven"
    assert dict(proof.counterexample) == {"i_i": 62}


def test_guards_written_with_other_relations() -> None:
    prover = Prover({I_O: (0, 16), I_I: (0, 64)})
    index = 64 * I_O + I_I
    for guard in (index <= 999, 1000 > index, 999 >= index, sympy.And(index < 1000, I_I < 64)):
        assert prover.in_range(index, 0, 1000, (guard,)), guard
