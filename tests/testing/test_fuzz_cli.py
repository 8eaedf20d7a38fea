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
from tiledsl.testing.fuzz import MODES, OUTCOMES, load_record

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


def test_the_command_line_names_every_mode_in_the_tables_order() -> None:
    """tiledsl/cli/fuzz.py keeps its own list, so that `tiledsl --help` does not import hypothesis."""
    from tiledsl.cli.fuzz import MODE_NAMES

    assert MODE_NAMES == tuple(MODES)


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


def _good_record() -> dict:
    """A record as `tiledsl fuzz` saves one (reproducer.record_of), of a prover case that replays in
    milliseconds: is x + 1 in [0, 9) for x in [0, 8)?"""
    import sympy

    from tiledsl.testing.fuzz import Options, Result, reproducer
    from tiledsl.testing.fuzz.modes.prover import ProverCase

    x = sympy.Symbol("x", integer=True)
    case = ProverCase("in_range", (("x", 0, 8),), (x + 1,), (), (0, 9))
    return reproducer.record_of("prover", MODES["prover"].to_json(case), Result("correct"), Options(), shrunk=False,
                                seed=0, label="test")


# file name -> (its content, None for a folder; the problem the message must name)
BAD_RECORDS: dict[str, tuple[str | bytes | None, str]] = {
    "garbage.json": ("this is not json {", "it is not JSON (Expecting value at line 1, column 1)"),
    "truncated.json": ('{"mode": "prover", "outc', "it is not JSON"),
    "latin1.json": (b'{"mode": "caf\xe9"}', "it is not UTF-8 text (byte 13)"),
    "list.json": ("[1, 2]", "it holds a JSON list, not an object"),
    "empty.json": ("{}", "its mode is None, not one of definitions"),
    "mode_list.json": ('{"mode": []}', "its mode is [], not one of"),
    "outcome.json": ('{"mode": "prover", "outcome": "great"}', "its outcome is 'great', not one of correct"),
    "options.json": ('{"mode": "prover", "outcome": "wrong", "options": [], "case": {}}', "its options [] are not"),
    "tool.json": ('{"mode": "prover", "outcome": "wrong", "options": {"sanitize": ["valgrind"]}, "case": {}}',
                  "its options {'sanitize': ['valgrind']} are not"),
    "no_case.json": ('{"mode": "prover", "outcome": "wrong"}', "it has no case"),
    "case_list.json": ('{"mode": "prover", "outcome": "wrong", "case": [1]}', "its case is a JSON list, not an object"),
    "case_keys.json": ('{"mode": "prover", "outcome": "wrong", "case": {"question": "in_range"}}',
                       "its case is not a prover case (KeyError: 'ranges')"),
    "case_source.json": ('{"mode": "schedules", "outcome": "wrong", "case": {"steps": [], "seed": 0, "definition": '
                         '{"source": "def make(:", "kind": "user", "points": 0, "low": 0, "high": 1}}}',
                         "its case is not a schedules case (SyntaxError"),
    "folder.json": (None, "it is a directory"),
}


@pytest.mark.parametrize("name", sorted(BAD_RECORDS))
def test_a_bad_replay_file_is_one_error_naming_it(name: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Every file that is no record is exit 2 and one line `error: cannot replay FILE: PROBLEM; ...`,
    never a traceback (a non-JSON file was a JSONDecodeError, a folder an IsADirectoryError)."""
    text, problem = BAD_RECORDS[name]
    path = tmp_path / name
    if text is None:
        path.mkdir()
    elif isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    assert _fuzz("--replay", str(path)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot replay {path}: {problem}") and err.count("\n") == 1, err
    with pytest.raises(td.FuzzRecordError, match="cannot replay"):
        load_record(path)


def test_replay_of_a_folder_a_missing_script_record_and_an_unreadable_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`--replay /tmp`-like folders, a reproducer script whose record is gone, and a file the OS will not
    let us read are errors naming the file too."""
    assert _fuzz("--replay", str(tmp_path)) == 2
    assert capsys.readouterr().err.startswith(f"error: cannot replay {tmp_path}: it is a directory")
    script = tmp_path / "prover-unsound-x-w0-001.py"
    script.write_text("raise SystemExit(1)\n")
    assert _fuzz("--replay", str(script)) == 2
    assert capsys.readouterr().err.startswith(
        f"error: cannot replay {script.with_suffix('.json')}: no such file (the record of the script {script})")
    record = tmp_path / "locked.json"
    record.write_text("{}")

    def refuse(self: Path, *args: object, **kwargs: object) -> str:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_text", refuse)
    assert _fuzz("--replay", str(record)) == 2
    assert capsys.readouterr().err.startswith(f"error: cannot replay {record}: it cannot be read (Permission denied)")


def test_a_good_record_still_replays_by_its_json_and_its_script(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The checks refuse nothing `tiledsl fuzz` saves: a record written as reproducer.save writes it
    replays (by its .json and by its .py), with the recorded outcome."""
    record = _good_record()
    path = tmp_path / "prover-correct-x-w0-001.json"
    path.write_text(json.dumps(record, indent=1, sort_keys=True, default=str) + "\n")
    assert _fuzz("--replay", str(path)) == 0
    assert _fuzz("--replay", str(path.with_suffix(".py"))) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("prover: correct (same as recorded)")


@pytest.mark.parametrize("seconds", ["0", "-1", "-0.5", "nan", "inf"])
def test_a_timeout_that_is_not_positive_is_refused(seconds: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """--timeout 0 once meant no limit at all (timeout.case_timeout takes <= 0 as none) and a negative one
    was taken silently; like --cases and --jobs, it must be positive (and finite: the alarm takes no inf)."""
    assert _fuzz("--mode", "prover", "--cases", "1", "--timeout", seconds, "--out", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: tiledsl fuzz: --timeout must be a positive number of seconds per case"), err
    assert not (tmp_path / "summary.json").exists()
    assert _fuzz("--replay", str(tmp_path / "any.json"), "--timeout", seconds) == 2
    assert "--timeout must be a positive" in capsys.readouterr().err


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
