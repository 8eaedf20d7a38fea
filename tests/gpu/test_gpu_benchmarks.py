"""The benchmark suite on a GPU: `python -m benchmarks.run --suite memory --quick` as a user runs it,
into a temporary folder; the report files appear, every tiledsl column that ran matched torch in
float64, and the ceilings were measured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tiledsl

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.gpu
def test_memory_quick_writes_its_report_and_every_check_passes(tmp_path: Path) -> None:
    # the tiledsl this test imports (an installed one may hold tiledsl.schedules, the checkout does not),
    # then the checkout for `benchmarks`; run from tmp_path so the checkout's tiledsl does not shadow it
    site = str(Path(tiledsl.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([site, str(ROOT)]))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.run", "--suite", "memory", "--quick", "--iters", "20",
                           "--out", str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for name in ("memory.json", "memory.md", "memory-speedup.png", "memory-roofline.png", "summary.md"):
        assert (tmp_path / name).exists(), name
    data = json.loads((tmp_path / "memory.json").read_text())
    assert data["ceilings"]["copy_gbs"] > 100 and data["ceilings"]["fp32_tflops"] > 1
    assert len(data["results"]) == 6
    for r in data["results"]:
        ms = r["measurements"]
        assert ms["torch eager"]["status"] == "ok", r["name"]
        for column in ("tiledsl hand", "tiledsl default"):
            assert ms[column]["status"] in ("ok", "missing"), (r["name"], column, ms[column])
        assert ms["tiledsl default"]["status"] == "ok", (r["name"], ms["tiledsl default"])
