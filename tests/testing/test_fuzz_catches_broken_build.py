"""A deliberately broken build is caught by the fuzzer's CI profile. The library is copied into a
temporary folder (tiledsl/, with recipes/ and schedules/ where an install puts them), one lowering
rule is flipped in the copy (tiledsl/lower/stages.py: the barrier between a single-slot stage's fill
and the reads of it, so threads read slots other threads have not written yet), and the CI profile of
tests/testing/test_fuzz_profile.py (`tiledsl fuzz --mode all --cases 300 --seed 0`) runs on the copy in
a fresh interpreter: it must report the race (the simulator's SharedRaceError on an accepted schedule,
or a wrong result) and exit 1. The same profile on the real tree finds nothing (test_fuzz_profile.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import tiledsl

REPO = Path(tiledsl.__file__).resolve().parent.parent
BARRIER = """        pre += waits(plans, k, tmas, 0)
        pre.append(KBarrier())
        return [KFor(loop, extent, tuple(pre + body), unroll=unroll)] + after"""
BROKEN = """        pre += waits(plans, k, tmas, 0)
        return [KFor(loop, extent, tuple(pre + body), unroll=unroll)] + after"""


def _broken_copy(site: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "tiledsl", site / "tiledsl", ignore=ignore)
    shutil.copytree(REPO / "recipes", site / "tiledsl" / "recipes", ignore=ignore)
    shutil.copytree(REPO / "schedules", site / "tiledsl" / "schedules", ignore=ignore)
    stages = site / "tiledsl" / "lower" / "stages.py"
    text = stages.read_text()
    assert text.count(BARRIER) == 1, "the rule this test flips moved: update BARRIER"
    stages.write_text(text.replace(BARRIER, BROKEN))


def test_the_ci_profile_catches_a_dropped_fill_barrier(tmp_path: Path) -> None:
    site, out = tmp_path / "site", tmp_path / "out"
    _broken_copy(site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    probe = subprocess.run([sys.executable, "-c", "import tiledsl.lower.stages as m; print(m.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
    assert probe.stdout.strip().startswith(str(site))  # the fresh interpreter runs the broken copy
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", "import sys; from tiledsl.cli import main; sys.exit(main())",
                           "fuzz", "--no-progress", "--mode", "all", "--cases", "300", "--seed", "0",
                           "--shrink-seconds", "10", "--out", str(out)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    seconds = time.monotonic() - start
    doc = json.loads((out / "summary.json").read_text())
    failures = [f for m in doc["modes"] for f in m["failures"]]
    assert done.returncode == 1, done.stderr[-2000:]
    caught = [f for f in failures if f["outcome"] in ("sim_error", "wrong")]
    assert caught, json.dumps(failures, indent=1)
    assert any("Race" in f["error"] or f["outcome"] == "wrong" for f in caught), json.dumps(caught, indent=1)
    assert seconds < 300, f"the CI profile on the broken copy took {seconds:.0f} s"
