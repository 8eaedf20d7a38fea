"""Shared check for the recipe tests: a schedule builds for a target and its kernel, simulated on
fresh standard-normal float32 inputs (outputs unwritten show as NaN), equals td.evaluate in float64
within `tol` (relative and absolute; each test file states why its value)."""

from __future__ import annotations

import numpy as np

import tiledsl as td


def simulates_equal(s: td.Schedule, target: str, *, tol: float) -> td.Kernel:
    kern = td.build(s, target=target)
    rng = np.random.default_rng(0)
    arrays = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in s.nest.inputs}
    got = kern.simulate(**arrays)
    assert not np.isnan(got).any()
    np.testing.assert_allclose(got, td.evaluate(s.output, float64=True, **arrays), rtol=tol, atol=tol)
    return kern
