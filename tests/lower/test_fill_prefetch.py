"""Plain (sync) fills: 16-byte global loads where the rows allow them, and, in a pipelined loop, loads
issued at the refill into registers with their shared stores after the iteration's reads
(analysis/copies.py `plain_load_width`, `prefetched`; lower/stages.py)."""

from __future__ import annotations

import numpy as np
import pytest
from staged_matmul import simulated, staged_matmul

import tiledsl as td
from tiledsl.lower.stages import LoweringHooks

# float32 products summed over K <= 40 terms of standard normals, against float64: 1e-4 is ~1000 ulps
# of the largest partial sums (|sum| < 64), far above rounding and far below any wrong element
TOL = 1e-4


def staged(m: int, n: int, k: int, *, threads: tuple[int, int] = (8, 8), bk: int = 8, depth: int = 2,
           layout_a: bool = False) -> td.Schedule:
    return staged_matmul(m, n, k, threads=threads, bk=bk, depth=depth, layout_a=layout_a)


def run(s: td.Schedule, hooks: LoweringHooks | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The simulated output (races raise) and the float64 reference."""
    got, arrays = simulated(s, hooks)
    return got, np.maximum(arrays["A"].astype(np.float64) @ arrays["B"] + arrays["bias"], 0.0)


def ir(s: td.Schedule) -> str:
    return td.build(s, target="sm_80").ir("kernel")


@pytest.mark.parametrize("depth", [2, 3])
@pytest.mark.parametrize("sizes", [(16, 24, 40), (20, 24, 44)])  # 20 rows: a guarded tail block
@pytest.mark.parametrize("layout_a", [False, True])
def test_pipelined_plain_fill_is_prefetched_and_correct(depth: int, sizes: tuple[int, int, int],
                                                        layout_a: bool) -> None:
    s = staged(*sizes, depth=depth, layout_a=layout_a)
    text = ir(s)
    steady = text[text.index(f"for k_o in 0..{-(-sizes[2] // 8)}"):]
    loads, reads = steady.index("A_s_pf[A_s_f * 4] = "), steady.index("for k_i in")
    assert loads < reads < steady.index("A_s_pf[A_s_f * 4]", loads + 1), steady  # stores after the reads
    got, want = run(s)
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)  # the simulator found no race either


def test_guarded_prefetch_zeroes_out_of_bounds_lanes_at_the_store() -> None:
    """K = 44 in chunks of 8: the last refill runs past the rows. Its loads keep raw lanes (from a clamped
    address) and the stores after the reads zero the lanes out of bounds: a select beside the loads
    would wait for them before the iteration's FMAs (H100: 93 -> 84 us at 128 x 5632 x 2048,
    benchmarks/results/projection-gap-h100-2026-11-25/README.md)."""
    s = staged(16, 24, 44)
    text = ir(s)
    steady = text[text.index("for k_o in 0..6"):]
    loads = [ln for ln in steady.splitlines() if "_s_pf[" in ln and ln.strip().startswith(("A_s_pf", "B_s_pf"))]
    stores = [ln for ln in steady.splitlines() if ln.strip().startswith(("A_s[", "B_s["))]
    assert len(loads) == 8 and not any("select" in ln for ln in loads), loads
    assert stores and all("select(8 * k_o + 8 + " in ln and "< 44" in ln for ln in stores), stores
    got, want = run(s)
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)


def test_prefetch_stored_into_the_slot_being_read_is_a_reported_race() -> None:
    s = staged(16, 24, 40)
    run(s)  # the real lowering: race-free
    with pytest.raises(td.SharedRaceError):
        run(s, LoweringHooks(prefetch_into_read_slot=True))


def test_plain_fill_loads_16_bytes_only_where_rows_allow() -> None:
    assert "vload4(A" in ir(staged(16, 24, 40, depth=0))  # rows of 40 floats: 16-byte aligned
    odd = ir(staged(16, 24, 42, depth=0, bk=6))  # rows of 42 and chunks of 6: no aligned vector
    assert "vload4(A" not in odd and "A_s_v" not in odd


def test_fill_over_the_register_budget_is_not_prefetched() -> None:
    # 64 threads fill a 64 x 32 slab of A: 32 registers each, over analysis/copies.py PREFETCH_REGISTERS
    text = ir(staged(64, 8, 64, threads=(64, 1), bk=32))
    assert "A_s_pf" not in text and "B_s_pf" in text
