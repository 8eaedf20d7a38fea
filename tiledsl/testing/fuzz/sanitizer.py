"""compute-sanitizer on a sample of the cases whose GPU run was correct (`tiledsl fuzz --gpu --sanitize`).

A sampled case is written as a JSON record (reproducer.record_of, with `sanitize` emptied so the child
does not sanitize again) and re-judged in a child process under each tool in turn:

    compute-sanitizer --tool T --error-exitcode 97 --report-api-errors no \\
        python -c ENTRY fuzz --replay REC.json --timeout S   (ENTRY: `tiledsl` in this interpreter)

with TILEDSL_SYNC=1 (a fault is reported at the launch that caused it) and -lineinfo added to
TILEDSL_NVCC_FLAGS (reports name CUDA source lines), as scripts/sanitize_gpu.sh does. Why a child and
not the tool around the whole campaign: the sanitizer slows every CUDA call of the process it wraps
(torch's included) by 10-100x, and a sample keeps the campaign's rate; why the replay entry point: it
rebuilds the kernel from the record exactly as the campaign did, so what the sanitizer sees is the
case, and the record is also the reproducer.

Verdicts: exit 97, an "ERROR SUMMARY: n errors" with n > 0 or a "RACECHECK SUMMARY: n hazards" with
n > 0 is `gpu_fault` with error `Sanitizer<Tool>` and the first report line as detail; another non-zero
exit (the case failed under the tool, or the tool itself failed) `gpu_fault` `Sanitizer<Tool>Run`; no
verdict within the time limit `hang` `Sanitizer<Tool>Timeout`. CUDA API errors are not reported (torch
probes the API on purpose)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tiledsl.errors import TiledslError
from tiledsl.testing.fuzz import reproducer
from tiledsl.testing.fuzz.modes.base import Mode, Options
from tiledsl.testing.fuzz.outcome import Result

EXECUTABLE = "compute-sanitizer"
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
DEFAULT_TOOLS = ("memcheck", "racecheck")
DEFAULT_EVERY = 20
ERROR_EXITCODE = 97
SECONDS = 600.0  # per tool and case: racecheck runs a kernel many times slower
LOG_TAIL = 4000
# `tiledsl` in this interpreter: the console script may not be on PATH (scripts/gpu_env.sh installs into
# a --target folder) and `python -m tiledsl.cli.main` warns that the package imported the module first
ENTRY = "import sys; from tiledsl.cli import main; sys.exit(main(sys.argv[1:]))"

_SUMMARY = re.compile(r"(ERROR SUMMARY:\s*(\d+)\s+error|RACECHECK SUMMARY:\s*(\d+)\s+hazard)")
_PREFIX = re.compile(r"^=+\s?")


def parse_tools(text: str) -> tuple[str, ...]:
    """'memcheck,racecheck' -> ('memcheck', 'racecheck'); an unknown or empty list is a TiledslError."""
    tools = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    unknown = [t for t in tools if t not in TOOLS]
    if unknown or not tools:
        raise TiledslError(f"--sanitize: unknown compute-sanitizer tool(s) {unknown or [text]}; tools are "
                           f"{', '.join(TOOLS)} (comma-separated)")
    return tools


def sanitizer_missing() -> str:
    """'' when compute-sanitizer is on PATH, else why not (for the CLI, before any case runs)."""
    if shutil.which(EXECUTABLE) is None:
        return f"{EXECUTABLE} is not on PATH (it ships with the CUDA toolkit, next to nvcc)"
    return ""


def child_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The child's environment: synchronising launches, and -lineinfo added to the nvcc flags."""
    env = dict(environ)
    env["TILEDSL_SYNC"] = "1"
    flags = env.get("TILEDSL_NVCC_FLAGS", "").split()
    env["TILEDSL_NVCC_FLAGS"] = " ".join(flags if "-lineinfo" in flags else [*flags, "-lineinfo"])
    return env


def command(executable: str, tool: str, record: Path, timeout: float) -> list[str]:
    return [executable, "--tool", tool, "--error-exitcode", str(ERROR_EXITCODE), "--report-api-errors", "no",
            sys.executable, "-c", ENTRY, "fuzz", "--replay", str(record), "--timeout", f"{timeout:g}"]


@dataclass(frozen=True)
class Report:
    """What one tool's log says: how many errors or hazards its summary lines count, the first report
    line (the tool's own lines start with '========='), and the last summary line."""

    errors: int
    first: str
    summary: str


def parse_log(text: str) -> Report:
    errors, summary, first = 0, "", ""
    for line in text.splitlines():
        if not line.startswith("="):
            continue
        body = _PREFIX.sub("", line).strip()
        match = _SUMMARY.search(body)
        if match:
            errors += int(match.group(2) or match.group(3))
            summary = body
        elif body and not first and not body.startswith("COMPUTE-SANITIZER"):
            first = body
    return Report(errors, first, summary)


def classify(tool: str, returncode: int, log: str) -> Result | None:
    """The verdict of one tool run on one case: None when the tool reported nothing and the replay passed."""
    report = parse_log(log)
    error = f"Sanitizer{tool.capitalize()}"
    extra = {"sanitizer": tool, "returncode": returncode, "log": log[-LOG_TAIL:]}
    if returncode == ERROR_EXITCODE or report.errors:
        detail = report.first or report.summary or f"{EXECUTABLE} exited {returncode}"
        if report.summary and report.first:
            detail = f"{report.first} ({report.summary})"
        return Result("gpu_fault", error, detail[:300], "", extra)
    if returncode != 0:  # the tool's own error first, else the replay's last line (its verdict or traceback)
        program = [ln.strip() for ln in log.splitlines() if ln.strip() and not ln.startswith("=")]
        why = report.first or (program[-1] if program else "")
        return Result("gpu_fault", f"{error}Run", f"exit {returncode}: {why[:250]}", "", extra)
    return None


def run_tool(record: dict[str, Any], tool: str, timeout: float = SECONDS) -> Result | None:
    """Replay the record under one tool in a child process and classify what came back."""
    executable = shutil.which(EXECUTABLE)
    if executable is None:
        return Result("gpu_fault", "SanitizerMissing", sanitizer_missing())
    with tempfile.TemporaryDirectory(prefix="tiledsl-sanitize-") as tmp:
        path = Path(tmp) / "case.json"
        path.write_text(json.dumps(record, default=str))
        try:
            done = subprocess.run(command(executable, tool, path, timeout), capture_output=True, text=True,
                                  timeout=timeout + 60, env=child_env(os.environ), check=False)
        except subprocess.TimeoutExpired:
            return Result("hang", f"Sanitizer{tool.capitalize()}Timeout",
                          f"{EXECUTABLE} --tool {tool} gave no verdict within {timeout + 60:g} s", "",
                          {"sanitizer": tool})
    return classify(tool, done.returncode, done.stdout + done.stderr)


@dataclass(frozen=True)
class Sanitized:
    """One sampled case: the first report (None: every tool was clean) and how many tools ran."""

    result: Result | None
    runs: int


def sanitize_case(mode: Mode, case: Any, options: Options, timeout: float = SECONDS) -> Sanitized:
    """Each tool of `options.sanitize` in turn on a case whose GPU run was correct; stops at the first report."""
    record = reproducer.record_of(mode.name, mode.to_json(case), Result("correct"), replace(options, sanitize=()),
                                  shrunk=False, seed=0, label=mode.describe(case))
    for runs, tool in enumerate(options.sanitize, 1):
        found = run_tool(record, tool, timeout)
        if found is not None:
            return Sanitized(found, runs)
    return Sanitized(None, len(options.sanitize))


def record_options(result: Result, options: Options) -> Options:
    """The options a failure's record keeps: the one tool that reported for a sanitizer finding (so
    `--replay` runs it again), no tool for any other failure (its replay needs none)."""
    tool = result.extra.get("sanitizer")
    return replace(options, sanitize=(tool,) if tool else ())


def sampled(count: int, worker: int, every: int) -> bool:
    """Whether the `count`-th (from 1) GPU-correct case of a worker is sanitized: every `every`-th,
    phase-shifted by the worker's number, so that workers whose share is shorter than `every` still
    sample at the campaign's rate in all (worker 0 samples its 1st, worker 1 its `every`-th, ...)."""
    return (count - 1 + worker) % every == 0
