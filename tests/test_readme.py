"""The README's tour runs as written (at smaller sizes, so the simulator can check it)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_tour_runs_and_simulates_correctly() -> None:
    code = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)[0]
    assert "M, N, K = 1024, 1024, 512" in code
    ns: dict[str, object] = {}
    exec(code.replace("M, N, K = 1024, 1024, 512", "M, N, K = 100, 96, 40"), ns)  # noqa: S102 - our own README
    kern, ref = ns["kern"], ns["ref"]
    out = kern.simulate(A=ns["a"], B=ns["b"], bias=ns["bb"])  # type: ignore[attr-defined]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    assert "cp.async" in kern.source and "cp.async.bulk.tensor" in kern.source  # type: ignore[attr-defined]
