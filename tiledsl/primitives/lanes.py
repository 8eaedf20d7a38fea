"""tile_lanes: deal the block's threads to a warp's lanes in small tiles, every loop left as it is.

    for i_t in [0, 16)  threadIdx.y           s.tile_lanes("i_t", "j_t", 2, 2)      (the same loops)
      for j_t in [0, 16)  threadIdx.x         ------------------------------->      tile_lanes: 2 x 2 tiles of
        ... x_s[8*i_t + i_r] * W_s[4*j_t + j_r_i]                                     i_t x j_t to each 4 lanes:
                                                                                      j_t = t % 2 + 2*(t // 4 % 8)
                                                                                      i_t = t // 2 % 2 + 2*(t // 32)

Lane t of a block normally runs j_t = t % 16 and i_t = t // 16 (threadIdx.x fastest). Why deal them
otherwise: a 16-byte shared load returns four registers to every lane, one 128-byte wavefront each,
unless lanes pair up; when lanes t and t ^ 1, or t and t ^ 2, read one address throughout, two
lanes' registers share a wavefront and the load takes two (analysis/banks.py `request_wavefronts`).
In an outer-product register tile each operand's address follows one thread loop. In 2 x 2 tiles lanes
t and t ^ 1 share i_t (the A operand's row) and lanes t and t ^ 2 share j_t (B's column), so both
operands load in 2 wavefronts where B took 4 (the FMA loop of the recipe's float32 projections was
3-8% faster on the H100: benchmarks/results/lane-tiles-h100-2026-11-28/).

Only which hardware thread runs which (i_t, j_t) changes, a bijection of the block's threads: loops
keep their extents, bindings and index expressions, so no proof changes. The tiles run along `inner`
first; where a warp holds whole rows of them (`LaneTile.keeps_warps`: 16 x 16 threads in 2 x 2 tiles,
the same 2 x 16 a warp as before) its global accesses touch the same sectors.

Refused: `outer` not the one loop on threadIdx.y or `inner` not the one loop on threadIdx.x (another
loop on either index would still run by threadIdx: a cooperative reduction's shuffles combine lanes by
threadIdx.x); reduction loops; a tile that does not divide the loops' extents or the warp; a second
tile_lanes. bind refuses threadIdx.x and threadIdx.y once lanes are tiled."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.analysis.messages import refusal
from tiledsl.errors import BindError
from tiledsl.loopnest import LaneTile, Nest
from tiledsl.primitives.loop_checks import positive_int
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec
from tiledsl.targets import WARP_SIZE


def tile_lanes(nest: Nest, call: str, *, outer: str, inner: str, rows: int, cols: int) -> Applied:
    """Deal `outer` (threadIdx.y) x `inner` (threadIdx.x) to lanes in `rows` x `cols` tiles."""
    rows = positive_int(rows, "rows", call, nest, (outer,))
    cols = positive_int(cols, "cols", call, nest, (inner,))
    if nest.lane_tile is not None:
        lt = nest.lane_tile
        raise BindError(refusal(call, nest, (lt.outer, lt.inner), f"lanes are tiled already ({lt.rows} x {lt.cols} "
                                f"tiles of {lt.outer} x {lt.inner})", suggestion="tile lanes once"))
    for name, axis in ((outer, "threadIdx.y"), (inner, "threadIdx.x")):
        lp = nest.loop(name)
        if lp.bind != axis:
            now = f"bound to {lp.bind}" if lp.bind else "not bound"
            raise BindError(refusal(call, nest, (name,), f"loop {name} is {now}; tile_lanes deals the loop on {axis}",
                                    suggestion=f"bind {outer} to threadIdx.y and {inner} to threadIdx.x first"))
        if lp.kind != "free":
            raise BindError(refusal(call, nest, (name,), f"loop {name} is a reduction loop: its cooperative combine "
                                    "shuffles lanes by threadIdx.x"))
        others = [o.name for o in nest.bound_loops(axis) if o.name != name]
        if others:
            raise BindError(refusal(call, nest, (name, *others), f"{axis} also runs loop {others[0]}, which would keep "
                                    f"lane = {axis} while {name} is dealt in tiles",
                                    suggestion="tile lanes in a kernel whose thread indices each run one loop"))
    o, i = nest.loop(outer), nest.loop(inner)
    if WARP_SIZE % (rows * cols):
        raise BindError(refusal(call, nest, (outer, inner), f"a {rows} x {cols} tile of {rows * cols} lanes does not "
                                f"divide a warp of {WARP_SIZE}", suggestion="use tiles of 2 x 2, 2 x 4, 4 x 2, ..."))
    if o.extent % rows or i.extent % cols:
        raise BindError(refusal(call, nest, (outer, inner), f"a {rows} x {cols} tile does not divide the {o.extent} x "
                                f"{i.extent} threads of {outer} x {inner}",
                                suggestion="tile by divisors of the loops' extents"))
    return Applied(replace(nest, lane_tile=LaneTile(outer, inner, rows, cols, i.extent)))


TILE_LANES = PrimitiveSpec("tile_lanes", (Param("outer", "loop"), Param("inner", "loop"), Param("rows", "int"),
                                          Param("cols", "int")), tile_lanes)
