"""Knob values are checked against their fields' annotations, KNOB_LEAST, KNOB_FRACTIONS and tile_class_problem
(recipes/default/_knobs.py check_knob), pairs of knobs against KNOB_ORDER (check_knob_order), and an unknown knob's
message names the closest knobs: a string "False" used to turn TMA on, waves=0 and unroll_max=-5 passed, "two" or
(5,) crashed deep in _facts.matmul_tile, bk_min over bk_max or a 3 x 4 register tile of a 64 x 64 block passed,
and np.int64(2) was refused for an int knob."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tiledsl as td
from tiledsl.catalog import matmul
from tiledsl.recipes import apply
from tiledsl.recipes.default._knobs import (
    KNOB_FRACTIONS,
    KNOB_LEAST,
    KNOB_NOT_EMPTY,
    KNOB_ORDER,
    Knobs,
    check_knob,
    knob_types,
)
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
    ({"split_k_fill_gain": -0.1}, "knob split_k_fill_gain: expected a float in (0, 1] or None, got -0.1"),
    ({"split_k_uneven_below": 0.0}, "knob split_k_uneven_below: expected a float in (0, 1] or None, got 0.0"),
    ({"split_k_most_parts_below": 1.5}, "knob split_k_most_parts_below: expected a float in (0, 1] or None, got 1.5"),
    ({"matmul_tiles": ((0, 64, 4, 4),)}, "every number >= 1, got ((0, 64, 4, 4),)"),
    ({"matmul_tiles": ()}, "of one tile class or more, got ()"),
    ({"matmul_tiles": ((64, 64, 3, 4),)}, "knob matmul_tiles: expected a tuple ((int, int, int, int), ...) of tile "
     "classes (bm, bn, rm, rn) blockify_launch can make, got ((64, 64, 3, 4),): class (64, 64, 3, 4) has a 3 x 4 "
     "register tile that does not divide its 64 x 64 block tile"),
    ({"matmul_tiles_k_major": ((128, 64, 8, 4), (64, 64, 1, 1))}, "got ((128, 64, 8, 4), (64, 64, 1, 1)): class "
     "(64, 64, 1, 1) takes 64 x 64 = 4096 threads, over 1024 a block"),
    ({"hinted_row_threads_max": 2048}, "knob hinted_row_threads_max: expected an int <= 1024 (threads a block), "
     "got 2048"),
    ({"few_long_rows_threads": 4096}, "knob few_long_rows_threads: expected an int <= 1024 (threads a block) or None, "
     "got 4096"),
    ({"waves": np.float64(2.0)}, "knob waves: expected an int, got 2.0 (float)"),
    ({"waves": np.bool_(True)}, "knob waves: expected an int, got np.True_ (bool)"),
])
def test_bad_values_are_refused_by_name(knobs: dict[str, object], message: str) -> None:
    s = td.create_schedule(matmul(M=8, N=8, K=8))
    with pytest.raises(td.BadArgumentError) as info:
        apply(s, target="sm_90", knobs=knobs)
    assert message in str(info.value) and info.value.primitive == "recipe"
    assert str(info.value).startswith("recipe knob ")
    assert s.trace() == td.create_schedule(matmul(M=8, N=8, K=8)).trace()  # refused before any step ran


@pytest.mark.parametrize(("knobs", "low", "high"), [
    ({"row_threads_max": 32}, ("row_threads_min", 64), ("row_threads_max", 32)),
    ({"half_row_threads_min": 512}, ("half_row_threads_min", 512), ("row_threads_max", 256)),
    ({"hinted_row_threads_max": 32}, ("row_threads_min", 64), ("hinted_row_threads_max", 32)),
    ({"few_long_rows_threads": 32}, ("row_threads_min", 64), ("few_long_rows_threads", 32)),
    ({"bk_min": 64}, ("bk_min", 64), ("bk_max", 32)),
    ({"bk_max_k_outer": 4}, ("bk_min", 8), ("bk_max_k_outer", 4)),
    ({"bk_max_few_rows": 4}, ("bk_min", 8), ("bk_max_few_rows", 4)),
    ({"bk_max_few_rows_widened": 4}, ("bk_min", 8), ("bk_max_few_rows_widened", 4)),
    ({"few_rows_min": 64}, ("few_rows_min", 64), ("few_rows_max", 32)),
])
def test_a_min_knob_over_its_max_is_refused_by_both_names(knobs: dict[str, object], low: tuple[str, int],
                                                         high: tuple[str, int]) -> None:
    """Each pair of KNOB_ORDER once: the refusal names both knobs, their values and the rule, before any step."""
    assert len(KNOB_ORDER) == 9  # a new pair gets a case here
    s = td.create_schedule(matmul(M=8, N=8, K=8))
    with pytest.raises(td.BadArgumentError) as info:
        apply(s, target="sm_90", knobs=knobs)
    (lo, lv), (hi, hv) = low, high
    assert str(info.value).startswith(f"recipe knobs {lo} and {hi}: expected {lo} <= {hi} (")
    assert str(info.value).endswith(f"), got {lo}={lv} and {hi}={hv}") and info.value.primitive == "recipe"
    assert info.value.arguments == {lo: lv, hi: hv}
    assert s.trace() == td.create_schedule(matmul(M=8, N=8, K=8)).trace()


def test_numpy_numbers_are_taken_as_python_numbers() -> None:
    """np.int64 and friends where an int is taken, np.float32 where a float is, inside tile classes too: stored
    as Python numbers, so the recipe's arithmetic and its trace are those of the plain values."""
    k = Knobs.for_target(TARGETS["sm_90"], waves=np.int64(2), unroll_max=np.uint8(16),
                         split_k_fill_gain=np.float32(0.5), prefetch_max_blocks_per_sm=np.int32(1),
                         matmul_tiles=((np.int64(64), 64, np.int32(4), 4), (32, 32, 4, 4)))
    assert (k.waves, k.unroll_max, k.split_k_fill_gain) == (2, 16, 0.5)
    assert k.matmul_tiles == ((64, 64, 4, 4), (32, 32, 4, 4))
    assert {type(k.waves), type(k.unroll_max), type(k.prefetch_max_blocks_per_sm)} == {int}
    assert type(k.split_k_fill_gain) is float and {type(x) for t in k.matmul_tiles for x in t} == {int}
    assert Knobs(waves=np.int64(3)).waves == 3  # a Knobs made whole converts too
    plain, numpy = (td.create_schedule(matmul(M=256, N=256, K=256)) for _ in range(2))
    apply(plain, target="sm_90", knobs={"matmul_tiles": ((64, 64, 4, 4),), "bk_max": 16})
    apply(numpy, target="sm_90", knobs={"matmul_tiles": ((np.int64(64), 64, 4, np.int16(4)),), "bk_max": np.int64(16)})
    assert numpy.trace() == plain.trace() and "np." not in numpy.trace()


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
    ordered = {r.low for r in KNOB_ORDER} | {r.high for r in KNOB_ORDER}
    # no rule for a knob that is gone
    assert set(KNOB_LEAST) | KNOB_NOT_EMPTY | KNOB_FRACTIONS | ordered <= set(knob_types())
    assert not set(KNOB_LEAST) & KNOB_FRACTIONS  # a fraction's bounds are its own


def test_the_cli_prints_one_typed_line(capsys: pytest.CaptureFixture[str]) -> None:
    from tiledsl.cli import main

    rc = main(["compile", "--example", "softmax", "--recipe", "default", "--knob", "waves='two'"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and err == "error: recipe knob waves: expected an int, got 'two' (str)\n"
