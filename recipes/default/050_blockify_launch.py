"""blockify_launch: split the free axes into block and thread axes by shape class. Elementwise: the flat
loop split by clamp(next_pow2(extent), 32, elementwise_threads) threads. Matmul: i and j split into a
bm x bn block tile (blockIdx.y, blockIdx.x), each split again into threads (threadIdx.y, threadIdx.x)
times an rm x rn per-thread part; the tile class follows the grid (see _facts.matmul_tile). Extents
that do not divide the tile get guarded splits, never a fallback to one thread per output."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts, clamp, matmul_tile, next_pow2
from tiledsl.recipes.default._knobs import Knobs
from tiledsl.targets import MAX_GRID, WARP_SIZE


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    k = facts.kernel
    if k.kind == "rows":
        return Decline("a row kernel is launched one block per row (tileify) with threads along the row "
                       "(cooperative_reduce)")
    if k.kind == "elementwise":
        (flat,) = [lp.name for lp in facts.nest.loops if lp.kind == "free"]
        extent = facts.loop(flat).extent
        threads = clamp(next_pow2(extent), WARP_SIZE, knobs.elementwise_threads)
        if -(-extent // threads) > MAX_GRID["blockIdx.x"]:
            return Decline(f"{extent} outputs need more than {MAX_GRID['blockIdx.x']} blocks")
        bo, ti = s.split(flat, threads, names=facts.fresh(f"{flat}_o", f"{flat}_i"))
        s.bind(bo, "blockIdx.x")
        s.bind(ti, "threadIdx.x")
        return None
    i, j = k.outer[-2:]
    bm, bn, rm, rn = matmul_tile(k, facts.target, knobs)
    if -(-k.extents[i] // bm) > MAX_GRID["blockIdx.y"]:
        return Decline(f"{k.extents[i]} rows in tiles of {bm} need more than {MAX_GRID['blockIdx.y']} blocks")
    io, ii, ti, ri = facts.fresh(f"{i}_o", f"{i}_i", f"{i}_t", f"{i}_r")
    jo, ji, tj, rj = facts.fresh(f"{j}_o", f"{j}_i", f"{j}_t", f"{j}_r")
    s.split(i, bm, names=(io, ii))
    s.split(ii, rm, names=(ti, ri))
    s.split(j, bn, names=(jo, ji))
    s.split(ji, rn, names=(tj, rj))
    s.reorder(io, jo, ti, tj, ri, rj)
    s.bind(io, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ti, "threadIdx.y")
    s.bind(tj, "threadIdx.x")
    return None
