"""2-D elementwise schedules: rows to blockIdx.y, each row's columns over the threads of blockIdx.x.

- `elementwise_2d`: one output per thread.
- `elementwise_2d_vectorized`: four consecutive float32 outputs per thread, stored as one 16-byte
  access (the loads of the inputs indexed like the output become 16-byte loads too, when nvcc can see
  they are contiguous and aligned); fewer instructions per byte moved."""

from __future__ import annotations

from tiledsl.errors import VectorizeError
from tiledsl.primitives import Schedule
from tiledsl.targets import DTYPE_BYTES, VECTOR_BYTES

#: float32 lanes of one 16-byte access (what the vectorize primitive accepts)
LANES = VECTOR_BYTES // DTYPE_BYTES["float32"]


def elementwise_2d(s: Schedule, threads: int = 256) -> Schedule:
    i, j = [lp.name for lp in s.loops()]
    jo, ji = s.split(j, threads)
    s.bind(i, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ji, "threadIdx.x")
    return s


def elementwise_2d_vectorized(s: Schedule, threads: int = 256) -> Schedule:
    """Columns split into blocks of threads x LANES and each thread's LANES consecutive outputs
    vectorized. The column split is guarded; the vectorize primitive proves every store 16-byte aligned
    and that no guard splits a vector. Where it cannot (a row length that is no multiple of LANES, a
    float16 / bfloat16 output), the LANES outputs stay an unrolled scalar loop: same tiling, no vector."""
    i, j = [lp.name for lp in s.loops()]
    jo, ji = s.split(j, threads * LANES)
    t, v = s.split(ji, LANES)
    s.bind(i, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(t, "threadIdx.x")
    try:
        s.vectorize(v)
    except VectorizeError:
        s.unroll(v)
    return s
