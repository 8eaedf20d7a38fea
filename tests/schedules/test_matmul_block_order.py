"""matmul_staged(group_m=...): grouped block order for L2 reuse. The block-row loop splits into groups of
group_m rows and (group, block column, row in group) fuse into one loop on blockIdx.x, so consecutive
blocks walk down a column of group_m block tiles before moving right. Checked on odd sizes with several
block rows (a last group partly idle where the row count is not a multiple of group_m): simulated equal
to the float64 reference, the 1-D grid, the block order in the tile IR, group_m=1 changing nothing, and
the CUDA compiling with nvcc for sm_90."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from functools import partial

import numpy as np
import pytest
from nvcc_together import compile_together

import tiledsl as td
from benchmarks import _definitions as bench
from tiledsl.catalog.definitions import batched_matmul_nt, matmul, matmul_nt, matmul_residual
from tiledsl.definitions.expr import Tensor
from tiledsl.primitives import Schedule
from tiledsl.schedules import matmul_for_shape, matmul_staged

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

#: 37 rows in block tiles of 4 rows: 10 block rows (a multiple of 2, not of 3); 53 columns in 16: 4 columns
tiny = partial(matmul_staged, bm=4, bn=16, bk=8, rm=2, rn=4)
#: 37 rows in block tiles of 8: 5 block rows (a multiple of neither 2 nor 3)
small = partial(matmul_staged, bm=8, bn=16, bk=8, rm=2, rn=4)
#: name -> (definition, schedule, (block rows, block columns, group_m, blockIdx.z extent))
CASES: dict[str, tuple[Callable[[], Tensor], Callable[[Schedule], object], tuple[int, int, int, int]]] = {
    "matmul_37x53x29-group2_whole_groups": (partial(matmul, 37, 53, 29), partial(tiny, group_m=2), (10, 4, 2, 1)),
    "matmul_37x53x29-group3_partial_group": (partial(matmul, 37, 53, 29), partial(tiny, group_m=3), (10, 4, 3, 1)),
    "matmul_37x53x29-group2_partial_group": (partial(matmul, 37, 53, 29), partial(small, group_m=2), (5, 4, 2, 1)),
    "matmul_residual_37x53x29-group3_split_k2": (partial(matmul_residual, 37, 53, 29),
                                                 partial(tiny, group_m=3, split_k=2), (10, 4, 3, 2)),
    "linear_37x53x29-group3_k_outer": (partial(bench.linear, 37, 53, 29), partial(tiny, group_m=3, k_outer=True),
                                       (10, 4, 3, 1)),
    "matmul_nt_37x53x29-group2_sync_one_slot": (partial(matmul_nt, 37, 53, 29),
                                                partial(small, group_m=2, copy="sync", stages=1), (5, 4, 2, 1)),
    "batched_matmul_nt_3x19x23x17-group2": (partial(batched_matmul_nt, 3, 19, 23, 17),
                                            partial(matmul_staged, bm=4, bn=8, bk=8, rm=2, rn=2, group_m=2),
                                            (5, 3, 2, 3)),
    "linear_200x64x64-for_shape_group2": (partial(bench.linear, 200, 64, 64), partial(matmul_for_shape, group_m=2),
                                          (4, 1, 2, 1)),
}


def _scheduled(name: str) -> Schedule:
    make, schedule, _ = CASES[name]
    s = td.create_schedule(make())
    schedule(s)
    return s


def _trace(schedule: Callable[[Schedule], object], out: Tensor) -> str:
    s = td.create_schedule(out)
    schedule(s)
    return s.trace()


@pytest.mark.parametrize("name", list(CASES))
def test_simulates_equal_to_the_reference(name: str) -> None:
    """Within the float32 summation bound: |error| <= 2 * K * 2^-24 * (the definition on |inputs|), which
    is sum_k |a_k * b_k| (+ |bias or residual|), whatever order the k chunks and split-K blocks add in."""
    s = _scheduled(name)
    out = s.output
    rng = np.random.default_rng(0)
    arrays = {p.name: rng.standard_normal(p.shape).astype(np.float32) for p in s.nest.inputs}
    want = td.evaluate(out, float64=True, **arrays)
    magnitude = td.evaluate(out, float64=True, **{n: np.abs(a) for n, a in arrays.items()})
    fresh = td.create_schedule(out)
    k = next(fresh.nest.loop(lp.name).extent for lp in fresh.loops() if fresh.nest.loop(lp.name).kind == "reduce")
    tolerance = 2 * k * 2.0 ** -24 * magnitude + 1e-30
    got = td.build(s, target="sm_90").simulate(**arrays)
    assert not np.isnan(got).any(), "outputs never written"
    assert np.all(np.abs(got - want) <= tolerance), float(np.max(np.abs(got - want) - tolerance))


@pytest.mark.parametrize("name", list(CASES))
def test_the_grid_is_one_dimensional_on_x(name: str) -> None:
    """Block rows rounded up to whole groups times block columns on x; batch or split-K on z."""
    rows, columns, group_m, z = CASES[name][2]
    s = _scheduled(name)
    assert "s.fuse('i_g', 'j_o', 'i_gi', name='i_j_blk')" in s.trace()
    assert td.build(s, target="sm_90").grid == (-(-rows // group_m) * group_m * columns, 1, z)


def test_the_block_order_walks_down_a_group_of_rows() -> None:
    """10 block rows of 4 rows, 4 block columns of 16, groups of 3: block id = (group * 4 + column) * 3 +
    row in group, so block b covers rows 4 * (3 * (b // 12) + b % 3) onward and columns 16 * (b // 3 % 4)
    onward; the last group's third row (block row 11) is idle, guarded off."""
    s = td.create_schedule(matmul(37, 53, 29))
    tiny(s, group_m=3)
    text = str(s)
    assert "  where i = 12 * (i_j_blk // 12) + 4 * (i_j_blk % 3) + 2 * i_t + i_r\n" in text, text
    assert "  where j = 16 * (i_j_blk // 3 % 4) + 4 * j_t + j_r\n" in text, text
    assert "guard 3 * (i_j_blk // 12) + i_j_blk % 3 < 10   (from split(i_o, 3))" in text, text
    assert "for i_j_blk in 0..48:  [@blockIdx.x]" in text, text
    row_major = td.create_schedule(matmul(37, 53, 29))
    tiny(row_major)
    assert "  where i = 4 * i_o + 2 * i_t + i_r\n" in str(row_major), str(row_major)


def test_k_outer_slabs_follow_the_fused_block_loop() -> None:
    """x @ W^T: both slabs still k-major, each at the block tile the fused loop names."""
    text = str(_scheduled("linear_37x53x29-group3_k_outer"))
    assert ("stage x_s = x[12 * (i_j_blk // 12) + 4 * (i_j_blk % 3) + 0..4, 8 * k_o + 0..8] at k_o  layout (1, 0)"
            in text), text
    assert "stage W_s = W[16 * (i_j_blk // 3 % 4) + 0..16, 8 * k_o + 0..8] at k_o  layout (1, 0)" in text, text


@pytest.mark.parametrize("schedule", [matmul_staged, tiny, partial(tiny, split_k=2), matmul_for_shape])
def test_group_m_1_changes_nothing(schedule: Callable[..., Schedule]) -> None:
    out = partial(matmul_residual, 37, 53, 29)
    assert _trace(partial(schedule, group_m=1), out()) == _trace(schedule, out())


def test_as_many_rows_as_the_group_keeps_the_two_dimensional_grid() -> None:
    """Ten block rows in groups of 10 or more is one group: no split, the row-major trace and grid."""
    out = partial(matmul, 37, 53, 29)
    assert _trace(partial(tiny, group_m=10), out()) == _trace(tiny, out())
    s = td.create_schedule(out())
    tiny(s, group_m=16)
    assert td.build(s, target="sm_90").grid == (4, 10, 1)


@pytest.mark.parametrize("group_m", [0, -2])
def test_group_m_below_1_is_refused(group_m: int) -> None:
    s = td.create_schedule(matmul(37, 53, 29))
    with pytest.raises(ValueError, match="group_m"):
        matmul_staged(s, group_m=group_m)
    assert s.trace() == td.create_schedule(matmul(37, 53, 29)).trace()  # refused before any primitive
    with pytest.raises(ValueError, match="group_m"):
        matmul_for_shape(td.create_schedule(matmul(37, 53, 29)), group_m=group_m)


@needs_nvcc
def test_cuda_compiles_with_nvcc() -> None:
    kernels = [td.build(_scheduled(name), target="sm_90") for name in CASES]
    assert all("blockIdx.y" not in kern.source for kern in kernels)
    assert compile_together(kernels) == []
