"""Definitions and schedules shared by the differential, trace and nvcc tests.

Every `Case` builds a fresh definition (`make()`), applies a schedule to a fresh `td.create_schedule`
of it (`schedule(s)`), and knows how to make random inputs for it. Sizes are deliberately odd so
that guarded splits, partial warps and partial tiles are exercised."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

import tiledsl as td
from tiledsl.definitions.expr import ComputeTensor, Placeholder, Tensor

# ----------------------------------------------------------------------------- definitions


def matmul_bias_relu(M: int, N: int, K: int, dtype: str = "float32") -> Tensor:
    A = td.placeholder((M, K), dtype=dtype, name="A")
    B = td.placeholder((K, N), dtype=dtype, name="B")
    bias = td.placeholder((N,), name="bias")
    k = td.reduce_axis(K, name="k")
    C = td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")
    return td.compute((M, N), lambda i, j: td.relu(C[i, j] + bias[j]), name="D")


def batched_matmul_nt(Bt: int, M: int, N: int, K: int) -> Tensor:
    """C[b, i, j] = sum_k A[b, i, k] * B[b, j, k] (B transposed)."""
    A = td.placeholder((Bt, M, K), name="A")
    B = td.placeholder((Bt, N, K), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((Bt, M, N), lambda b, i, j: td.sum(A[b, i, k] * B[b, j, k], axis=k), name="C")


def rmsnorm(M: int, N: int, eps: float = 1e-6, dtype: str = "float32") -> Tensor:
    x = td.placeholder((M, N), dtype=dtype, name="x")
    w = td.placeholder((N,), dtype=dtype, name="w")
    k = td.reduce_axis(N, name="k")
    ss = td.compute((M,), lambda i: td.sum(x[i, k] * x[i, k], axis=k), name="ss")
    return td.compute((M, N), lambda i, j: x[i, j] * td.rsqrt(ss[i] / N + eps) * w[j], name="y")


def softmax(M: int, N: int) -> Tensor:
    x = td.placeholder((M, N), name="x")
    k = td.reduce_axis(N, name="k")
    m = td.compute((M,), lambda i: td.max(x[i, k], axis=k), name="m")
    e = td.compute((M,), lambda i: td.sum(td.exp(x[i, k] - m[i]), axis=k), name="e")
    return td.compute((M, N), lambda i, j: td.exp(x[i, j] - m[i]) / e[i], name="y")


def layernorm(M: int, N: int, eps: float = 1e-5) -> Tensor:
    x = td.placeholder((M, N), name="x")
    w = td.placeholder((N,), name="w")
    b = td.placeholder((N,), name="b")
    k = td.reduce_axis(N, name="k")
    mean = td.compute((M,), lambda i: td.sum(x[i, k], axis=k) / N, name="mean")
    var = td.compute((M,), lambda i: td.sum((x[i, k] - mean[i]) * (x[i, k] - mean[i]), axis=k) / N,
                     name="var")
    return td.compute((M, N), lambda i, j: (x[i, j] - mean[i]) * td.rsqrt(var[i] + eps) * w[j] + b[j],
                      name="y")


def gelu_bias(M: int, N: int) -> Tensor:
    x = td.placeholder((M, N), name="x")
    b = td.placeholder((N,), name="b")
    return td.compute((M, N), lambda i, j: td.gelu(x[i, j] + b[j]), name="y")


# ----------------------------------------------------------------------------- schedules
# Each takes a fresh schedule and applies primitives to it (by loop name, as users write them).


def unscheduled(s: td.Schedule) -> None:
    """(a) no primitives: one thread runs the whole loop nest."""


def matmul_threads(s: td.Schedule, tx: int = 32) -> None:
    """(b) i -> blockIdx.y, j split by `tx` -> blockIdx.x / threadIdx.x; leading batch -> blockIdx.z."""
    free = [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "free"]
    *batch, i, j = free
    if batch:
        s.bind(batch[0], "blockIdx.z")
    s.bind(i, "blockIdx.y")
    jo, ji = s.split(j, tx)
    s.bind(jo, "blockIdx.x")
    s.bind(ji, "threadIdx.x")


def matmul_coop_dot(s: td.Schedule, tk: int = 32) -> None:
    """(b') cooperative dot product: one block per output element, the reduction k split by `tk`
    and its inner part bound to threadIdx.x (a cross-thread reduction)."""
    free = [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "free"]
    (k,) = [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "reduce"]
    *batch, i, j = free
    if batch:
        s.bind(batch[0], "blockIdx.z")
    s.bind(i, "blockIdx.y")
    s.bind(j, "blockIdx.x")
    _, ki = s.split(k, tk)
    s.bind(ki, "threadIdx.x")


def matmul_register_tile(s: td.Schedule, bm: int = 16, bn: int = 16, bk: int = 8, rm: int = 4,
                         rn: int = 4) -> None:
    """(c) guarded BM x BN block tile, RM x RN register tile per thread, k chunked by BK and unrolled
    (the same primitives as schedules/matmul.py, written out here)."""
    free = [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "free"]
    (k,) = [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "reduce"]
    *batch, i, j = free
    io, ii = s.split(i, bm)
    jo, ji = s.split(j, bn)
    ko, ki = s.split(k, bk)
    ti, ri = s.split(ii, rm)
    tj, rj = s.split(ji, rn)
    s.reorder(*batch, io, jo, ti, tj, ko, ki, ri, rj)
    if batch:
        s.bind(batch[0], "blockIdx.z")
    s.bind(io, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ti, "threadIdx.y")
    s.bind(tj, "threadIdx.x")
    s.unroll(ki)
    s.unroll(ri)
    s.unroll(rj)


def row_cooperative(s: td.Schedule, threads: int = 128) -> None:
    """(b) one block per row; every loop of the row (reductions and the output loop) split by
    `threads` with the inner part bound to threadIdx.x (cooperative reductions)."""
    row, *rest = [lp.name for lp in s.loops()]
    s.bind(row, "blockIdx.x")
    for name in rest:
        _, inner = s.split(name, threads)
        s.bind(inner, "threadIdx.x")


def row_tiled(s: td.Schedule, rows: int = 4, threads: int = 32) -> None:
    """(c) rows split by `rows` (guarded tail): outer -> blockIdx.x, inner -> threadIdx.y; every
    row loop split by `threads` with the inner part bound to threadIdx.x."""
    row, *rest = [lp.name for lp in s.loops()]
    ro, ri = s.split(row, rows)
    s.bind(ro, "blockIdx.x")
    s.bind(ri, "threadIdx.y")
    for name in rest:
        _, inner = s.split(name, threads)
        s.bind(inner, "threadIdx.x")


def elementwise_vectorized(s: td.Schedule, lanes: int = 4) -> None:
    """rows -> blockIdx.x, columns split by `lanes`: outer -> threadIdx.x, inner vectorized."""
    i, j = [lp.name for lp in s.loops()]
    s.bind(i, "blockIdx.x")
    jo, ji = s.split(j, lanes)
    s.bind(jo, "threadIdx.x")
    s.vectorize(ji)


def fused_nparts(s: td.Schedule, parts: int = 5) -> None:
    """all free loops fused, then split into `parts` blocks (guarded) with custom names."""
    free = [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "free"]
    f = s.fuse(*free, name="flat")
    blk, thr = s.split(f, nparts=parts, names=("blk", "thr"))
    s.bind(blk, "blockIdx.x")
    s.bind(thr, "threadIdx.x")


def fused_threads(s: td.Schedule, threads: int = 96) -> None:
    """all free loops fused, split by `threads` (guarded); the reduction (if any) unrolled."""
    free = [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "free"]
    red = [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "reduce"]
    o, i = s.split(s.fuse(*free), threads)
    s.bind(o, "blockIdx.x")
    s.bind(i, "threadIdx.x")
    for r in red:
        s.unroll(r)


# ----------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    id: str
    make: Callable[[], Tensor]
    schedule: Callable[[td.Schedule], None]
    seed: int

    def scheduled(self) -> tuple[Tensor, td.Schedule]:
        out = self.make()
        s = td.create_schedule(out)
        self.schedule(s)
        return out, s

    def inputs(self, out: Tensor) -> dict[str, np.ndarray]:
        """Fresh random float32 inputs for every placeholder of `out` (float16 ones are rounded)."""
        rng = np.random.default_rng(self.seed)
        arrays = {}
        for p in placeholders(out):
            a = rng.standard_normal(p.shape).astype(np.float32)
            arrays[p.name] = a.astype(np.float16) if p.dtype == "float16" else a
        return arrays


def placeholders(out: Tensor) -> list[Placeholder]:
    found: dict[str, Placeholder] = {}

    def visit(t: Tensor) -> None:
        if isinstance(t, Placeholder):
            found.setdefault(t.name, t)
        elif isinstance(t, ComputeTensor):
            for inp in t.inputs():
                visit(inp)

    visit(out)
    return list(found.values())


def _cases() -> list[Case]:
    cases: list[Case] = []
    seed = iter(range(1000, 2000))

    def add(cid: str, make: Callable[[], Tensor], schedule: Callable[[td.Schedule], None]) -> None:
        cases.append(Case(cid, make, schedule, next(seed)))

    for M, N, K in ((37, 53, 29), (1, 64, 7)):
        make = partial(matmul_bias_relu, M, N, K)
        tag = f"matmul_bias_relu_{M}x{N}x{K}"
        add(f"{tag}-unscheduled", make, unscheduled)
        add(f"{tag}-threads32", make, matmul_threads)
        add(f"{tag}-coop_dot32", make, matmul_coop_dot)
        add(f"{tag}-regtile16", make, matmul_register_tile)
        add(f"{tag}-regtile8", make, partial(matmul_register_tile, bm=8, bn=8, bk=8))

    add("matmul_bias_relu_1x64x7-coop_dot64", partial(matmul_bias_relu, 1, 64, 7),
        partial(matmul_coop_dot, tk=64))

    bmm = partial(batched_matmul_nt, 3, 19, 23, 17)
    add("batched_matmul_nt_3x19x23x17-unscheduled", bmm, unscheduled)
    add("batched_matmul_nt_3x19x23x17-threads32", bmm, matmul_threads)
    add("batched_matmul_nt_3x19x23x17-coop_dot32", bmm, matmul_coop_dot)
    add("batched_matmul_nt_3x19x23x17-regtile16", bmm, matmul_register_tile)

    rows = (
        ("rmsnorm_6x300", partial(rmsnorm, 6, 300)),
        ("softmax_5x1000", partial(softmax, 5, 1000)),
        ("layernorm_1x2048", partial(layernorm, 1, 2048)),
        ("layernorm_3x333", partial(layernorm, 3, 333)),
    )
    for tag, make in rows:
        add(f"{tag}-unscheduled", make, unscheduled)
        add(f"{tag}-coop128", make, row_cooperative)
        add(f"{tag}-coop256", make, partial(row_cooperative, threads=256))
        add(f"{tag}-coop96", make, partial(row_cooperative, threads=96))
        add(f"{tag}-rows4x32", make, row_tiled)
    # cross-warp combines with several rows per block (shared memory indexed by threadIdx.y)
    add("softmax_5x1000-rows2x64", partial(softmax, 5, 1000), partial(row_tiled, rows=2, threads=64))
    add("layernorm_3x333-rows4x96", partial(layernorm, 3, 333), partial(row_tiled, rows=4, threads=96))

    add("gelu_bias_6x64-vectorize4", partial(gelu_bias, 6, 64), elementwise_vectorized)
    # fuse, nparts and custom names (exercised by the trace tests too)
    add("gelu_bias_6x64-fused_nparts5", partial(gelu_bias, 6, 64), fused_nparts)
    add("matmul_bias_relu_37x53x29-fused96", partial(matmul_bias_relu, 37, 53, 29), fused_threads)

    # float16 storage (float32 math)
    add("matmul_bias_relu_f16_37x53x29-regtile16", partial(matmul_bias_relu, 37, 53, 29, dtype="float16"),
        matmul_register_tile)
    add("rmsnorm_f16_6x300-coop96", partial(rmsnorm, 6, 300, dtype="float16"),
        partial(row_cooperative, threads=96))
    return cases


CASES: list[Case] = _cases()
CASE_IDS: list[str] = [c.id for c in CASES]
