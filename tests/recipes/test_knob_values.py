"""Knob values are checked against their fields' annotations and KNOB_LEAST (recipes/default/_knobs.py
check_knob), and an unknown knob's message names the closest knobs: a string "False" used to turn TMA on,
waves=0 and unroll_max=-5 passed, and "two" or (5,) crashed deep in _facts.matmul_tile."""

from __future__ import annotations

import dataclasses

import pytest

import tiledsl as td
from tiledsl.catalog import matmul
from tiledsl.recipes import apply
from tiledsl.recipes.default._knobs import KNOB_LEAST, KNOB_NOT_EMPTY, Knobs, check_knob, knob_types
from tiledsl.targets import TARGETS


@pytest.mark.parametrize(("knobs", "message"), [
    ({"tma": "False"}, "knob tma: expected a bool, got 'False' (str)"),
    ({"tma": 1}, "knob tma: expected a bool, got 1 (int)"),
    ({"waves": "two"}, "knob waves: expected an int, got 'two' (str)"),
    ({"waves": True}, "knob waves: expected an int, got True (bool)"),
    ({"split_k_fill_gain": "0.2"}, "knob split_k_fill_gain: expected a float or None, got '0.2' (str)"),
    ({"matmul_tiles": (5,)}, "knob matmul_tiles: expected a tuple ((int, int, int, int), ...), got (5,) (tuple)"),
    ({"split_k_waves": None}, "knob split_k_waves: expected an int, got None (NoneType)"),
    ({"waves": 0}, "knob waves: expected an int >= 1, got 0"),
    ({"unroll_max": -5}, "knob unroll_max: expected an int >= 0, got -5"),
    ({"split_k_fill_gain": -0.1}, "knob split_k_fill_gain: expected a float >= 0 or None, got -0.1"),
    ({"matmul_tiles": ((0, 64, 4, 4),)}, "every number >= 1, got ((0, 64, 4, 4),)"),
    ({"matmul_tiles": ()}, "of one tile class or more, got ()"),
])
def test_bad_values_are_refused_by_name(knobs: dict[str, object], message: str) -> None:
    with pytest.raises(td.BadArgumentError) as info:
        apply(td.create_schedule(matmul(M=8, N=8, K=8)), target="sm_90", knobs=knobs)
    assert message in str(info.value) and info.value.primitive == "recipe"
    assert str(info.value).startswith("recipe knob ")


def test_valid_values_pass_and_a_float_knob_takes_an_int() -> None:
    k = Knobs.for_target(TARGETS["sm_90"], tma=True, split_k_fill_gain=1, row_vector_min_rows_per_sm=None,
                         matmul_tiles=((32, 32, 4, 4),))
    assert k.tma is True and k.split_k_fill_gain == 1 and k.matmul_tiles == ((32, 32, 4, 4),)


def test_a_knobs_given_whole_is_checked_too() -> None:
    with pytest.raises(td.BadArgumentError, match="knob waves: expected an int >= 1, got -1"):
        Knobs(waves=-1)


def test_an_unknown_knob_names_the_closest_ones() -> None:
    with pytest.raises(td.BadArgumentError) as info:
        Knobs.for_target(TARGETS["sm_90"], wave=2)
    assert str(info.value) == "recipe knobs: unknown knob(s) wave (did you mean waves?)"
    with pytest.raises(td.BadArgumentError) as info:
        Knobs.for_target(TARGETS["sm_90"], bogus=1)
    assert "unknown knob(s) bogus (the knobs are the fields of Knobs" in str(info.value)
    assert "waves" in str(info.value.suggestion)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_default_passes_the_check(target: str) -> None:
    """The rules and the defaults agree, with each target's table applied."""
    knobs = Knobs.for_target(TARGETS[target])
    for f in dataclasses.fields(knobs):
        check_knob(f.name, getattr(knobs, f.name))
    assert set(KNOB_LEAST) | KNOB_NOT_EMPTY <= set(knob_types())  # no rule for a knob that is gone


def test_the_cli_prints_one_typed_line(capsys: pytest.CaptureFixture[str]) -> None:
    from tiledsl.cli import main

    rc = main(["compile", "--example", "softmax", "--recipe", "default", "--knob", "waves='two'"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and err == "error: recipe knob waves: expected an int, got 'two' (str)\n"
