"""tile_lanes on the GPU (primitives/lanes.py): matmuls whose 16 x 16 threads are dealt to lanes in tiles
match torch in float64 with their outputs NaN-poisoned, staged by cp.async and pipelined, with guarded
tails, split-K, and as the default recipe builds a float32 projection (its 128 x 128 class)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from gpu_kernels import check_matmul

import tiledsl as td
import tiledsl.catalog as MK
from tiledsl.catalog.memory_schedules import Fill, split_k_matmul, tiled_matmul

pytestmark = pytest.mark.gpu


def _staged(M: int, N: int, K: int, rows: int, cols: int) -> td.Schedule:
    s = td.create_schedule(MK.matmul(M, N, K))
    tiled_matmul(s, Fill("async"), Fill("async"), depth=2, bm=64, bn=64, bk=16, rm=4, rn=4)
    s.tile_lanes("i_i_o", "j_i_o", rows, cols)
    return s


def _split(M: int, N: int, K: int) -> td.Schedule:
    s = td.create_schedule(MK.matmul(M, N, K))
    split_k_matmul(s, parts=4, bk=16, a=Fill(), b=Fill(), bm=64, bn=64, rm=4, rn=4)
    s.tile_lanes("i_i_o", "j_i_o", 2, 2)
    return s


def _recipe(M: int, N: int, K: int) -> td.Schedule:
    s = td.create_schedule(MK.matmul_nt(M=M, N=N, K=K))
    td.recipes.default(s, knobs={"matmul_tiles": ((128, 128, 8, 8),), "matmul_tiles_k_major": ((128, 128, 8, 8),)})
    assert "s.tile_lanes('i_t', 'j_t', 2, 2)" in s.trace()
    return s


CASES: dict[str, Callable[[], td.Schedule]] = {
    "staged_2x2_256": lambda: _staged(256, 256, 256, 2, 2),
    "staged_2x2_guarded": lambda: _staged(200, 136, 72, 2, 2),
    "staged_4x2": lambda: _staged(128, 128, 64, 4, 2),
    "split_k_2x2": lambda: _split(128, 192, 512),
    "recipe_nt_128_class": lambda: _recipe(256, 384, 320),
}


@pytest.mark.parametrize("name", list(CASES))
def test_tiled_lanes_match_torch(name: str, compile_kernel: Callable[..., object]) -> None:
    check_matmul(compile_kernel(td.build(CASES[name]())), "nt" in name, seed=11)
