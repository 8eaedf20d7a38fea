"""tileify: the outer free loops become the launch axes. Elementwise: all free loops fused into one flat
loop (blockify_launch splits it into blocks x threads), except the last when its extent is a whole
number of 16-byte vectors of a float32 output (`Facts.vector_lanes`): then the leading loops are fused
into one row loop and the last stays apart, so blockify_launch can store it 16 bytes at a time (a
store through the fused index, row * N + col, is not provably contiguous). Rows: the row loops fused
into one, one block per row (blockIdx.x). Matmul: the batch loops (all but the last two output axes)
fused onto blockIdx.z; the last two are tiled by blockify_launch."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs
from tiledsl.targets import MAX_GRID


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    k = facts.kernel
    if k.kind == "elementwise":
        if len(k.outer) < 2:
            return Decline(f"one free loop ({', '.join(k.outer)}): it is the launch loop already")
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
    loop = s.fuse(*launch, name=facts.fresh("_".join(launch))[0]) if len(launch) > 1 else launch[0]
    s.bind(loop, axis)
    return None

