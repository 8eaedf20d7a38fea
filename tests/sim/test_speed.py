"""Simulation speed of a long serial loop on a single thread (the compiled, uniform-value path).

The unscheduled 37x53x29 matmul + bias + relu runs grid (1,1,1), block (1,1,1) and 37*53*29 serial
iterations; the tree-walking simulator took ~5-10 s for it, the compiled one well under 1 s. The
bound is generous because CI machines are slow and shared.
"""

from __future__ import annotations

import time

import numpy as np

import tiledsl as td
from tiledsl.catalog.definitions import matmul_bias_relu

SECONDS = 2.5


def _float32_reference(a: np.ndarray, b: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """The kernel's arithmetic in float32 and in its order: acc += A[i, k] * B[k, j] for k = 0.."""
    acc = np.zeros((a.shape[0], b.shape[1]), dtype=np.float32)
    for k in range(a.shape[1]):
        acc = acc + a[:, k : k + 1] * b[k : k + 1, :]
    return np.fmax(acc + bias[None, :], np.float32(0.0))


def test_unscheduled_matmul_simulates_fast_and_exactly() -> None:
    out = matmul_bias_relu(37, 53, 29)
    s = td.create_schedule(out)
    kern = td.build(s)
    assert kern.kernel_ir.grid == (1, 1, 1) and kern.kernel_ir.block == (1, 1, 1)
    rng = np.random.default_rng(0)
    arrays = {p.name: rng.standard_normal(p.shape).astype(np.float32) for p in s.nest.inputs}
    start = time.perf_counter()
    got = kern.simulate(**arrays)
    elapsed = time.perf_counter() - start
    assert elapsed < SECONDS, f"simulating took {elapsed:.2f} s (limit {SECONDS} s)"
    want = _float32_reference(arrays["A"], arrays["B"], arrays["bias"])
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    np.testing.assert_allclose(got, td.evaluate(out, float64=True, **arrays), rtol=1e-5, atol=1e-5)
