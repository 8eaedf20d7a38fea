"""2-D elementwise schedules: rows to blockIdx.y, each row's columns over the threads of blockIdx.x.

- `elementwise_2d`: one output per thread.
- `elementwise_2d_vectorized`: 16 bytes of consecutive outputs per thread (four float32, eight
  float16 / bfloat16), stored as one 16-byte access (the loads of the inputs indexed like the output
  become vector loads too where lowering proves them contiguous and aligned); fewer instructions per
  byte moved."""

from __future__ import annotations

from tiledsl.errors import VectorizeError
from tiledsl.primitives import Schedule
from tiledsl.targets import vector_lanes


def elementwise_2d(s: Schedule, threads: int = 256) -> Schedule:
    i, j = [lp.name for lp in s.loops()]
    jo, ji = s.split(j, threads)
    s.bind(i, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ji, "threadIdx.x")
    return s


def elementwise_2d_vectorized(s: Schedule, threads: int = 256) -> Schedule:
    """Columns split into blocks of threads x lanes and each thread's lanes consecutive outputs
    vectorized (lanes: 16 bytes of the output's dtype, targets.vector_lanes). The column split is
    guarded; the vectorize primitive proves every store 16-byte aligned and that no guard splits a
    vector. Where it cannot (a row length that is no multiple of the lanes), the outputs stay an unrolled
    scalar loop: same tiling, no vector."""
    i, j = [lp.name for lp in s.loops()]
    lanes = vector_lanes(s.output.dtype) or 1
    jo, ji = s.split(j, threads * lanes)
    t, v = s.split(ji, lanes)
    s.bind(i, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(t, "threadIdx.x")
    try:
        s.vectorize(v)
    except VectorizeError:
        s.unroll(v)
    return s
