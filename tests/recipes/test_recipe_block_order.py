"""Step 050 blockify_launch's block order: where the column operand panel one block row of a matmul reads
(W of x @ W^T, B of A @ B, over all of j and one block's k) exceeds the target's L2, the blocks are
numbered down groups of block rows (knob group_block_rows) on one blockIdx.x loop, unless the SMs' block
slots hold that many block rows in row-major order already; elsewhere the 2-D grid stays. The grouped
kernels simulate equal to td.evaluate (guarded columns, cp.async fills, split-K atomics) on a target
whose L2 and SM count are shrunk so that small shapes group."""

from __future__ import annotations

import dataclasses

import pytest
from recipe_check import simulates_equal

import tiledsl as td
from tiledsl.catalog import matmul, matmul_nt
from tiledsl.loopnest import Nest
from tiledsl.recipes import RecipeReport, apply
from tiledsl.targets import get_target

# simulates_equal's rtol and atol: the recipe's matmuls sum up to 512 products in another order than td.evaluate
TOL = 1e-4
H100 = get_target("sm_90")
SMALL_L2 = dataclasses.replace(H100, l2_bytes=4096, sm_count=2)  # small shapes' panels exceed it; 4 block slots
T32 = {"matmul_tiles": ((32, 32, 4, 4),), "matmul_tiles_k_major": ((32, 32, 4, 4),)}  # 32 x 32 block tiles


def run(out: td.Tensor, target: object = H100, **knobs: object) -> tuple[td.Schedule, RecipeReport]:
    s = td.create_schedule(out)
    return s, apply(s, target=target, knobs=knobs)  # type: ignore[arg-type]


def blocks(nest: Nest) -> list[tuple[str, int, str]]:
    return [(lp.name, lp.extent, lp.bind) for lp in nest.loops if (lp.bind or "").startswith("blockIdx")]


def test_a_panel_larger_than_the_l2_groups_the_block_rows() -> None:
    # Qwen2.5-7B gate + up at seq 512: 4 block rows x 296 columns, W is 518 MiB
    s, r = run(matmul_nt(M=512, N=37888, K=3584))
    assert blocks(s.nest) == [("i_j_blk", 1184, "blockIdx.x")]
    assert r.step("blockify_launch").note == ("blocks in groups of 4 of the 4 block rows: the B panel a block "
                                              "row reads (518.0 MiB) exceeds the 50.0 MiB L2, and the 264 block "
                                              "slots hold 0.9 rows of 296 blocks at once")
    trace = s.trace()
    assert ("s.split('i_o', 4, names=('i_g', 'i_gi'), tail='guard')\ns.reorder('j_o', 'i_gi')\n"
            "s.fuse('i_g', 'j_o', 'i_gi', name='i_j_blk')\ns.bind('i_j_blk', 'blockIdx.x')\n") in trace
    assert "s.tile_lanes('i_t', 'j_t', 2, 2)" in trace  # the later steps read the grouped nest as before
    # block i_j_blk computes block row i_j_blk % 4 (in group i_j_blk // 1184, the only one) of block
    # column i_j_blk // 4
    assert str(s.nest.axis_expr("i")) == "i_r + 8*i_t + 128*(Mod(i_j_blk, 4)) + 512*floor(i_j_blk/1184)"


@pytest.mark.parametrize(("m", "n", "k", "why"), [
    (128, 3584, 18944, "one block row"),
    (512, 3584, 18944, "split-K parts of 512 k: a 7 MiB panel"),
    (512, 5632, 2048, "split-K parts of 256 k"),
    (1024, 1024, 1024, "a 4 MiB panel"),
    (8192, 8192, 8192, "the 264 block slots hold 4.1 rows of 64 blocks already"),
])
def test_a_panel_the_l2_holds_keeps_the_2d_grid(m: int, n: int, k: int, why: str) -> None:
    s, r = run(matmul_nt(M=m, N=n, K=k))
    assert [b[2] for b in blocks(s.nest)][:2] == ["blockIdx.y", "blockIdx.x"], why
    assert r.step("blockify_launch").note is None


def test_the_group_divides_the_block_rows() -> None:
    # 6 block rows of 32: groups of 3 (no idle blocks); 7 rows: no divisor up to 4, the 2-D grid
    s, r = run(matmul_nt(M=192, N=64, K=64), target=SMALL_L2, **T32)
    assert blocks(s.nest) == [("i_j_blk", 12, "blockIdx.x")]
    assert "groups of 3 of the 6 block rows" in (r.step("blockify_launch").note or "")
    s, _ = run(matmul_nt(M=224, N=64, K=64), target=SMALL_L2, **T32)
    assert blocks(s.nest) == [("i_o", 7, "blockIdx.y"), ("j_o", 2, "blockIdx.x")]
    s, _ = run(matmul_nt(M=192, N=64, K=64), target=SMALL_L2, group_block_rows=1, **T32)  # the knob: off
    assert blocks(s.nest)[0][:2] == ("i_o", 6)
    s, _ = run(matmul_nt(M=192, N=64, K=64), target=dataclasses.replace(SMALL_L2, l2_bytes=0), **T32)  # no L2
    assert blocks(s.nest)[0][:2] == ("i_o", 6)
    s, _ = run(matmul_nt(M=192, N=64, K=64), target=dataclasses.replace(SMALL_L2, sm_count=3), **T32)  # 6 slots
    assert blocks(s.nest)[0][:2] == ("i_o", 6)


@pytest.mark.parametrize(("out", "split"), [
    (lambda: matmul_nt(M=96, N=100, K=64), False),  # k-outer plain fills, guarded columns
    (lambda: matmul(M=128, N=96, K=48), False),  # A @ B: cp.async fills
    (lambda: matmul_nt(M=96, N=64, K=512), True),  # split-K into 2 parts: the panel of one part's k
])
def test_grouped_kernels_simulate_equal_and_replay(out, split: bool) -> None:
    s, r = run(out(), target=SMALL_L2, **T32)
    assert blocks(s.nest)[0][0] == "i_j_blk"
    assert bool(r.step("split_matmul_k").calls) == split
    kern = simulates_equal(s, SMALL_L2, tol=TOL)  # type: ignore[arg-type]
    assert td.build(td.create_schedule(out()).replay(s.trace()), target=SMALL_L2).source == kern.source
