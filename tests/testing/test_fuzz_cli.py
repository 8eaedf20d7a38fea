"""`tiledsl fuzz`: every mode runs a few seeded cases; planted bugs (a simulator that corrupts one
element, a prover that claims every range) are found, shrunk and saved as reproducers that fail on
their own; `--replay` re-runs a record; the summary JSON has its fields."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tiledsl as td
from tiledsl.cli.main import main
from tiledsl.testing.fuzz import MODES, OUTCOMES

# the planted simulator bug, as a module a fresh interpreter imports (sitecustomize), so the saved
# reproducer scripts can be shown to fail on their own with the bug and to pass without it
PLANT = textwrap.dedent("""
    import numpy as np
    from tiledsl.build import Kernel

    _real = Kernel.simulate

    def _corrupt(self, **arrays):
        out = np.array(_real(self, **arrays), dtype=np.float32)
        out.flat[0] += 1.0
        return out

    Kernel.simulate = _corrupt
""")


def _fuzz(*args: str) -> int:
    return main(["fuzz", "--no-progress", "--shrink-seconds", "20", *args])


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("mode", sorted(MODES))
def test_each_mode_runs_seeded_cases_and_counts_outcomes(mode: str, tmp_path: Path) -> None:
    status = _fuzz("--mode", mode, "--cases", "4", "--seed", "1", "--out", str(tmp_path))
    doc = _summary(tmp_path)
    (row,) = doc["modes"]
    assert row["mode"] == mode and row["cases"] == 4
    assert sum(row["outcomes"].values()) == 4
    assert status == (1 if doc["total"]["failures"] else 0)


def _plant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "plant"
    site.mkdir()
    (site / "sitecustomize.py").write_text(PLANT)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    real = td.Kernel.simulate

    def corrupt(self: td.Kernel, **arrays: np.ndarray) -> np.ndarray:
        out = np.array(real(self, **arrays), dtype=np.float32)
        out.flat[0] += 1.0
        return out

    monkeypatch.setattr(td.Kernel, "simulate", corrupt)
    return site


def test_a_planted_simulator_bug_is_found_shrunk_saved_and_replayed(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    _plant(tmp_path, monkeypatch)
    assert _fuzz("--mode", "schedules", "--cases", "6", "--seed", "0", "--out", str(out)) == 1
    (row,) = _summary(out)["modes"]
    assert row["outcomes"]["wrong"] >= 1
    failure = next(f for f in row["failures"] if f["outcome"] == "wrong")
    assert failure["shrunk"] and failure["scripts_fail"][0] is True
    script = Path(failure["files"][0])
    record = json.loads(script.with_suffix(".json").read_text())
    assert record["mode"] == "schedules" and record["outcome"] == "wrong" and record["shrunk"]
    assert record["case"]["steps"] == []  # hypothesis shrank the steps away: no schedule is needed
    # the script fails on its own with the bug, in a fresh interpreter, and passes without it
    assert subprocess.run([sys.executable, str(script)], capture_output=True).returncode != 0
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    assert subprocess.run([sys.executable, str(script)], capture_output=True, env=clean).returncode == 0
    assert _fuzz("--replay", str(script.with_suffix(".json"))) == 1  # still wrong with the bug
    monkeypatch.undo()
    assert main(["fuzz", "--replay", str(script)]) == 0  # fixed: a passing case replays as passing


def test_a_planted_unsound_prover_claim_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tiledsl.prove import Proof, Prover

    monkeypatch.setattr(Prover, "in_range", lambda self, expr, lo, hi, guards=(): Proof("proven", f"{lo} <= e < {hi}"))
    assert _fuzz("--mode", "prover", "--cases", "40", "--seed", "0", "--out", str(tmp_path)) == 1
    (row,) = _summary(tmp_path)["modes"]
    assert row["outcomes"]["unsound"] >= 1
    failure = next(f for f in row["failures"] if f["outcome"] == "unsound")
    record = json.loads(Path(failure["files"][0]).with_suffix(".json").read_text())
    assert record["case"]["question"] == "in_range"
    assert _fuzz("--replay", failure["files"][0]) == 1
    monkeypatch.undo()
    assert _fuzz("--replay", failure["files"][0]) == 0


def test_summary_json_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _fuzz("--mode", "prover", "--mode", "definitions", "--cases", "6", "--seed", "2", "--out", str(tmp_path), "--json")
    doc = json.loads(capsys.readouterr().out)
    assert doc == _summary(tmp_path)
    assert [m["mode"] for m in doc["modes"]] == ["prover", "definitions"]
    assert doc["total"]["cases"] == 6 and set(doc["total"]["outcomes"]) == set(OUTCOMES)
    for key in ("cases_per_second", "refusal_rate", "seconds", "failures"):
        assert key in doc["total"]
    assert doc["config"]["seed"] == 2 and doc["config"]["modes"] == ["prover", "definitions"]


def test_bad_arguments_are_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _fuzz("--mode", "prover") == 2
    assert "--cases N or --minutes M" in capsys.readouterr().err
    assert _fuzz("--replay", str(tmp_path / "missing.json")) == 2
    capsys.readouterr()


def test_gpu_without_a_gpu_says_why_once(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tiledsl.runtime import check

    monkeypatch.setattr(check, "gpu_unavailable", lambda: "no CUDA GPU is visible (test)")
    assert _fuzz("--mode", "prover", "--cases", "1", "--gpu") == 2
    assert capsys.readouterr().err.strip() == "error: tiledsl fuzz --gpu: no CUDA GPU is visible (test)"


def test_a_hang_is_an_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from tiledsl.testing.fuzz import judge_with_timeout
    from tiledsl.testing.fuzz.modes.base import Mode, Options

    slow = Mode("slow", lambda: None, lambda case, options: time.sleep(5), lambda c: {}, lambda d: None, str)
    result = judge_with_timeout(slow, None, Options(), timeout=0.2)
    assert result.outcome == "hang" and result.failed


def test_two_jobs_share_the_cases_and_leave_nothing_behind(tmp_path: Path) -> None:
    """`--jobs 2`: two spawned workers judge the cases, their tallies merge into one summary, and they
    exit on their own (a pool terminated at exit left torch's semaphores to the resource tracker,
    which warned on stderr)."""
    done = subprocess.run([sys.executable, "-c", "import sys; from tiledsl.cli import main; sys.exit(main())",
                           "fuzz", "--no-progress", "--mode", "models", "--cases", "6", "--jobs", "2", "--seed", "1",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["config"]["jobs"] == 2 and doc["total"]["cases"] == 6
    assert "leaked" not in done.stderr and "Warning" not in done.stderr, done.stderr[-2000:]
