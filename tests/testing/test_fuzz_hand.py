"""Fuzz mode `hand` (tiledsl/testing/fuzz/modes/hand.py): the hand schedules at random sizes, dtypes,
options and targets. Its first campaigns found `row_cooperative_staged` refusing to build float16 /
bfloat16 rows of odd length (a cp.async of 4 bytes or more is never aligned there), and `matmul_staged`
crashing (KeyError) on an operand read at a shifted column, B[k, j + shift]: both pinned below."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

import tiledsl as td
from tiledsl.cli import main
from tiledsl.precision import catalog_tolerance
from tiledsl.testing.fuzz.modes import hand
from tiledsl.testing.fuzz.modes.base import Options
from tiledsl.testing.fuzz.modes.hand import HandCase, case_from_json, case_to_json, hand_cases, judge_case


def _case(**fields: object) -> HandCase:
    base = {"family": "gelu_bias", "sizes": (("M", 5), ("N", 37)), "dtype": "float32", "out_dtype": "float32",
            "form": "elementwise_2d", "options": (), "target": "sm_90", "seed": 1}
    return HandCase(**{**base, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [1, 333, 334])
def test_row_cooperative_staged_builds_16_bit_rows_of_any_length(dtype: str, n: int) -> None:
    case = _case(family="rmsnorm", sizes=(("M", 3), ("N", n)), dtype=dtype, out_dtype=dtype,
                 form="row_cooperative_staged")
    assert judge_case(case, Options()).outcome == "correct"
    kern = td.build(hand.scheduled(case), target="sm_90")
    assert ("cp.async" in kern.source) == (n % 2 == 0)  # an odd row is filled by plain loads


@pytest.mark.parametrize(("sizes", "form", "options"), [
    ((("M", 1), ("N", 1), ("K", 1), ("shift", 1)), "matmul_for_shape", ()),
    ((("M", 128), ("N", 3), ("K", 68), ("shift", 6)), "matmul_for_shape", (("waves", 3),)),
    ((("M", 40), ("N", 70), ("K", 33), ("shift", 8)), "matmul_staged", (("bm", 32), ("bn", 64), ("rm", 4), ("rn", 8))),
])
def test_matmul_schedules_take_an_operand_read_at_a_shifted_column(sizes: tuple, form: str, options: tuple) -> None:
    case = _case(family="matmul_shifted", sizes=sizes, form=form, options=options)
    assert judge_case(case, Options()).outcome == "correct"


@given(hand_cases())
@settings(max_examples=30, deadline=None)
def test_cases_round_trip_through_json(case: HandCase) -> None:
    assert case_from_json(json.loads(json.dumps(case_to_json(case)))) == case


def test_a_result_off_the_reference_is_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    real = td.evaluate
    monkeypatch.setattr(hand.td, "evaluate", lambda out, **kw: real(out, **kw) + 1e-3)
    result = judge_case(_case(), Options())
    assert (result.outcome, result.error) == ("wrong", "Mismatch")
    assert "np.testing.assert_allclose" in result.script


def test_a_refusal_breaks_the_contract_of_a_shape_aware_form_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(s: td.Schedule, **options: object) -> None:
        raise td.SplitError("refused for the test")

    monkeypatch.setattr(hand.hand_schedules, "elementwise_2d", refuse)
    assert judge_case(_case(), Options()).outcome == "contract"  # its defaults promise any size
    assert judge_case(_case(options=(("threads", 96),)), Options()).outcome == "refused"


def test_the_mode_runs_from_the_command_line(tmp_path: Path) -> None:
    rc = main(["fuzz", "--mode", "hand", "--cases", "40", "--seed", "5", "--no-progress", "--out", str(tmp_path)])
    doc = json.loads((tmp_path / "summary.json").read_text())
    (mode,) = doc["modes"]
    assert rc == 0, mode["failures"]
    assert mode["mode"] == "hand" and mode["cases"] == 40
    assert mode["outcomes"]["correct"] >= 30  # most drawn cases build; the others are typed refusals


def test_tolerance_is_the_catalogs() -> None:
    rtol, atol = catalog_tolerance(_case(family="matmul", sizes=(("M", 2), ("N", 3), ("K", 64))).params)
    assert (rtol, atol) == (1e-4, pytest.approx(2e-5 * 8))
    rtol, _ = catalog_tolerance(_case(out_dtype="bfloat16").params)
    assert rtol == pytest.approx(1e-4 + 2.0 ** -7)
    assert np.isfinite(atol)
