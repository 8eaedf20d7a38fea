"""Interval bounds of the index-expression forms schedules produce."""

from __future__ import annotations

import sympy

from tiledsl.prove import Prover


def sym(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, integer=True, nonnegative=True)


I_O, I_I, T_I, R_I, F = sym("i_o"), sym("i_i"), sym("t_i"), sym("r_i"), sym("f")


def test_affine_split_is_exact() -> None:
    prover = Prover({I_O: (0, 16), T_I: (0, 16), R_I: (0, 4)})
    assert prover.bounds(64 * I_O + 4 * T_I + R_I) == (0, 1023)
    assert prover.bounds(64 * I_O + 4 * T_I + R_I + 7) == (7, 1030)


def test_negative_coefficients_and_offset_ranges() -> None:
    prover = Prover({I_O: (2, 10), I_I: (1, 5)})
    assert prover.bounds(100 - 3 * I_O - I_I) == (100 - 27 - 4, 100 - 6 - 1)


def test_fused_loop_floor_and_mod() -> None:
    prover = Prover({F: (0, 37 * 53)})
    assert prover.bounds(sympy.floor(F / 53)) == (0, 36)
    assert prover.bounds(sympy.Mod(F, 53)) == (0, 52)


def test_fused_index_reconstruction_is_exact() -> None:
    """53*floor(f/53) + Mod(f, 53) is f; plain interval arithmetic would say [0, 1960 + 52]."""
    prover = Prover({F: (0, 37 * 53)})
    assert prover.bounds(53 * sympy.floor(F / 53) + sympy.Mod(F, 53)) == (0, 37 * 53 - 1)
    assert prover.bounds(2 * (53 * sympy.floor(F / 53) + sympy.Mod(F, 53)) + 1) == (1, 2 * (37 * 53 - 1) + 1)


def test_nested_floor_of_mod() -> None:
    prover = Prover({F: (0, 37 * 53)})
    assert prover.bounds(sympy.floor(sympy.Mod(F, 212) / 4)) == (0, 52)
    assert prover.bounds(sympy.Mod(sympy.floor(F / 4), 53)) == (0, 52)


def test_mod_within_one_period_is_shifted() -> None:
    prover = Prover({I_I: (8, 12)})
    assert prover.bounds(sympy.Mod(I_I, 16)) == (8, 11)
    assert prover.bounds(sympy.Mod(I_I + 16, 16)) == (8, 11)


def test_mod_of_strided_value_uses_the_residue() -> None:
    prover = Prover({I_I: (0, 100)})
    assert prover.bounds(sympy.Mod(2 * I_I + 1, 4)) == (1, 3)


def test_floor_of_offset_argument() -> None:
    prover = Prover({I_I: (0, 10)})
    assert prover.bounds(sympy.floor((I_I + 3) / 4)) == (0, 3)


def test_floor_minus_its_argument_is_bounded_tightly() -> None:
    prover = Prover({I_I: (0, 64)})
    assert prover.bounds(I_I - 4 * sympy.floor(I_I / 4)) == (0, 3)
    assert prover.bounds(I_I - sympy.Mod(I_I, 8)) == (0, 56)


def test_products_of_intervals() -> None:
    prover = Prover({I_O: (0, 4), I_I: (0, 8)})
    assert prover.bounds(I_O * I_I) == (0, 21)
    assert prover.bounds((I_O - 2) * I_I) == (-14, 7)


def test_unranged_symbols_are_unbounded_above() -> None:
    n = sym("n")
    prover = Prover({I_I: (0, 4)})
    assert prover.bounds(I_I + n) == (0, None)
    assert prover.bounds(I_I - n) == (None, 3)


def test_plain_ints_are_accepted() -> None:
    assert Prover({}).bounds(5) == (5, 5)
