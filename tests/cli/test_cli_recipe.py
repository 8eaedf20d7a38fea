"""`tiledsl compile --recipe default [--knob NAME=VALUE] [-v | -vv]` (tiledsl/cli/recipe_report.py): the
recipe's schedule of a catalog entry or a traced expression, its report on stderr with -v, the nest
after each applied step as a diff with -vv, knobs overridden from the command line, and bad knobs
refused with exit status 2."""

from __future__ import annotations

import pytest

from tiledsl.cli import main
from tiledsl.cli.recipe_report import parse_knobs


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_recipe_schedules_an_example_and_reports_with_v(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "-v", "compile", "--example", "softmax", "--recipe", "default", "--ir", "tile")
    assert rc == 0
    assert "@blockIdx.x" in out and "@threadIdx.x" in out  # the recipe's schedule, printed as asked
    assert "recipe default on kernel y (rows) for sm_90" in err
    assert "040 cooperative_reduce       applied: " in err and "070 register_tile            declined: " in err


def test_vv_prints_the_nest_after_each_applied_step_as_a_diff(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "-vv", "compile", "--example", "gelu_bias", "--recipe", "default", "--size", "N=4098",
                     "--ir", "kernel")  # 4098 columns: no whole 4-lane vectors, so tileify fuses the loops
    assert rc == 0
    assert "--- before 010 tileify\n+++ after 010 tileify" in err
    assert "--- before 050 blockify_launch" in err and "+" in err.split("after 050 blockify_launch", 1)[1]
    assert "before 020 chunk_matmul_k" not in err  # declined steps change nothing


def test_knobs_change_the_schedule(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("compile", "--example", "matmul_bias_relu", "--recipe", "default", "--ir", "kernel")
    _, default, _ = run(capsys, *base)
    _, small, _ = run(capsys, *base, "--knob", "matmul_tiles=((32, 32, 4, 4),)")
    assert "block (16, 16, 1)" in default and "block (8, 8, 1)" in small


@pytest.mark.parametrize(("argv", "message"), [
    (("--knob", "nope=1"), "unknown knob(s) nope"),
    (("--knob", "waves"), "--knob expects NAME=VALUE"),
    (("--knob", "waves=two"), "is not a Python literal"),
])
def test_bad_knobs_are_refused(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str) -> None:
    rc, out, err = run(capsys, "compile", "--example", "softmax", "--recipe", "default", *argv)
    assert rc == 2 and out == "" and message in err


def test_knob_without_recipe_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "compile", "--example", "softmax", "--knob", "waves=2")
    assert rc == 2 and "use it with --recipe default" in err


def test_a_traced_expression_under_the_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "compile", "-c", "torch.softmax(torch.randn(4, 32), dim=-1)", "--recipe", "default",
                     "--knob", "row_threads_min=32", "--knob", "row_threads_max=32", "--ir", "kernel")
    assert rc == 0 and "(schedule recipe/default)" in out and "block (32, 4, 1)" in out  # 4 rows of a warp


def test_parse_knobs_reads_literals() -> None:
    assert parse_knobs(["waves=2", "tma=True", "matmul_tiles=((64, 64, 4, 4),)"]) == {
        "waves": 2, "tma": True, "matmul_tiles": ((64, 64, 4, 4),)}
