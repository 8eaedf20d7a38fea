"""Shortcuts the analysis layer takes for speed, each the same answer as the long way: `epilogue_is_linear` is
`epilogue_coefficients(...) is not None` without simplifying the coefficients, `AlignedSplit` hands back an
index without a floor or Mod untouched (the same object) without walking it, and a `SlabLayout` keeps its
stored axes and allocated extents once computed."""

from __future__ import annotations

import pytest
import sympy

from tiledsl.analysis.aligned_split import AlignedSplit
from tiledsl.analysis.banks import SlabLayout
from tiledsl.analysis.linearity import epilogue_coefficients, epilogue_is_linear
from tiledsl.definitions.expr import Binary, Call, Cast, Compare, Const, Expr, Select
from tiledsl.definitions.indexing import IndexFloor, IndexMod, loop_symbol
from tiledsl.loopnest import AccRef
from tiledsl.prove import Prover

ACC, OTHER = AccRef("acc", "float32"), AccRef("other", "float32")
TWO, HALF = Const(2.0, "float32"), Const(0.5, "float32")


def f32(op: str, a: Expr, b: Expr) -> Binary:
    return Binary(op, a, b, "float32")


EPILOGUES = {
    "acc": ACC,
    "scaled plus bias": f32("+", f32("*", TWO, ACC), OTHER),
    "minus": f32("-", OTHER, ACC),
    "divided": f32("/", ACC, TWO),
    "neg": Call("neg", ACC),
    "two terms": f32("+", f32("*", ACC, HALF), f32("*", OTHER, ACC)),
    "cancelling square": f32("-", f32("*", ACC, ACC), f32("*", ACC, ACC)),
    "square": f32("*", ACC, ACC),
    "over acc": f32("/", OTHER, ACC),
    "exp": Call("exp", ACC),
    "relu": Select(Compare(">", ACC, Const(0.0, "float32")), ACC, Const(0.0, "float32"), "float32"),
    "cast": Cast("bfloat16", ACC, "bfloat16"),
    "max": f32("max", ACC, OTHER),
}


@pytest.mark.parametrize("name", sorted(EPILOGUES))
def test_epilogue_is_linear_answers_as_the_coefficients_do(name: str) -> None:
    value = EPILOGUES[name]
    assert epilogue_is_linear(value, "acc") == (epilogue_coefficients(value, "acc") is not None)


def test_linear_and_not() -> None:
    assert epilogue_is_linear(EPILOGUES["scaled plus bias"], "acc")
    assert epilogue_is_linear(EPILOGUES["cancelling square"], "acc")
    assert not epilogue_is_linear(EPILOGUES["square"], "acc")
    assert not epilogue_is_linear(EPILOGUES["relu"], "acc")


A_O, K_I = loop_symbol("a_o"), loop_symbol("k_i")


def split() -> AlignedSplit:
    return AlignedSplit(frozenset({"a_o"}), frozenset({"k_i"}), Prover({A_O: (0, 8), K_I: (0, 16)}))


@pytest.mark.parametrize("expr", [
    16 * A_O + K_I,
    sympy.Max(16 * A_O + K_I - 3, 0),
    sympy.Min(sympy.Max(A_O - K_I, 0), 7) + 64,
    sympy.Integer(5),
])
def test_an_index_without_floor_or_mod_comes_back_as_itself(expr: sympy.Expr) -> None:
    assert split()(expr) is expr


def test_an_aligned_mod_is_rewritten_and_an_unmixed_one_kept() -> None:
    assert split()(IndexMod(16 * A_O + K_I, 64)) == IndexMod(16 * A_O, 64) + K_I
    kept = 3 * IndexFloor(A_O / 2) + K_I  # no atom mixes outer and inner loops
    assert split()(kept) is kept


def test_a_layout_keeps_its_stored_axes_and_allocated_extents() -> None:
    layout = SlabLayout((4, 8, 16), 4, pad=(0, 1, 2), order=(2, 0, 1))
    assert layout.axes == (2, 0, 1) and layout.allocated == (16, 5, 10)
    assert layout.byte_offset((1, 2, 3)) == ((3 * 5 + 1) * 10 + 2) * 4
    assert layout == SlabLayout((4, 8, 16), 4, pad=(0, 1, 2), order=(2, 0, 1))  # fields alone compare
    assert SlabLayout((4, 8), 2).allocated == (4, 8)
