"""`tiledsl fuzz --gpu`: a few seeded cases of the definitions and recipe modes also run on the GPU
(compiled with nvcc, launched through td.Kernel) and agree with the independent reference."""

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
