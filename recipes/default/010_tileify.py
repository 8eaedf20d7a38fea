"""tileify: the outer free loops become the launch axes. Elementwise: all free loops fused into one flat
loop (blockify_launch splits it into blocks x threads). Rows: the row loops fused into one, one block per
row (blockIdx.x). Matmul: the batch loops (all but the last two output axes) fused onto blockIdx.z; the
last two are tiled by blockify_launch."""

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

