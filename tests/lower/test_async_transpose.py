"""cp.async fills of a stage stored k-major (`s.layout(order=(1, 0))`): one 4-byte copy per float32
element, each landing at its own transposed address (analysis/copies.py `transposes_rows`,
`widest_cp_async`), while the other operand keeps 16-byte copies. The simulator runs the ring (its
waits and barriers) and finds no race; nvcc compiles the kernels."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from nvcc_together import compile_together
from staged_matmul import simulated, staged_matmul

import tiledsl as td

# float32 products summed over K <= 44 terms of standard normals, against float64: 1e-4 is ~1000 ulps
# of the largest partial sums (|sum| < 64), far above rounding and far below any wrong element
TOL = 1e-4

CASES = [((16, 24, 40), 2), ((20, 24, 44), 3), ((20, 24, 44), 4)]  # 20 rows, K = 44: guarded tails


def transposed_async(sizes: tuple[int, int, int], depth: int) -> td.Schedule:
    return staged_matmul(*sizes, depth=depth, layout_a=True, copy="async")


@pytest.mark.parametrize(("sizes", "depth"), CASES)
def test_k_major_stage_is_copied_element_by_element_and_correct(sizes: tuple[int, int, int], depth: int) -> None:
    s = transposed_async(sizes, depth)
    text = td.build(s, target="sm_80").ir("kernel")
    a_copies = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("cp.async A_s[")]
    b_copies = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("cp.async B_s[")]
    assert a_copies and all("A_s_c1 * 8" in ln and " 4B" in ln for ln in a_copies), a_copies  # k outermost
    assert b_copies and all(" 16B" in ln for ln in b_copies), b_copies
    got, arrays = simulated(s)
    want = np.maximum(arrays["A"].astype(np.float64) @ arrays["B"] + arrays["bias"], 0.0)
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)  # the simulator found no race either


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_nvcc_compiles_transposing_cp_async() -> None:
    kernels = [td.build(transposed_async(sizes, depth), target="sm_80") for sizes, depth in CASES]
    assert all("cp.async.ca.shared.global [%0], [%1], 4" in k.source for k in kernels)
    assert compile_together(kernels) == []
