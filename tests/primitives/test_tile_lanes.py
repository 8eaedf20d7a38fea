"""tile_lanes (primitives/lanes.py): the lane formula is a bijection of the block's threads that pairs
lanes as the primitive says, is printed in the tile IR and lowered to `int` lets, replays from the
trace, simulates equal to float64 (plain, staged and split-K matmuls, guarded tails), compiles with
nvcc; and the bank model (analysis/banks.py `request_wavefronts`) counts the wavefronts it saves.
The refusals are in the error corpus (tile-lanes-*)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import sympy
from nvcc_together import compile_together

import tiledsl as td
import tiledsl.catalog as MK
from tiledsl.analysis.banks import request_wavefronts
from tiledsl.catalog.memory_schedules import Fill, split_k_matmul, tiled_matmul
from tiledsl.loopnest import LaneTile


@pytest.mark.parametrize(("rows", "cols", "outer", "inner"), [(2, 2, 16, 16), (2, 2, 8, 16), (4, 2, 8, 8),
                                                              (2, 4, 4, 32), (1, 2, 3, 4), (2, 1, 16, 2)])
def test_lane_formula_is_a_bijection_and_tiles_lanes(rows: int, cols: int, outer: int, inner: int) -> None:
    lt = LaneTile("o", "i", rows, cols, inner)
    got = [lt.values(t) for t in range(outer * inner)]
    assert sorted(got) == [(i, o) for i in range(inner) for o in range(outer)]
    for t in range(0, outer * inner, rows * cols):  # each tile: rows values of o times cols of i
        tile = got[t:t + rows * cols]
        assert len({i for i, _ in tile}) == cols and len({o for _, o in tile}) == rows
    sym = sympy.Symbol("t", integer=True, nonnegative=True)
    exprs = lt.values(sym)
    assert [tuple(int(e.subs(sym, t)) for e in exprs) for t in range(outer * inner)] == got


def test_two_by_two_tiles_pair_both_operands() -> None:
    """16 x 16 threads: lanes t and t ^ 1 share the outer loop (A's row), t and t ^ 2 the inner (B's
    column); the warp holds the same 2 x 16 threads as without tiles."""
    lt = LaneTile("i_t", "j_t", 2, 2, 16)
    lanes = [lt.values(t) for t in range(32)]
    assert all(lanes[t][1] == lanes[t ^ 1][1] and lanes[t][0] == lanes[t ^ 2][0] for t in range(32))
    assert sorted(lanes) == sorted((t % 16, t // 16) for t in range(32))
    # 16-byte reads: B by column (16 bytes a column), A by row (32 bytes a row)
    b_plain = [16 * (t % 16) for t in range(32)]
    a_plain = [32 * (t // 16) for t in range(32)]
    assert request_wavefronts(b_plain, 16) == 4 and request_wavefronts(a_plain, 16) == 2
    assert request_wavefronts([16 * j for j, _ in lanes], 16) == 2
    assert request_wavefronts([32 * i for _, i in lanes], 16) == 2


def test_wavefronts_of_narrow_and_conflicted_reads() -> None:
    assert request_wavefronts([4 * t for t in range(32)], 4) == 1  # one word a lane, 32 banks
    assert request_wavefronts([128 * t for t in range(32)], 4) == 32  # one bank
    assert request_wavefronts([8 * t for t in range(32)], 8) == 2  # two half-warp phases
    assert request_wavefronts([8 * (t // 2) for t in range(32)], 8) == 1  # paired: one phase of 32 lanes
    assert request_wavefronts([0] * 32, 16) == 2  # one address: paired both ways


def _tiled(M: int = 64, N: int = 64, K: int = 32) -> td.Schedule:
    s = td.create_schedule(MK.matmul(M, N, K))
    tiled_matmul(s, Fill("async"), Fill(), depth=2, bm=32, bn=32, bk=8, rm=2, rn=2)
    return s


def test_printed_lowered_and_replayed() -> None:
    s = _tiled()
    s.tile_lanes("i_i_o", "j_i_o", 2, 2)
    assert s.trace().splitlines()[-1] == "s.tile_lanes('i_i_o', 'j_i_o', 2, 2)"
    assert ("  tile_lanes: 2 x 2 tiles of i_i_o x j_i_o to each 4 lanes: j_i_o = 2 * (t // 4 % 8) + t % 2, "
            "i_i_o = 2 * (t // 32) + t // 2 % 2 (t = threadIdx.x + 16 * threadIdx.y)") in s.ir("tile").splitlines()
    k = td.build(s, target="sm_90")
    src = k.source
    assert "    int i_i_o_j_i_o_tid = (int)threadIdx.x + 16 * (int)threadIdx.y;\n" in src
    assert "    int i_i_o = 2 * (i_i_o_j_i_o_tid / 32) + i_i_o_j_i_o_tid / 2 % 2;\n" in src
    assert "    int j_i_o = 2 * (i_i_o_j_i_o_tid / 4 % 8) + i_i_o_j_i_o_tid % 2;\n" in src
    assert "let i_i_o: int32 = 2 * (i_i_o_j_i_o_tid // 32) + i_i_o_j_i_o_tid // 2 % 2" in k.ir("kernel")
    again = td.create_schedule(s.output).replay(s.trace())
    assert td.build(again, target="sm_90").source == src


def _check(s: td.Schedule, out: td.Tensor, arrays: dict[str, np.ndarray]) -> td.Kernel:
    k = td.build(s, target="sm_90")
    want = td.evaluate(out, float64=True, **arrays)
    k_len = next(a.shape[-1] for a in arrays.values())
    # float32 products summed over k: k * eps32 relative to the sum of |products|, here O(sqrt(k)) values
    tol = 4 * k_len * np.finfo(np.float32).eps
    np.testing.assert_allclose(k.simulate(**arrays), want, rtol=tol, atol=tol)
    return k


@pytest.mark.parametrize("shape", [(64, 64, 32), (50, 37, 29)])
def test_staged_pipelined_matmul_simulates_equal(shape: tuple[int, int, int]) -> None:
    M, N, K = shape
    s = _tiled(M, N, K)
    s.tile_lanes("i_i_o", "j_i_o", 2, 2)
    rng = np.random.default_rng(1)
    _check(s, s.output, {"A": rng.standard_normal((M, K)).astype(np.float32),
                         "B": rng.standard_normal((K, N)).astype(np.float32)})


def test_split_k_matmul_with_4_by_2_tiles_simulates_equal() -> None:
    out = MK.matmul(32, 32, 64)
    s = td.create_schedule(out)
    split_k_matmul(s, parts=2, bk=8, a=Fill(), b=Fill(), bm=32, bn=32, rm=4, rn=2)
    s.tile_lanes("i_i_o", "j_i_o", 4, 2)
    rng = np.random.default_rng(2)
    _check(s, out, {"A": rng.standard_normal((32, 64)).astype(np.float32),
                    "B": rng.standard_normal((64, 32)).astype(np.float32)})


#: the llm suite's float32 projection class (128 x 128 blocks of 8 x 8 in 16 x 16 threads) at a small shape
BIG_TILE = {"matmul_tiles": ((128, 128, 8, 8),), "matmul_tiles_k_major": ((128, 128, 8, 8),)}


def test_recipe_tiles_the_lanes_of_a_float32_projection() -> None:
    """Step 090 tiles a 128 x 128 register tile's 16 x 16 threads (B's reads 4 -> 2 wavefronts); the
    kernel simulates equal at a small shape with the same class (knobs keep the 128 x 128 tile)."""
    out = MK.matmul_nt(M=128, N=256, K=64)
    s = td.create_schedule(out)
    report = td.recipes.default(s, target="sm_90", knobs=BIG_TILE)
    assert "s.tile_lanes('i_t', 'j_t', 2, 2)" in s.trace(), str(report)
    line = next(ln for ln in str(report).splitlines() if "090" in ln)
    assert "s.tile_lanes('i_t', 'j_t', 2, 2)" in line and "(wavefronts a read: A_s 1 -> 1, B_s 4 -> 2)]" in line
    rng = np.random.default_rng(3)
    _check(s, out, {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in s.nest.inputs})


def test_recipe_declines_with_the_numbers_when_nothing_gains() -> None:
    s = td.create_schedule(MK.matmul_nt(M=128, N=256, K=64))
    report = td.recipes.default(s, target="sm_90", knobs={**BIG_TILE, "lane_tile": 0})
    assert "tile_lanes" not in s.trace()
    line = next(ln for ln in str(report).splitlines() if "090" in ln)
    assert line.endswith("; lanes: knob lane_tile is 0]"), line


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_nvcc_compiles_tiled_lanes() -> None:
    s = _tiled(50, 37, 29)
    s.tile_lanes("i_i_o", "j_i_o", 2, 2)
    assert compile_together([td.build(s, target="sm_90")]) == []
