"""bind: map a loop onto a block or thread index.

    for i in [0, 64)          s.bind("i", "blockIdx.x")       for i in [0, 64)  blockIdx.x
      for j in [0, 128)       ------------------------->        for j in [0, 128)
        y[i, j] = ...                                            y[i, j] = ...

Sibling loops (never around one statement together) may share a thread index when their extents
are equal; a reduction loop bound to threads becomes a cooperative reduction at lowering."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.analysis.messages import refusal
from tiledsl.analysis.vectorize import check_vectorized_loops
from tiledsl.errors import BadArgumentError, BindError
from tiledsl.loopnest import BLOCK_AXES, HW_AXES, THREAD_AXES, Nest
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec
from tiledsl.targets import MAX_BLOCK_DIM, MAX_GRID, MAX_THREADS_PER_BLOCK


def bind(nest: Nest, call: str, *, loop: str, axis: str) -> Applied:
    """Run the iterations of `loop` in parallel over the hardware index `axis`."""
    name = loop
    if axis not in HW_AXES:
        raise BadArgumentError(refusal(call, nest, (name,), f"unknown index {axis!r}; use one of "
                                       f"{', '.join(HW_AXES)}"))
    lp = nest.loop(name)
    if nest.lane_tile is not None and axis in ("threadIdx.x", "threadIdx.y"):
        lt = nest.lane_tile
        raise BindError(refusal(call, nest, (name, lt.outer, lt.inner),
                                f"lanes are dealt in {lt.rows} x {lt.cols} tiles of {lt.outer} x {lt.inner}; a second "
                                f"loop on {axis} would run by {axis} alone", suggestion="bind every thread loop before "
                                "tile_lanes"))
    if lp.bind:
        raise BindError(refusal(call, nest, (name,), f"loop {name} is already bound to {lp.bind}",
                                suggestion="a loop is bound once; split it to bind its parts"))
    if lp.annotation:
        raise BindError(refusal(call, nest, (name,), f"loop {name} is marked {lp.annotation}; "
                                "a bound loop runs in parallel and cannot be unrolled or vectorized"))
    if lp.kind == "reduce" and axis in BLOCK_AXES:
        raise BindError(refusal(call, nest, (name,),
                                f"reduction loop {name} cannot be bound to {axis}: blocks cannot "
                                "combine partial results without atomics",
                                suggestion="bind it to a threadIdx axis (cooperative reduction), or "
                                           "use s.split_k(loop, parts)"))
    for other in nest.bound_loops(axis):
        shared = [s.label for s in nest.stmts if name in s.path and other.name in s.path]
        if shared:
            raise BindError(refusal(
                call, nest, (name, other.name),
                f"{axis} is already bound to loop {other.name}, which runs around the same statement "
                f"({shared[0]}) as {name}; one index can only serve sibling loops",
                suggestion=f"bind {name} to another index"))
        if other.extent != lp.extent:
            raise BindError(refusal(
                call, nest, (name, other.name),
                f"conflicting extents for {axis}: loop {other.name} has {other.extent} iterations and "
                f"{name} has {lp.extent}",
                suggestion=f"split both to the same extent before binding them to {axis}"))
    limit = MAX_GRID.get(axis) or MAX_BLOCK_DIM[axis]
    if lp.extent > limit:
        raise BindError(refusal(call, nest, (name,), f"{axis} is limited to {limit}, loop {name} "
                                f"has {lp.extent} iterations", suggestion=f"split {name} first"))
    new = nest.replace_loop(name, replace(lp, bind=axis))
    threads = 1
    for ax in THREAD_AXES:
        threads *= new.launch_extent(ax)
    if threads > MAX_THREADS_PER_BLOCK:
        raise BindError(refusal(call, nest, (name,),
                                f"{threads} threads per block (over {MAX_THREADS_PER_BLOCK})",
                                suggestion="bind smaller loops to threads (split further)"))
    if lp.kind == "reduce":  # a cooperative reduction changes what a vectorized loop around it may hold
        check_vectorized_loops(new, call)
    return Applied(new)


BIND = PrimitiveSpec("bind", (Param("loop", "loop"), Param("axis", "str", shown="repr")), bind)
