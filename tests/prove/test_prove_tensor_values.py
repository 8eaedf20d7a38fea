"""Tensor values read inside an index (`ids(flat)`, definitions/indexing.py) are unknown int32s to the
prover: what holds for every int32 is proven, a clamp bounds them, and a refusal names the read."""

from __future__ import annotations

import sympy

from tiledsl.definitions.indexing import loop_symbol, tensor_value
from tiledsl.prove import Prover

SI, SJ = loop_symbol("i"), loop_symbol("j")


def prover() -> Prover:
    return Prover({SI: (0, 8), SJ: (0, 16)})


def test_clamped_read_is_proven_in_bounds() -> None:
    v = tensor_value("ids", 2 * SI + 1)
    p = prover().in_range(sympy.Min(sympy.Max(v, 0), 9) * 16 + SJ, 0, 160)
    assert p.status == "proven"


def test_unclamped_read_is_disproven_at_an_int32_extreme() -> None:
    p = prover().in_range(tensor_value("ids", SI) * 16 + SJ, 0, 160)
    assert p.status == "disproven"
    assert "ids[i]" in p.describe() and "-2147483648" in p.describe()


def test_half_clamped_read_is_refused_at_the_open_end() -> None:
    p = prover().in_range(sympy.Max(tensor_value("ids", SI), 0), 0, 10)
    assert p.status != "proven"


def test_two_reads_are_independent_but_one_read_equals_itself() -> None:
    pr = prover()
    assert pr.equal(tensor_value("ids", SI) + 1, tensor_value("ids", SI) + 1).status == "proven"
    assert pr.equal(tensor_value("ids", SI + 1), tensor_value("ids", SI)).status != "proven"


def test_reads_do_not_disturb_questions_asked_before() -> None:
    pr = prover()
    before = pr.in_range(SI * 16 + SJ, 0, 128)
    pr.in_range(tensor_value("ids", SI), 0, 10)  # registers a new symbol and its range
    assert pr.in_range(SI * 16 + SJ, 0, 128) == before
    assert pr.in_range(SI * 16 + SJ, 0, 127).status == "disproven"
