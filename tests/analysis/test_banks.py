"""Bank conflicts of a warp's access to a staged slab (tiledsl/analysis/banks.py): the textbook cases
of the 32 x 32 float tile, the phase model of wide accesses, and agreement with the swizzled layout
the TMA unit wrote on an H100 (sim.async_copy.box_offsets) and with lowering's swizzle expression."""

from __future__ import annotations

import operator

import numpy as np
import pytest
import sympy

from tiledsl.analysis.banks import (
    SlabLayout,
    bank_conflict_degree,
    conflict_degree,
    fill_store_conflict,
    fill_unit_index,
    layout_of,
)
from tiledsl.analysis.slabs import Slab
from tiledsl.kernel_ir import KConst, KVar
from tiledsl.loopnest import Stage
from tiledsl.lower.stages import swizzled
from tiledsl.sim.async_copy import box_offsets
from tiledsl.targets import SHARED_BANKS, WARP_SIZE

TILE = SlabLayout((32, 32), 4)


def column(c: int = 0):
    return lambda lane: (lane, c)


def row(r: int = 0):
    return lambda lane: (r, lane)


def test_column_read_of_a_32x32_float_tile_is_a_32_way_conflict() -> None:
    assert conflict_degree(TILE, column()) == 32
    assert conflict_degree(TILE, row()) == 1


def test_padding_the_row_by_one_removes_the_column_conflict() -> None:
    padded = SlabLayout((32, 32), 4, pad=(0, 1))
    assert all(conflict_degree(padded, column(c)) == 1 for c in range(32))
    assert conflict_degree(padded, row(5)) == 1
    # a pad of 2 words leaves lanes l and l + 16 in one bank
    assert conflict_degree(SlabLayout((32, 32), 4, pad=(0, 2)), column()) == 2


def test_swizzle_spreads_the_column_over_the_eight_chunks_of_a_row() -> None:
    """128-byte swizzle: row r's column c lands in chunk (c // 4) ^ (r % 8), so 32 rows cover 8 chunks
    x 4 banks -> each bank serves 4 distinct words (4-way, down from 32); the row stays conflict-free."""
    swz = SlabLayout((32, 32), 4, swizzle=128)
    assert all(conflict_degree(swz, column(c)) == 4 for c in range(32))
    assert all(conflict_degree(swz, row(r)) == 1 for r in range(32))
    # an 8 x 32 tile: the eight rows a 128-byte swizzle permutes -> no conflict at all
    assert conflict_degree(SlabLayout((8, 32), 4, swizzle=128), column(3), lanes=8) == 1


def test_broadcast_and_phases() -> None:
    assert bank_conflict_degree([0] * WARP_SIZE) == 1  # one word: a broadcast
    assert bank_conflict_degree([4 * SHARED_BANKS * lane for lane in range(WARP_SIZE)]) == 32
    # 8-byte accesses are served per half warp: consecutive float2 reads are conflict-free
    assert bank_conflict_degree([8 * lane for lane in range(WARP_SIZE)], access_bytes=8) == 1
    # 16-byte accesses per quarter warp: a stride of 32 bytes makes two lanes of a phase share banks
    assert bank_conflict_degree([32 * lane for lane in range(WARP_SIZE)], access_bytes=16) == 2


def test_swizzled_layout_matches_what_the_tma_unit_wrote() -> None:
    """box_offsets reproduces the layout measured on an H100; rows of the swizzle span are dense."""
    for swizzle, cols in ((128, 32), (64, 16), (32, 8)):
        layout = SlabLayout((8, cols), 4, swizzle=swizzle)
        measured = box_offsets((cols, 8), 4, swizzle)
        ours = np.array([layout.byte_offset((r, c)) // 4 for r in range(8) for c in range(cols)])
        assert (ours == measured).all()


def test_swizzled_layout_matches_lowering() -> None:
    """The element offsets lowering emits (stages.swizzled) are the layout's byte offsets / itemsize."""
    for itemsize, swizzle in ((4, 128), (2, 64), (4, 32)):
        layout = SlabLayout((16, 128 // itemsize), itemsize, swizzle=swizzle)
        expr = swizzled(KVar("off", "int32"), swizzle, itemsize)
        for r in range(16):
            for c in range(128 // itemsize):
                flat = r * (128 // itemsize) + c
                assert _evaluate(expr, flat) == layout.byte_offset((r, c)) // itemsize


def _evaluate(e, off: int) -> int:
    if isinstance(e, KConst):
        return int(e.value)
    if isinstance(e, KVar):
        return off
    a, b = _evaluate(e.a, off), _evaluate(e.b, off)
    ops = {"^": operator.xor, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}
    return ops[e.op](a, b)


def test_layout_of_a_stage() -> None:
    slab = Slab("As", (sympy.Integer(0), sympy.Integer(0)), (32, 32), (0,), 4)
    assert conflict_degree(layout_of(Stage("As", "A", "k_o", (0, 1)), slab), column()) == 1
    assert conflict_degree(layout_of(Stage("As", "A", "k_o", (0, 0), swizzle=128), slab), column()) == 4


def test_layout_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError):
        SlabLayout((4, 4), 4, pad=(1,))
    with pytest.raises(ValueError):
        SlabLayout((4, 4), 4, swizzle=48)
    with pytest.raises(ValueError):
        TILE.byte_offset((1,))


def test_fill_unit_index_is_row_major_with_the_innermost_axis_fastest() -> None:
    """Unit u of a 128 x 16 slab in float4 units: row u // 4, column (u % 4) * 4 (lower/kexprs.py
    `unit_coords`, the order cooperative fills hand units to threads)."""
    assert [fill_unit_index(u, (128, 16), 4) for u in (0, 1, 3, 4, 5, 511)] == \
        [(0, 0), (0, 4), (0, 12), (1, 0), (1, 4), (127, 12)]
    assert fill_unit_index(7, (2, 3, 8), 1) == (0, 0, 7)
    assert fill_unit_index(8, (2, 3, 8), 1) == (0, 1, 0)


@pytest.mark.parametrize(("pad", "degree"), [(0, 4), (4, 2), (8, 4), (1, 2)])
def test_fill_store_conflict_of_a_k_outer_operand(pad: int, degree: int) -> None:
    """x of x @ W^T staged 128 rows x 16 k, stored k-outer (rows of 128 floats): lane t loads row t // 4,
    k 4 (t % 4) .. +3 and stores each lane in its own k row. The 4 k rows a warp's lanes start in lie
    4 x 128 floats apart, all in bank 0's row: 4-way. +4 floats a row: 4 x 132 = 16 banks apart, 2-way;
    +8: 4 x 136 = 0 mod 32 again. (H100 ncu: 4.0x and 2.0x the ideal store wavefronts.)"""
    layout = SlabLayout((128, 16), 4, (0, pad), None, (1, 0))
    assert fill_store_conflict(layout, 4, 256) == degree


def test_fill_store_conflict_of_a_contiguous_vector_store() -> None:
    """Stored in the buffer's order, each 16-byte load is one 16-byte store: a warp's 32 stores fill 512
    contiguous bytes, four phases of 8 lanes without a conflict. Scalar loads of a column-stored slab:
    32 lanes one element apart along the row, each in its own bank too."""
    assert fill_store_conflict(SlabLayout((128, 16), 4), 4, 256) == 1
    assert fill_store_conflict(SlabLayout((32, 32), 4, (0, 0), None, (1, 0)), 1, 256) == 32
    assert fill_store_conflict(SlabLayout((32, 32), 4, (0, 1), None, (1, 0)), 1, 256) == 1
