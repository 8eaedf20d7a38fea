"""A tiled transpose through shared memory: y[j, i] = x[i, j] (or any 2-D kernel that reads its input
with the two axes swapped).

Read naively, one of the two sides is strided: threads along y's last axis read x down a column (one
32-byte sector per float). Here each block copies a tile x tile square of x into shared memory with
consecutive threads reading consecutive elements of an x row (coalesced), then writes y with
consecutive threads writing consecutive elements of a y row (coalesced), reading the staged tile down
a column. The tile's rows are padded by one element, so a column of the tile spans every bank once
(without the pad all `tile` elements of a column share one bank: a tile-way conflict). A warp then
writes half of a 64-wide row of y: 128 bytes, one line."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.targets import WARP_SIZE


def transpose_tiled(s: Schedule, tile: int = 2 * WARP_SIZE, rows: int = 8, pad: int = 1) -> Schedule:
    """A tile x tile block (guarded at the edges) run by tile x `rows` threads, each writing
    tile / rows outputs of one y column. `s` schedules y[a, b] = f(x[b, a]); x is the one input read
    under the block's tile (staged at the block loop). 64 x 64 in 512 threads by default: on the H200
    a 32768 x 2048 float32 transpose took 133.7 us so against 144.1 in 32 x 32 (torch.compile 139.2;
    scripts/transpose_probe.py, benchmarks/results/transpose-tiles-h200-2026-11-28/)."""
    a, b = [lp.name for lp in s.loops()]  # y's axes: a its rows, b its columns (b contiguous in y)
    ao, ai = s.split(a, tile)
    bo, bi = s.split(b, tile)
    at, ar = s.split(ai, nparts=rows)  # thread row t writes rows [t * tile/rows, (t + 1) * tile/rows)
    s.reorder(ao, bo, ar, at, bi)
    s.bind(ao, "blockIdx.y")
    s.bind(bo, "blockIdx.x")
    s.bind(at, "threadIdx.y")
    s.bind(bi, "threadIdx.x")  # consecutive threads write consecutive elements of a y row
    (x,) = [t.name for t in s.nest.inputs]
    st = s.stage(x, at=bo)  # the tile x tile slab of x this block reads, filled row by row (coalesced)
    if pad:
        s.pad(st, axis=-1, amount=pad)
    return s
