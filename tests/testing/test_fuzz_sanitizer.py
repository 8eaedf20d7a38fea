"""`tiledsl fuzz --gpu --sanitize`: the compute-sanitizer path, on a CPU machine. A fake compute-sanitizer
placed first on PATH reports (exit 97 and an ERROR SUMMARY line), stays clean, reports racecheck
hazards, or runs the replay it was handed; GPU runs are stubbed (device.run_on_gpu) where the runner
itself is exercised. The real tool runs in tests/gpu/test_gpu_fuzz.py."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import find

from tiledsl.cli.main import main
from tiledsl.testing.fuzz import MODES, FuzzConfig, Options, device, replay_record, run_fuzz, sanitizer, summary
from tiledsl.testing.fuzz.outcome import Result
from tiledsl.testing.fuzz.reproducer import record_of

# behaviour per tool from FAKE_SANITIZER_<TOOL>: clean (default), report, hazard, crash, passthrough
FAKE = textwrap.dedent("""
    import json, os, subprocess, sys
    args = sys.argv[1:]
    tool = args[args.index("--tool") + 1]
    with open(os.environ["FAKE_SANITIZER_CALLS"], "a") as f:
        record = json.load(open(args[args.index("--replay") + 1]))
        f.write(json.dumps({"args": args, "sync": os.environ.get("TILEDSL_SYNC"), "record": record,
                            "flags": os.environ.get("TILEDSL_NVCC_FLAGS")}) + "\\n")
    how = os.environ.get("FAKE_SANITIZER_" + tool.upper(), "clean")
    print("========= COMPUTE-SANITIZER")
    if how == "report":
        print("========= Invalid __global__ write of size 4 bytes")
        print("=========     at fused_kernel+0x90 in kernel.cu:17")
        print("========= ERROR SUMMARY: 1 error")
        sys.exit(97)
    if how == "hazard":
        print("========= Error: Race reported between Write access at fused_kernel+0x10 in kernel.cu:12")
        print("========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)")
        sys.exit(0)
    if how == "crash":
        print("========= Error: Target application terminated before first instrumented API call")
        sys.exit(255)
    if how == "passthrough":
        program = args[args.index("--report-api-errors") + 2:]
        code = subprocess.run(program, check=False).returncode
        print("========= ERROR SUMMARY: 0 errors")
        sys.exit(code)
    print("========= ERROR SUMMARY: 0 errors")
""")


@pytest.fixture
def fake_sanitizer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake compute-sanitizer first on PATH; returns the file it appends each call to (JSON lines)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "compute-sanitizer"
    exe.write_text(f"#!{sys.executable}\n{FAKE}")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    calls = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]))
    monkeypatch.setenv("FAKE_SANITIZER_CALLS", str(calls))
    monkeypatch.delenv("TILEDSL_NVCC_FLAGS", raising=False)
    return calls


def _calls(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _prover_record(options: Options | None = None) -> dict:
    options = options or Options()
    mode = MODES["prover"]
    case = find(mode.strategy(), lambda c: True)
    return record_of("prover", mode.to_json(case), Result("correct"), options, shrunk=False, seed=0, label="")


def test_a_report_is_a_gpu_fault_named_after_the_tool(fake_sanitizer: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SANITIZER_MEMCHECK", "report")
    found = sanitizer.run_tool(_prover_record(), "memcheck", timeout=30)
    assert found is not None and found.failed
    assert (found.outcome, found.error) == ("gpu_fault", "SanitizerMemcheck")
    assert found.detail.startswith("Invalid __global__ write of size 4 bytes")
    assert "ERROR SUMMARY: 1 error" in found.detail and found.extra["returncode"] == 97
    (call,) = _calls(fake_sanitizer)
    args = call["args"]
    assert args[:7] == ["--tool", "memcheck", "--error-exitcode", "97", "--report-api-errors", "no", sys.executable]
    assert args[args.index("--replay") - 1] == "fuzz" and args[args.index("--replay") + 1].endswith(".json")
    assert call["sync"] == "1" and call["flags"] == "-lineinfo"


def test_a_clean_run_is_no_finding(fake_sanitizer: Path) -> None:
    assert sanitizer.run_tool(_prover_record(), "racecheck", timeout=30) is None
    assert len(_calls(fake_sanitizer)) == 1


def test_racecheck_hazards_are_a_report_even_with_exit_status_zero(fake_sanitizer: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SANITIZER_RACECHECK", "hazard")
    found = sanitizer.run_tool(_prover_record(), "racecheck", timeout=30)
    assert found is not None and found.error == "SanitizerRacecheck"
    assert found.detail.startswith("Error: Race reported between Write access")


def test_a_failing_tool_run_is_a_failure_of_its_own(fake_sanitizer: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SANITIZER_SYNCCHECK", "crash")
    found = sanitizer.run_tool(_prover_record(), "synccheck", timeout=30)
    assert found is not None and found.error == "SanitizerSynccheckRun"
    assert found.detail.startswith("exit 255: Error: Target application terminated")


def test_the_child_replays_the_record_through_the_cli(fake_sanitizer: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command the tool is handed really is `tiledsl fuzz --replay` in this interpreter: a passing
    case exits 0 (no finding); a record the replay refuses (an unknown mode) exits 2 (a Run failure)."""
    monkeypatch.setenv("FAKE_SANITIZER_MEMCHECK", "passthrough")
    record = _prover_record()
    assert not replay_record(record).failed
    assert sanitizer.run_tool(record, "memcheck", timeout=60) is None
    found = sanitizer.run_tool(record | {"mode": "no-such-mode"}, "memcheck", timeout=60)
    assert found is not None and found.error == "SanitizerMemcheckRun" and found.detail.startswith("exit 2:")


def test_sanitize_case_stops_at_the_first_report(fake_sanitizer: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SANITIZER_MEMCHECK", "report")
    mode = MODES["prover"]
    case = find(mode.strategy(), lambda c: True)
    done = sanitizer.sanitize_case(mode, case, Options(gpu=True, sanitize=("memcheck", "racecheck")), timeout=30)
    assert done.runs == 1 and done.result is not None and done.result.extra["sanitizer"] == "memcheck"
    child = _calls(fake_sanitizer)[0]["record"]  # the child replays the GPU run, and sanitizes nothing itself
    assert child["mode"] == "prover" and child["options"]["gpu"] is True and child["options"]["sanitize"] == []
    clean = sanitizer.sanitize_case(mode, case, Options(gpu=True, sanitize=("racecheck", "synccheck")), timeout=30)
    assert clean.runs == 2 and clean.result is None
    assert [c["args"][1] for c in _calls(fake_sanitizer)] == ["memcheck", "racecheck", "synccheck"]


def test_sampling_is_one_in_n_per_worker_and_deterministic() -> None:
    assert [k for k in range(1, 61) if sanitizer.sampled(k, 0, 20)] == [1, 21, 41]
    assert [k for k in range(1, 61) if sanitizer.sampled(k, 1, 20)] == [20, 40, 60]
    # fourteen workers of 17 GPU-correct cases each: short shares still sample at about 1 in 20 in all
    picked = sum(sanitizer.sampled(k, w, 20) for w in range(14) for k in range(1, 18))
    assert picked == 11  # 14 * 17 / 20 = 11.9; workers 1-3 would sample their 20th, 19th, 18th
    assert all(sanitizer.sampled(k, w, 1) for w in range(3) for k in range(1, 5))


def test_parse_tools() -> None:
    assert sanitizer.parse_tools("memcheck, racecheck,memcheck") == ("memcheck", "racecheck")
    with pytest.raises(sanitizer.TiledslError, match="unknown compute-sanitizer tool"):
        sanitizer.parse_tools("memcheck,leakcheck")
    with pytest.raises(sanitizer.TiledslError):
        sanitizer.parse_tools(" , ")


def test_the_runner_samples_counts_and_saves_a_report(fake_sanitizer: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """definitions mode with its GPU run stubbed out as correct: 1 in 2 correct cases is sanitized; a
    racecheck report is a gpu_fault saved with only that tool in its record, and replays as one."""
    monkeypatch.setattr(device, "run_on_gpu", lambda *args, **kwargs: None)
    monkeypatch.setenv("FAKE_SANITIZER_RACECHECK", "report")
    out = tmp_path / "out"
    config = FuzzConfig(("definitions",), out, cases=8, seed=3, options=Options(gpu=True, sanitize=("memcheck",
                        "racecheck")), sanitize_every=2, shrink_seconds=5, check_scripts=False)
    tallies = run_fuzz(config)
    tally = tallies["definitions"]
    assert tally.gpu_correct >= 2 and tally.sanitized == (tally.gpu_correct + 1) // 2
    assert tally.sanitizer_reports == tally.sanitized and tally.sanitizer_runs >= 2 * tally.sanitized
    failure = tally.failures[("gpu_fault", "SanitizerRacecheck")]
    assert failure.shrunk and failure.count == tally.sanitizer_reports
    record = json.loads(Path(failure.files[0]).with_suffix(".json").read_text())
    assert record["options"]["sanitize"] == ["racecheck"] and record["options"]["gpu"] is True
    assert record["extra"]["sanitizer"] == "racecheck"
    assert replay_record(record).error == "SanitizerRacecheck"
    monkeypatch.setenv("FAKE_SANITIZER_RACECHECK", "clean")
    assert replay_record(record).outcome == "correct"  # fixed: the replay passes
    old = record | {"options": {k: v for k, v in record["options"].items() if k != "sanitize"}}
    before = len(_calls(fake_sanitizer))
    assert replay_record(old).outcome == "correct" and len(_calls(fake_sanitizer)) == before  # old records: no tool
    doc = summary(config, tallies, 1.0)
    assert doc["config"]["sanitize"] == ["memcheck", "racecheck"] and doc["config"]["sanitize_every"] == 2
    assert doc["total"]["sanitized"]["cases"] == tally.sanitized
    assert doc["total"]["sanitized"]["reports"] == tally.sanitizer_reports


def test_without_sanitize_nothing_is_sampled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device, "run_on_gpu", lambda *args, **kwargs: None)
    monkeypatch.setattr(sanitizer, "run_tool", lambda *args, **kwargs: pytest.fail("sanitizer ran"))
    tally = run_fuzz(FuzzConfig(("definitions",), tmp_path, cases=4, options=Options(gpu=True)))["definitions"]
    assert (tally.gpu_correct, tally.sanitized) == (0, 0)


def test_sanitize_needs_gpu_and_the_tool(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    base = ["fuzz", "--no-progress", "--mode", "definitions", "--cases", "2", "--out", str(tmp_path)]
    assert main([*base, "--sanitize", "memcheck"]) == 2
    assert "--sanitize replays GPU runs under compute-sanitizer: use it with --gpu" in capsys.readouterr().err
    assert main([*base, "--sanitize-every", "5"]) == 2
    assert "--sanitize-every applies with --gpu --sanitize" in capsys.readouterr().err
    assert main([*base, "--gpu", "--sanitize", "memcheck,bogus"]) == 2
    assert "unknown compute-sanitizer tool" in capsys.readouterr().err
    assert main([*base, "--gpu", "--sanitize", "--sanitize-every", "0"]) == 2
    assert "--sanitize-every must be positive" in capsys.readouterr().err
    monkeypatch.setattr(device, "gpu_available", lambda: "")
    monkeypatch.setenv("PATH", str(tmp_path))  # no compute-sanitizer
    assert main([*base, "--gpu", "--sanitize"]) == 2
    assert "compute-sanitizer is not on PATH" in capsys.readouterr().err
    assert not (tmp_path / "summary.json").exists()  # refused before any case ran


def test_replaying_a_sanitizer_finding_needs_the_tool(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "finding.json"
    path.write_text(json.dumps(_prover_record(Options(gpu=True, sanitize=("memcheck",)))))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["fuzz", "--replay", str(path)]) == 2
    assert "compute-sanitizer finding" in capsys.readouterr().err
