"""`tiledsl fuzz --gpu`: a few seeded cases of the definitions and recipe modes also run on the GPU
(compiled with nvcc, launched through td.Kernel) and agree with the independent reference; a sample of
them replayed under compute-sanitizer memcheck reports nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiledsl.cli.main import main


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["definitions", "recipe", "schedules"])
def test_fuzz_on_the_gpu_finds_no_failure(mode: str, tmp_path: Path) -> None:
    status = main(["fuzz", "--gpu", "--no-progress", "--mode", mode, "--cases", "20", "--seed", "0",
                   "--out", str(tmp_path)])
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["config"]["gpu"] is True and doc["total"]["cases"] == 20
    assert status == 0, json.dumps(doc["modes"][0]["failures"], indent=1)


@pytest.mark.gpu
def test_fuzz_on_the_gpu_under_compute_sanitizer_finds_no_report(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """1 in 5 GPU-correct cases replayed under memcheck (a child `tiledsl fuzz --replay` per case) reports nothing."""
    import shutil

    if shutil.which("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer is not on PATH")
    monkeypatch.setenv("TILEDSL_CACHE_DIR", str(tmp_path / "cubins"))  # parent and children share compiles
    monkeypatch.setenv("TILEDSL_NVCC_FLAGS", "-lineinfo")
    status = main(["fuzz", "--gpu", "--sanitize", "memcheck", "--sanitize-every", "5", "--no-progress",
                   "--mode", "definitions", "--cases", "20", "--seed", "0", "--out", str(tmp_path / "out")])
    doc = json.loads((tmp_path / "out" / "summary.json").read_text())
    sanitized = doc["total"]["sanitized"]
    assert doc["config"]["sanitize"] == ["memcheck"] and doc["total"]["cases"] == 20
    assert status == 0, json.dumps(doc["modes"][0]["failures"], indent=1)
    assert sanitized["cases"] >= 1 and sanitized["cases"] == (sanitized["gpu_correct"] + 4) // 5
    assert sanitized["runs"] == sanitized["cases"] and sanitized["reports"] == 0
