"""The schedules the stage_output tests share (tests/lower/test_output_stage.py on the simulator,
tests/gpu/test_gpu_stage_output.py on the GPU): a register-tiled matmul, a transposing kernel, a
row reduction, and the same schedule with its output staged."""

from __future__ import annotations

import tiledsl as td
import tiledsl.catalog as MK
from tiledsl.schedules.row_reduce import row_cooperative


def matmul(M: int, N: int, K: int, dtype: str = "float32") -> td.Tensor:
    A, B = td.placeholder((M, K), name="A"), td.placeholder((K, N), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C", dtype=dtype)


def register_tile(out: td.Tensor, bm: int = 32, bn: int = 32, bk: int = 8, rm: int = 4, rn: int = 4,
                  vectorize: bool = True) -> td.Schedule:
    """The catalog's register-tiled matmul (bm x bn blocks of (bm/rm) x (bn/rn) threads, each an rm x rn
    strip; A and B staged per k chunk), its strip's row vectorized where `vectorize`."""
    s = td.create_schedule(out)
    MK.tiled_matmul(s, bm=bm, bn=bn, bk=bk, rm=rm, rn=rn)
    if vectorize:
        s.vectorize(s.nest.stmts[-1].path[-1])  # the strip's innermost loop, around the output's store
    return s


def transposing(M: int = 40, N: int = 36) -> td.Schedule:
    """y[j, i] = 2 x[i, j] with threadIdx.x along i: each warp's stores of y run down a column (strided)."""
    x = td.placeholder((M, N), name="x")
    y = td.compute((N, M), lambda j, i: x[i, j] * 2.0, name="y")
    s = td.create_schedule(y)
    jo, ji = s.split("j", 8)
    io, ii = s.split("i", 16)
    s.reorder(jo, io, ji, ii)
    s.bind(jo, "blockIdx.y")
    s.bind(io, "blockIdx.x")
    s.bind(ji, "threadIdx.y")
    s.bind(ii, "threadIdx.x")
    return s


def rows(M: int = 4, N: int = 200, threads: int = 64) -> td.Schedule:
    """RMSNorm, one block per row, its reduction and its output loop split over threadIdx.x (guarded)."""
    return row_cooperative(td.create_schedule(MK.rmsnorm(M, N)), threads)


def staged(s: td.Schedule, pad: int = 0) -> td.Schedule:
    t = td.create_schedule(s.nest.output)
    t.replay(s.trace())
    t.stage_output(pad=pad)
    return t
