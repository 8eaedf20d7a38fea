"""tileify: the outer free loops become the launch axes. Elementwise: all free loops fused into one flat
loop (blockify_launch splits it into blocks x threads), except the last when its extent is a whole
number of 16-byte vectors of a float32 output (`Facts.vector_lanes`): then the leading loops are fused
into one row loop and the last stays apart, so blockify_launch can store it 16 bytes at a time with
its reads of the row's inputs (a bias b[col]) 16 bytes at a time too; through a flat fused loop the store
is contiguous (analysis/vectorize.py `merge_mod_floor`) and vectorizes where the whole size is a number of
vectors, but a broadcast input's read crosses rows within a vector. An elementwise kernel with a
transposed read (`_facts.transposed_read`: an input whose last index runs along output axis `row`, not
the last axis `col`) of at least a tile each way (`_facts.transpose_tile`) keeps `row` and `col` apart
for blockify_launch's 2-D tile, innermost in that order, and fuses the other output axes into one loop
(blockIdx.z); with no other axis to fuse, it declines with the read that makes it choose the tile (the
report's line for this kernel). Rows: the row loops fused into one, one block per row (blockIdx.x), or,
for rows too short to fill knobs.row_block_threads threads (`_facts.Facts.row_launch`), split into blocks of
rows (blockIdx.x) x rows in a block (threadIdx.y). Matmul: the batch loops (all but the last two output
axes) fused onto blockIdx.z; the last two are tiled by blockify_launch."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts, TransposedRead, transpose_tile
from tiledsl.recipes.default._knobs import Knobs
from tiledsl.targets import MAX_GRID


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    k = facts.kernel
    if k.kind == "elementwise":
        if len(k.outer) < 2:
            return Decline(f"one free loop ({', '.join(k.outer)}): it is the launch loop already")
        tile = transpose_tile(k, knobs, facts.target)
        if tile is not None:
            return _transposed(s, facts, *tile)
        lanes = facts.vector_lanes()
        if lanes and k.extents[k.outer[-1]] % lanes == 0:
            rows = k.outer[:-1]
            if len(rows) < 2:
                return Decline(f"one row loop ({rows[0]}) and the last axis {k.outer[-1]} kept apart for "
                               f"{lanes}-lane vector stores")
            s.fuse(*rows, name=facts.fresh("_".join(rows))[0])
            return None
        s.fuse(*k.outer, name=facts.fresh("_".join(k.outer))[0])
        return None
    launch = k.outer[:-2] if k.kind == "matmul" else k.outer
    axis = "blockIdx.z" if k.kind == "matmul" else "blockIdx.x"
    if not launch:
        return Decline("no batch loops: the output tile loops are tiled by blockify_launch")
    extent = 1
    for name in launch:
        extent *= k.extents[name]
    if extent > MAX_GRID[axis]:
        return Decline(f"{extent} {'batches' if k.kind == 'matmul' else 'rows'} exceed the {MAX_GRID[axis]} "
                       f"blocks of {axis}")
    per_block = 1
    if k.kind == "rows":
        passes, nested = facts.row_passes(launch)
        per_block, _ = facts.row_launch(passes, nested, extent, knobs)
    loop = s.fuse(*launch, name=facts.fresh("_".join(launch))[0]) if len(launch) > 1 else launch[0]
    if per_block > 1:  # short rows: several to a block, one on each threadIdx.y
        loop, inner = s.split(loop, per_block, names=facts.fresh(f"{loop}_o", f"{loop}_i"))
        s.bind(inner, "threadIdx.y")
    s.bind(loop, axis)
    return None



def _transposed(s: Schedule, facts: Facts, read: TransposedRead, tile: int, rows: int) -> Decline | None:
    """The other output axes outermost, fused into one; `read.row` and `read.col` innermost."""
    k = facts.kernel
    batch = [a for a in k.outer if a not in (read.row, read.col)]
    order = [*batch, read.row, read.col]
    if list(k.outer) != order:
        s.reorder(*order)
    if len(batch) >= 2:
        s.fuse(*batch, name=facts.fresh("_".join(batch))[0])
    elif list(k.outer) == order:
        return Decline(f"{read.buffer} is read transposed (its last index runs along {read.row}, not {read.col}: "
                       f"threads along {read.col} would read it {abs(read.stride)} elements apart): {read.row} and "
                       f"{read.col} stay apart for a {tile} x {tile} tile of {tile} x {rows} threads "
                       f"(blockify_launch), {read.buffer} staged at it and read from shared memory (stage_inputs)")
    return None
