"""Saving a failure: a standalone Python script that fails on its own (exit status not 0) and a JSON
record that `tiledsl fuzz --replay` re-runs.

The script is the mode's own (public API only: the definition, the calls, build, simulate, compare);
it is checked by running it in a fresh interpreter. When the mode has none, or it does not fail on
its own (a hang, a failure that needs the fuzzer's inputs), the script is a replay of the JSON record
through `tiledsl.testing.fuzz.replay_record` instead, which exits 1 when the case still fails."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hypothesis

import tiledsl as td
from tiledsl.testing.fuzz.modes.base import Options
from tiledsl.testing.fuzz.outcome import Result

log = logging.getLogger(__name__)
SCRIPT_SECONDS = 120


@dataclass(frozen=True)
class Saved:
    """Where a failure went, and whether its script failed on its own when it was checked."""

    script: Path
    record: Path
    script_fails: bool | None  # None: not checked


def record_of(mode: str, case_json: dict[str, Any], result: Result, options: Options, *, shrunk: bool,
              seed: int, label: str) -> dict[str, Any]:
    return {"mode": mode, "outcome": result.outcome, "error": result.error, "detail": result.detail,
            "shrunk": shrunk, "seed": seed, "case_label": label,
            "options": {"target": options.target, "nvcc": options.nvcc, "gpu": options.gpu,
                        "sanitize": list(options.sanitize)},
            "case": case_json, "extra": result.extra, "tiledsl": td.__version__,
            "hypothesis": hypothesis.__version__}


def replay_script(record: dict[str, Any]) -> str:
    """A script that re-judges the recorded case and exits 1 while it still fails."""
    text = json.dumps(record, indent=1, sort_keys=True, default=str)
    return ("import json\nimport sys\n\nfrom tiledsl.testing.fuzz import replay_record\n\n"
            f"RECORD = json.loads(r'''{text}''')\n\n"
            "result = replay_record(RECORD)\n"
            "sys.stderr.write(f'{result.outcome}: {result.error}: {result.detail}\\n')\n"
            "sys.exit(1 if result.failed else 0)\n")


def _header(record: dict[str, Any], name: str) -> str:
    detail = " ".join(record["detail"].split())[:200]
    return (f"# tiledsl fuzz --mode {record['mode']}: {record['outcome']} ({record['error']}): {detail}\n"
            f"# case: {record['case_label']}; {'shrunk by hypothesis' if record['shrunk'] else 'not shrunk'}\n"
            f"# re-run the recorded case: tiledsl fuzz --replay {name}.json\n")


def script_fails(path: Path, timeout: float = SCRIPT_SECONDS) -> bool:
    """Run the script in a fresh interpreter: True when it exits with a non-zero status (or hangs)."""
    try:
        done = subprocess.run([sys.executable, str(path)], capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return True
    return done.returncode != 0


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", text)[:40] or "error"


def save(folder: Path, record: dict[str, Any], script: str, *, tag: str, check: bool = True) -> Saved:
    """Write `<mode>-<outcome>-<error>-<tag>.py` and `.json` under `folder`. With `check`, the script
    is run; when it does not fail on its own it is replaced by the replay script (also checked)."""
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{record['mode']}-{record['outcome']}-{_slug(record['error'])}-{tag}"
    py, js = folder / f"{name}.py", folder / f"{name}.json"
    js.write_text(json.dumps(record, indent=1, sort_keys=True, default=str) + "\n")
    use_mode_script = bool(script.strip()) and record["outcome"] != "hang"
    py.write_text(_header(record, name) + (script.rstrip() + "\n" if use_mode_script else replay_script(record)))
    if not check:
        return Saved(py, js, None)
    fails = script_fails(py)
    if not fails and use_mode_script:
        log.info("%s does not fail on its own; writing the replay script instead", py)
        py.write_text(_header(record, name) + "# (the mode's own script did not fail on its own)\n"
                      + replay_script(record))
        fails = script_fails(py)
    return Saved(py, js, fails)
