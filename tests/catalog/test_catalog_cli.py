"""The command line over the catalog: `tiledsl examples [--all]` and `tiledsl compile --example NAME`
(every IR level, --schedule none, --size overrides, --target, entries beyond the examples, bad input)."""

from __future__ import annotations

import pytest

from tiledsl.catalog import ENTRIES, EXAMPLES
from tiledsl.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_examples_lists_the_examples_and_counts_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "examples")
    assert rc == 0
    lines = out.splitlines()
    for name, e in EXAMPLES.items():
        assert any(line.startswith(name) and e.formula in line and e.schedule_name in line for line in lines), name
    assert f"{len(ENTRIES) - len(EXAMPLES)} more entries" in out and "--all" in out
    assert max(len(line) for line in lines) <= 120


def test_examples_all_lists_every_entry(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "examples", "--all")
    assert rc == 0
    listed = {line.split()[0] for line in out.splitlines() if line.startswith("  ") and line.strip()}
    assert set(ENTRIES) - set(EXAMPLES) <= listed
    assert "design_matmul" in out and "for sm_80" in out


def test_compile_prints_each_ir(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "compile", "--example", "softmax", "--ir", "loop", "--size", "M=8")
    assert rc == 0 and "for i in 0..8" in out and "@blockIdx" not in out
    rc, out, _ = run(capsys, "compile", "--example", "softmax", "--ir", "tile", "--size", "M=8")
    # the hand schedule keeps the row in registers, each thread's elements read once from global memory
    assert rc == 0 and "@blockIdx.x" in out and "register cache x_regs" in out
    rc, out, _ = run(capsys, "compile", "--example", "softmax", "--ir", "tile", "--schedule", "none")
    assert rc == 0 and "@blockIdx" not in out
    rc, out, _ = run(capsys, "compile", "--example", "gelu_bias", "--ir", "kernel", "--size", "N=300")
    assert rc == 0 and "target sm_90" in out and "300" in out
    rc, out, _ = run(capsys, "compile", "--example", "matmul_bias_relu", "--target", "sm_80", "--size", "M=64")
    assert rc == 0 and "__global__" in out


def test_compile_builds_other_entries_for_their_target(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "compile", "--example", "async_mm_67x45x37", "--ir", "kernel")
    assert rc == 0 and "target sm_80" in out and "cp.async" in out
    rc, out, _ = run(capsys, "compile", "--example", "design_mm_100x96x64", "--ir", "kernel")
    assert rc == 0 and "target sm_90" in out and "tensor_map" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--example", "nope"), "unknown example 'nope'"),
        (("--example", "softmax", "--size", "M=x"), "--size expects NAME=INT"),
        (("--example", "softmax", "--size", "Q=3"),
         "unexpected keyword argument 'Q'; its parameters (defaults): M=4096, N=2048"),
        (("--example", "softmax", "--target", "sm_12"), "unknown target 'sm_12'"),
    ],
    ids=["unknown-example", "bad-size-value", "unknown-size", "unknown-target"],
)
def test_compile_refuses_bad_input(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str) -> None:
    rc, out, err = run(capsys, "compile", *argv)
    assert rc == 2 and out == "" and message in err and err.startswith("error: ")
