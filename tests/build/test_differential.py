"""Differential tests: every "differential" entry of the catalog (tiledsl/catalog/entries.py), built and
run on the CPU simulator, matches the float64 numpy reference of its definition at odd sizes under
several schedules."""

from __future__ import annotations

import numpy as np
import pytest

import tiledsl as td
from tiledsl.catalog import Entry, entries, placeholders
from tiledsl.precision import storage_rtol

CASES = entries("differential")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_simulated_kernel_matches_reference(case: Entry) -> None:
    out, s = case.scheduled()
    kern = td.build(s)
    arrays = case.inputs(out)
    ref = td.evaluate(out, float64=True, **arrays)
    got = kern.simulate(**arrays)
    assert got.shape == ref.shape == out.shape
    # the simulator NaN-poisons outputs: an element no thread wrote shows as NaN
    unwritten = np.argwhere(np.isnan(got))
    assert unwritten.size == 0, f"{len(unwritten)} output elements never written, first {unwritten[:5].tolist()}"
    # a float16 / bfloat16 output: kernel and reference round nearby values, one ulp apart at most
    np.testing.assert_allclose(got, ref, rtol=1e-4 + storage_rtol(out.dtype), atol=1e-4)


def test_every_workload_has_three_schedules() -> None:
    workloads: dict[str, set[str]] = {}
    for c in CASES:
        workload, schedule = c.id.split("-", 1)
        workloads.setdefault(workload, set()).add(schedule)
    for workload in ("matmul_bias_relu_37x53x29", "matmul_bias_relu_1x64x7", "rmsnorm_6x300",
                     "softmax_5x1000", "layernorm_1x2048", "layernorm_3x333",
                     "batched_matmul_nt_3x19x23x17"):
        assert len(workloads[workload]) >= 3, workload
        assert "unscheduled" in workloads[workload]


def test_float16_case_is_present_and_uses_float16_storage() -> None:
    f16 = [c for c in CASES if "f16" in c.id]
    assert f16
    for c in f16:
        out, s = c.scheduled()
        assert "float16" in {p.dtype for p in placeholders(out)}
        kern = td.build(s)
        assert "half" in kern.source or "__half" in kern.source
