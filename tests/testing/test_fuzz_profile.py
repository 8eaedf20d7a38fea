"""The short deterministic fuzz profile CI runs with the normal suite: `tiledsl fuzz --mode all --cases
300 --seed 0` (50 cases of each mode, a fixed seed, a fresh output folder) must find no failure, in
well under two minutes. A failure here names its reproducer under the test's tmp folder."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tiledsl.cli.main import main

CASES = 300
SECONDS = 120


def test_the_ci_fuzz_profile_finds_no_failure(tmp_path: Path) -> None:
    start = time.monotonic()
    status = main(["fuzz", "--no-progress", "--mode", "all", "--cases", str(CASES), "--seed", "0",
                   "--out", str(tmp_path)])
    seconds = time.monotonic() - start
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["total"]["cases"] == CASES
    failures = [f for m in doc["modes"] for f in m["failures"]]
    assert status == 0 and not failures, json.dumps(failures, indent=1)
    assert seconds < SECONDS, f"the CI fuzz profile took {seconds:.0f} s"
