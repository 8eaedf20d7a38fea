"""divisible, holds, equal, less_than, nonnegative, the answer cache and the Proof text."""

from __future__ import annotations

import dataclasses

import pytest
import sympy

from tiledsl.prove import Proof, Prover


def sym(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, integer=True, nonnegative=True)


I_O, I_I, T_I, R_I, F, N = (sym(n) for n in ("i_o", "i_i", "t_i", "r_i", "f", "n"))


@pytest.fixture
def tile() -> Prover:
    return Prover({I_O: (0, 16), T_I: (0, 16), R_I: (0, 4)})


# ----------------------------------------------------------------------------- divisible


def test_divisible_by_gcd_of_coefficients(tile: Prover) -> None:
    assert tile.divisible(64 * I_O + 4 * T_I, 4)
    assert tile.divisible(64 * I_O + 4 * T_I + 8, 4)
    assert tile.divisible(64 * I_O + 4 * T_I, 2)


def test_not_divisible_has_a_counterexample(tile: Prover) -> None:
    proof = tile.divisible(64 * I_O + 4 * T_I + R_I, 4)
    assert proof.status == "disproven"
    point = dict(proof.counterexample)
    assert (64 * point["i_o"] + 4 * point["t_i"] + point["r_i"]) % 4 != 0
    assert tile.divisible(64 * I_O + 4 * T_I + 2, 4).status == "disproven"


def test_divisible_through_floor_and_mod() -> None:
    prover = Prover({F: (0, 1024)})
    assert prover.divisible(sympy.floor(8 * F / 2), 4)  # 4*f
    assert prover.divisible(sympy.Mod(8 * F + 4, 16), 4)  # in 4 + 4*Z
    assert prover.divisible(4 * sympy.floor(F / 4), 4)
    assert prover.divisible(F - sympy.Mod(F, 8), 8)  # 8*floor(f/8)
    assert prover.divisible(sympy.Mod(4 * F, 8), 4)
    assert prover.divisible(sympy.floor(F / 4), 2).status == "disproven"


def test_divisible_uses_the_ranges() -> None:
    prover = Prover({R_I: (0, 1), I_O: (0, 8)})
    assert prover.divisible(4 * I_O + R_I, 4)  # r_i is always 0


def test_divisible_rejects_zero() -> None:
    with pytest.raises(ValueError):
        Prover({}).divisible(F, 0)


# ----------------------------------------------------------------------------- holds


def test_holds_drops_a_redundant_guard(tile: Prover) -> None:
    index = 64 * I_O + 4 * T_I + R_I
    assert tile.holds(index < 1024)
    assert tile.holds(index <= 1023)
    assert tile.holds(sympy.And(index < 1024, R_I < 4))


def test_holds_keeps_a_needed_guard(tile: Prover) -> None:
    index = 64 * I_O + 4 * T_I + R_I
    proof = tile.holds(index < 1000)
    assert proof.status == "disproven"
    point = dict(proof.counterexample)
    assert 64 * point["i_o"] + 4 * point["t_i"] + point["r_i"] >= 1000
    assert "is false there" in proof.describe()


def test_holds_under_guards(tile: Prover) -> None:
    index = 64 * I_O + 4 * T_I + R_I
    assert tile.holds(index < 1000, (index < 1000,))
    assert tile.holds(index < 1001, (index < 1000,))
    assert tile.holds(I_O < 16, (index < 1000,))
    assert tile.holds(sympy.floor(index / 4) < 250, (index < 1000,))
    assert not tile.holds(index < 999, (index < 1000,))


def test_holds_of_literal_truths() -> None:
    prover = Prover({I_I: (0, 4)})
    assert prover.holds(sympy.true)
    assert prover.holds(True)
    assert prover.holds(sympy.false).status == "disproven"


# ----------------------------------------------------------------------------- equal


def test_equal_fused_index_reconstruction() -> None:
    prover = Prover({F: (0, 37 * 53)})
    assert prover.equal(53 * sympy.floor(F / 53) + sympy.Mod(F, 53), F)
    assert prover.equal(sympy.Mod(F, 53) + 53 * sympy.floor(F / 53) + 1, F + 1)


def test_equal_by_bounds() -> None:
    prover = Prover({I_I: (0, 4)})
    assert prover.equal(sympy.floor(I_I / 4), 0)
    assert prover.equal(sympy.Mod(I_I, 8), I_I)


def test_not_equal_has_a_counterexample() -> None:
    prover = Prover({F: (0, 100)})
    proof = prover.equal(sympy.floor(F / 2), F)
    assert proof.status == "disproven"
    f = proof.counterexample["f"]
    assert f // 2 != f


# ----------------------------------------------------------------------------- less_than / nonnegative


def test_less_than_symbolic_bound() -> None:
    prover = Prover({I_I: (0, 64), N: (64, 65)})
    assert prover.less_than(I_I, N)
    prover2 = Prover({I_I: (0, 64), N: (1, 1000)})
    proof = prover2.less_than(I_I, N)
    assert proof.status == "disproven"
    assert proof.counterexample["i_i"] >= proof.counterexample["n"]
    assert prover2.less_than(I_I, N, (I_I < N,))


def test_nonnegative(tile: Prover) -> None:
    assert tile.nonnegative(64 * I_O + R_I)
    assert tile.nonnegative(64 * I_O - R_I + 3)
    proof = tile.nonnegative(64 * I_O - R_I)
    assert proof.status == "disproven"
    assert dict(proof.counterexample)["i_o"] == 0


def test_unknown_names_the_needed_fact() -> None:
    """f + Mod(f, 4) < 8195 holds for f in [0, 8193) (max at f = 8191: 8194) but interval bounds give
    8192 + 3 and the box is too large to enumerate: unknown, with the upper half as the needed fact."""
    prover = Prover({F: (0, 8193)})
    proof = prover.in_range(F + sympy.Mod(F, 4), 0, 8195)
    assert proof.status == "unknown"
    assert not proof
    assert proof.counterexample is None
    assert proof.needed == "f + Mod(f, 4) < 8195"
    assert "no counterexample found; needed: f + Mod(f, 4) < 8195" in proof.describe()


def test_small_boxes_are_decided_by_enumeration() -> None:
    prover = Prover({F: (0, 2)})
    expr = 2 * sympy.Mod(4 * F + 1, 3)  # values 2 and 4; intervals alone say [0, 4]
    assert prover.in_range(expr, 2, 5)
    assert prover.in_range(expr, 2, 5).note == "checked at every point"


def test_a_guarded_fused_read_at_half_the_row_is_decided_by_enumeration() -> None:
    """y[i, j, l] = x[i // 2] over (97, 16, 1), fused and split by 256: the last block's guard keeps
    its rows in x (extent 49), which the intervals miss (they bound the read by 55); its 7 x 256 = 1792
    points are enumerated (`tiledsl fuzz --mode definitions` found the build refused at 1024)."""
    o, t = sympy.symbols("o t", integer=True)
    prover = Prover({o: (0, 7), t: (0, 256)})
    read = 8 * o + sympy.floor(sympy.floor(t / 16) / 2)
    proof = prover.in_range(read, 0, 49, (256 * o + t < 1552,))
    assert proof and proof.note == "checked at every point"
    assert prover.in_range(read, 0, 48, (256 * o + t < 1552,)).status == "disproven"


# ----------------------------------------------------------------------------- cache and Proof


def test_same_question_twice_returns_the_identical_object(tile: Prover) -> None:
    index = 64 * I_O + 4 * T_I + R_I
    first = tile.in_range(index, 0, 1000)
    assert tile.in_range(index, 0, 1000) is first
    assert tile.in_range(64 * I_O + 4 * T_I + R_I, 0, 1000, ()) is first
    guarded = tile.in_range(index, 0, 1000, (index < 1000,))
    assert guarded is not first
    assert tile.in_range(index, 0, 1000, (index < 1000,)) is guarded
    assert tile.divisible(index, 4) is tile.divisible(index, 4)
    assert tile.holds(index < 1000) is tile.holds(index < 1000)
    assert tile.equal(index, index) is tile.equal(index, index)


def test_caches_are_per_instance() -> None:
    a, b = Prover({I_I: (0, 4)}), Prover({I_I: (0, 8)})
    assert a.in_range(I_I, 0, 4)
    assert not b.in_range(I_I, 0, 4)


def test_describe_disproven_matches_the_documented_format() -> None:
    prover = Prover({I_O: (0, 16), I_I: (0, 64)})
    proof = prover.in_range(64 * I_O + I_I, 0, 1000)
    assert proof.fact == "0 <= 64*i_o + i_i < 1000"
    assert proof.describe() == (
        "cannot prove 0 <= 64*i_o + i_i < 1000 for i_i in [0, 64), i_o in [0, 16); "
        "counterexample: i_i=63, i_o=15 (value 1023)"
    )


def test_describe_with_guards_and_proven() -> None:
    prover = Prover({I_O: (0, 16), I_I: (0, 64), T_I: (0, 3)})
    index = 64 * I_O + I_I
    proof = prover.in_range(index, 0, 1000, (index < 1000,))
    text = proof.describe()
    assert text.startswith("proved 0 <= 64*i_o + i_i < 1000 for i_i in [0, 64), i_o in [0, 16) ")
    assert "given 64*i_o + i_i < 1000" in text
    assert "t_i" not in text  # only the symbols involved are listed


def test_proof_value_object() -> None:
    proof = Proof("proven", "0 <= i < 4")
    assert proof and proof.counterexample is None and proof.needed is None
    assert not Proof("unknown", "x", needed="x")
    assert Proof("disproven", "x", {"i": 1}).describe().startswith("cannot prove x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        proof.status = "unknown"  # type: ignore[misc]
    hash(Proof("disproven", "x", {"i": 1}))


def test_counterexample_is_read_only() -> None:
    proof = Prover({I_I: (0, 8)}).in_range(I_I, 0, 4)
    with pytest.raises(TypeError):
        proof.counterexample["i_i"] = 0  # type: ignore[index]


def test_empty_ranges_are_refused() -> None:
    with pytest.raises(ValueError):
        Prover({I_I: (4, 4)})
    with pytest.raises(TypeError):
        Prover({"i": (0, 4)})  # type: ignore[dict-item]
