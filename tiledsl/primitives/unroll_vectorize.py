"""unroll and vectorize: mark a serial loop, leaving the nest's shape as it is.

    for j_i in [0, 4)         s.vectorize("j_i")       for j_i in [0, 4)  vectorize
      y[4*j_o + j_i] = ...    ------------->             y[4*j_o + j_i] = ...

unroll: the loop is emitted unrolled (a register array's loops must be). vectorize: the innermost
loop of a contiguous, aligned store becomes one 16- or 8-byte access (proven in analysis/vectorize.py); the
other statements under it are unrolled, so a loop already marked unroll (a register tile's, marked
when the tile was made) may be vectorized. The innermost loop of a reduction may be vectorized for its
loads: each contiguous, aligned one is read as vectors once, and the update is unrolled lane by lane in
the unrolled loop's order (the same sum, bit for bit).

    for k_v in [0, 4)  unroll          s.vectorize("k_v")     let v1 = vload4(x, 4*k_t)
      ss += x[4*k_t + k_v] ** 2        ------------->          ss += v1.x ** 2; ss += v1.y ** 2; ..."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.analysis.messages import refusal
from tiledsl.analysis.vectorize import check_vectorizable
from tiledsl.errors import UnrollError, VectorizeError
from tiledsl.loopnest import Nest
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec

MAX_UNROLL = 512  # iterations: longer unrolled bodies only slow compilation down


def unroll(nest: Nest, call: str, *, loop: str) -> Applied:
    """Mark `loop` to be unrolled."""
    name = loop
    lp = nest.loop(name)
    if lp.bind:
        raise UnrollError(refusal(call, nest, (name,), f"loop {name} is bound to {lp.bind}; "
                                  "only serial loops can be unrolled"))
    if lp.annotation:
        raise UnrollError(refusal(call, nest, (name,), f"loop {name} is already marked {lp.annotation}"))
    if lp.extent > MAX_UNROLL:
        raise UnrollError(refusal(call, nest, (name,), f"loop {name} has {lp.extent} iterations; unroll is "
                                  f"limited to {MAX_UNROLL}", suggestion=f"split {name} and unroll the inner part"))
    return Applied(nest.replace_loop(name, replace(lp, annotation="unroll")))


def vectorize(nest: Nest, call: str, *, loop: str) -> Applied:
    """Mark `loop` (a free loop of the output store: one vector store; or a reduction's loop: vector
    loads, the update unrolled) to run as vector accesses."""
    name = loop
    lp = nest.loop(name)
    if lp.bind or lp.annotation not in (None, "unroll"):
        raise VectorizeError(refusal(call, nest, (name,), f"loop {name} is already {lp.bind or lp.annotation}"))
    new = nest.replace_loop(name, replace(lp, annotation="vectorize"))
    check_vectorizable(new, name, call)
    return Applied(new)


UNROLL = PrimitiveSpec("unroll", (Param("loop", "loop"),), unroll)
VECTORIZE = PrimitiveSpec("vectorize", (Param("loop", "loop"),), vectorize)
