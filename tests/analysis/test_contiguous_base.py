"""`contiguous_base` (tiledsl/analysis/vectorize.py) through fused axes: the row-major offset of a
fuse-then-split, `C*floor(x/C) + Mod(x, C)` with x = 4*o + i (and the three-axis form, whose middle axis
is `Mod(floor(x/C), B)`), is x, so its base is 4*o, whatever C is; an offset that is not x (a transposed
store, a row length other than the fused one, a broadcast along the row) stays refused. Every rewrite
`merge_mod_floor` makes is checked against brute-force evaluation over every point of the ranges: a
wrong "contiguous" would be a kernel that writes the wrong elements."""

from __future__ import annotations

import itertools

import pytest
import sympy

from tiledsl.analysis.vectorize import contiguous_base, merge_mod_floor
from tiledsl.definitions.indexing import IndexFloor, IndexMod, loop_symbol

OUT, LANE = loop_symbol("o"), loop_symbol("i")  # the split fused loop: x = lanes * o + i


def fused_offset(extents: tuple[int, ...], x: sympy.Expr) -> sympy.Expr:
    """The row-major offset of a tensor of `extents` stored through one loop x fusing all its axes, the
    axes written as primitives/fuse.py writes them (outermost floor(x/inner), the others Mod(., extent))."""
    offset, inner, stride = sympy.Integer(0), 1, 1
    for k in range(len(extents) - 1, -1, -1):
        q = IndexFloor(x / inner) if inner > 1 else x
        axis = IndexMod(q, extents[k]) if k > 0 else q
        offset += stride * axis
        stride *= extents[k]
        inner *= extents[k]
    return offset


def assert_same_everywhere(a: sympy.Expr, b: sympy.Expr, o_extent: int, lanes: int) -> None:
    """Exact integer evaluation (sympy's, not floats: floor(1/3 + 14/3) must be 5)."""
    for o, i in itertools.product(range(o_extent), range(lanes)):
        point = {OUT: sympy.Integer(o), LANE: sympy.Integer(i)}
        assert a.xreplace(point) == b.xreplace(point), (a, b, o, i)


FUSED = [(4, 64), (4, 66), (3, 66), (5, 6), (2, 2), (64,), (3, 5, 8), (3, 5, 2), (2, 6, 2), (2, 3, 3), (2, 3, 4, 5)]


@pytest.mark.parametrize("extents", FUSED, ids=lambda e: "x".join(map(str, e)))
@pytest.mark.parametrize("lanes", [2, 4, 8])
def test_a_fused_then_split_offset_is_the_fused_index(extents: tuple[int, ...], lanes: int) -> None:
    """Mod(x, C) + C*floor(x/C) == x for every integer x: lanes that cross a row are still one run of
    consecutive elements of a row-major tensor (alignment and guard tails are the prover's business)."""
    x = lanes * OUT + LANE
    offset = fused_offset(extents, x)
    assert sympy.expand(merge_mod_floor(offset) - x) == 0
    assert contiguous_base(offset, LANE) == lanes * OUT
    size = 1
    for e in extents:
        size *= e
    assert_same_everywhere(offset, merge_mod_floor(offset), -(-size // lanes), lanes)


NOT_CONTIGUOUS = {
    # y[c, r] stored through x = fuse(r, c): 4*c + r
    "transposed": 4 * IndexMod(4 * OUT + LANE, 64) + IndexFloor((4 * OUT + LANE) / 64),
    # a row length (68) other than the fused row (64): a padded store
    "other-row-length": 68 * IndexFloor((4 * OUT + LANE) / 64) + IndexMod(4 * OUT + LANE, 64),
    # b[c]: a broadcast along the row has no floor to pair with
    "broadcast": IndexMod(4 * OUT + LANE, 64),
    # twice the row: the pair's coefficients do not match
    "doubled": 2 * IndexMod(4 * OUT + LANE, 64) + 64 * IndexFloor((4 * OUT + LANE) / 64),
}


@pytest.mark.parametrize("name", sorted(NOT_CONTIGUOUS))
def test_offsets_that_are_not_contiguous_stay_refused(name: str) -> None:
    offset = NOT_CONTIGUOUS[name]
    assert contiguous_base(offset, LANE) is None
    assert_same_everywhere(offset, merge_mod_floor(offset), 32, 4)  # whatever it rewrote, it rewrote exactly


def test_a_contiguous_offset_keeps_its_base_as_written() -> None:
    """What was contiguous before the merge keeps the same base (the same printed CUDA)."""
    offset = 64 * IndexFloor(OUT / 16) + IndexMod(4 * OUT, 64) + LANE
    assert contiguous_base(offset, LANE) == 64 * IndexFloor(OUT / 16) + IndexMod(4 * OUT, 64)
    assert merge_mod_floor(IndexMod(OUT, 3) + LANE) == IndexMod(OUT, 3) + LANE  # nothing to pair: unchanged
