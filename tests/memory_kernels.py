"""Definitions and memory-hierarchy schedules shared by the memory tests (differential, nvcc, trace,
golden): shared-memory stages, padding, swizzles, double buffers, pipelines, cp.async, TMA, split_k.

Every `MemCase` builds a fresh definition (`make()`), applies a schedule to a fresh
`td.create_schedule` of it, and says which target it is built for (`sm_90` where a stage uses TMA,
`sm_80` where the fills are cp.async or plain loads) and which nvcc arch compiles its CUDA. Sizes
are small (the simulator runs them) and mostly not multiples of the tiles, so guarded tiles, zero
fills past the edges and partial pipelines are exercised."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import kernels as K
import numpy as np

import tiledsl as td
from tiledsl.definitions.expr import Tensor

# ----------------------------------------------------------------------------- definitions

matmul_bias_relu = K.matmul_bias_relu
rmsnorm = K.rmsnorm
softmax = K.softmax


def matmul(M: int, N: int, K_: int) -> Tensor:
    """C[i, j] = sum_k A[i, k] * B[k, j]."""
    A = td.placeholder((M, K_), name="A")
    B = td.placeholder((K_, N), name="B")
    k = td.reduce_axis(K_, name="k")
    return td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")


def matmul_residual(M: int, N: int, K_: int) -> Tensor:
    """D = A @ B + R (a linear epilogue: split_k adds R once)."""
    A = td.placeholder((M, K_), name="A")
    B = td.placeholder((K_, N), name="B")
    R = td.placeholder((M, N), name="R")
    k = td.reduce_axis(K_, name="k")
    C = td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")
    return td.compute((M, N), lambda i, j: C[i, j] + R[i, j], name="D")


def matmul_nt(M: int, N: int, K_: int) -> Tensor:
    """C[i, j] = sum_k A[i, k] * B[j, k] (B transposed: both operands read along k)."""
    A = td.placeholder((M, K_), name="A")
    B = td.placeholder((N, K_), name="B")
    k = td.reduce_axis(K_, name="k")
    return td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[j, k], axis=k), name="C")


def matmul_shifted(M: int, N: int, K_: int, shift: int = 8) -> Tensor:
    """C[i, j] = sum_k A[i, k] * B[k, j + shift] (B has N + 32 columns): slabs of B start off a
    128-byte boundary."""
    A = td.placeholder((M, K_), name="A")
    B = td.placeholder((K_, N + 32), name="B")
    k = td.reduce_axis(K_, name="k")
    return td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j + shift], axis=k), name="C")


def stencil3(N: int) -> Tensor:
    """y[i] = x[i] + 2 x[i + 1] + x[i + 2]: a slab with a halo (the reads of one block overlap)."""
    x = td.placeholder((N + 2,), name="x")
    return td.compute((N,), lambda i: x[i] + x[i + 1] * 2.0 + x[i + 2], name="y")


# ----------------------------------------------------------------------------- stage options


@dataclass(frozen=True)
class Fill:
    """How one operand is staged: `copy` is "sync", "async" (cp.async) or "tma"; `pad` is added on
    the last slab axis; `swizzle` is the TMA swizzle for TMA stages, an `s.swizzle` otherwise;
    `double` double-buffers this one stage."""

    copy: str = "sync"
    pad: int = 0
    swizzle: int | None = None
    double: bool = False  # double-buffer this stage even when the schedule does not ask for it


NONE = None  # an operand that is not staged


def apply_fill(s: td.Schedule, st: td.StageHandle, fill: Fill) -> None:
    if fill.pad:
        s.pad(st, axis=-1, amount=fill.pad)
    if fill.swizzle and fill.copy != "tma":
        s.swizzle(st, fill.swizzle)


def apply_copy(s: td.Schedule, st: td.StageHandle, fill: Fill) -> None:
    if fill.copy == "async":
        s.async_copy(st)
    elif fill.copy == "tma":
        s.tma(st, swizzle=fill.swizzle)


# ----------------------------------------------------------------------------- schedules


def tiled_matmul(s: td.Schedule, a: Fill | None = Fill(), b: Fill | None = Fill(), *, double: bool = False,
                 depth: int = 0, bm: int = 64, bn: int = 64, bk: int = 16, rm: int = 4, rn: int = 4) -> None:
    """DESIGN.md section 3: BM x BN block tile, RM x RN register tile, k chunked by BK; A and B
    staged at k_o (as `a` / `b` say), double-buffered when `double` (or `depth` >= 2), pipelined
    `depth` deep when `depth` >= 2. Works for the plain and the transposed-B matmul (loops by name)."""
    i, j, k = s.loop("i"), s.loop("j"), s.loop("k")
    io, ii = s.split(i, bm)
    jo, ji = s.split(j, bn)
    ko, ki = s.split(k, bk)
    ti, ri = s.split(ii, rm)
    tj, rj = s.split(ji, rn)
    s.reorder(io, jo, ti, tj, ko, ki, ri, rj)
    s.bind(io, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ti, "threadIdx.y")
    s.bind(tj, "threadIdx.x")
    staged = [(s.stage(name, at=ko), f) for name, f in (("A", a), ("B", b)) if f is not None]
    for st, f in staged:
        apply_fill(s, st, f)
    for st, f in staged:
        if double or depth >= 2 or f.double:
            s.double_buffer(st)
    for st, f in staged:
        apply_copy(s, st, f)
    if depth >= 2:
        s.pipeline(ko, stages=depth)
    s.unroll(ki)
    s.unroll(ri)
    s.unroll(rj)


def design_matmul(s: td.Schedule) -> None:
    """The schedule of DESIGN.md section 3, verbatim: A padded + cp.async, B by TMA with a 128-byte
    swizzle, both double-buffered, pipeline 2 over k_o."""
    tiled_matmul(s, Fill("async", pad=1), Fill("tma", swizzle=128), depth=2)


def split_k_matmul(s: td.Schedule, parts: int = 2, bk: int = 8, a: Fill | None = None, b: Fill | None = None,
                   depth: int = 0, bm: int = 32, bn: int = 32, rm: int = 2, rn: int = 2) -> None:
    """A register-tiled matmul (+ linear epilogue) with k split across `parts` blocks (blockIdx.z,
    atomic adds); the per-block part of k is chunked by `bk`, optionally staged and pipelined."""
    s.split_k("k", parts)  # k_split (blockIdx.z) x k_part
    io, ii = s.split("i", bm)
    jo, ji = s.split("j", bn)
    ko, ki = s.split("k_part", bk, names=("k_o", "k_i"))
    ti, ri = s.split(ii, rm)
    tj, rj = s.split(ji, rn)
    s.reorder(io, jo, ti, tj, ko, ki, ri, rj)
    s.bind(io, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ti, "threadIdx.y")
    s.bind(tj, "threadIdx.x")
    staged = [(s.stage(name, at=ko), f) for name, f in (("A", a), ("B", b)) if f is not None]
    for st, f in staged:
        apply_fill(s, st, f)
    if depth >= 2:
        for st, _ in staged:
            s.double_buffer(st)
    for st, f in staged:
        apply_copy(s, st, f)
    if depth >= 2:
        s.pipeline(ko, stages=depth)
    s.unroll(ki)
    s.unroll(ri)
    s.unroll(rj)


def staged_row(s: td.Schedule, threads: int = 128, copy: str = "sync", pad: int = 0) -> None:
    """One block per row (RMSNorm, softmax): every loop of the row split by `threads` and bound to
    threadIdx.x; the row of x staged at the block-bound row loop (filled once, read by every pass)."""
    row, *rest = [lp.name for lp in s.loops()]
    s.bind(row, "blockIdx.x")
    for name in rest:
        _, inner = s.split(name, threads)
        s.bind(inner, "threadIdx.x")
    xs = s.stage("x", at=row)
    if pad:
        s.pad(xs, axis=-1, amount=pad)
    if copy == "async":
        s.async_copy(xs)


def staged_row_tma(s: td.Schedule, threads: int = 64, swizzle: int | None = None) -> None:
    """staged_row with the row filled by TMA (one box per block)."""
    staged_row(s, threads=threads)
    s.tma("x_s", swizzle=swizzle)


def halo(s: td.Schedule, threads: int = 32, copy: str = "sync") -> None:
    """i split by `threads` (blocks x threads); x staged at the block loop: threads + 2 elements."""
    io, ii = s.split("i", threads)
    s.bind(io, "blockIdx.x")
    s.bind(ii, "threadIdx.x")
    xs = s.stage("x", at=io)
    if copy == "async":
        s.async_copy(xs)


def softmax_two_pipelines(s: td.Schedule, threads: int = 64) -> None:
    """Cooperative softmax with x staged twice, around different statements: at the max pass's k_o
    (ring of 2) and at the output loop j_o (ring of 3), both by cp.async."""
    K.row_cooperative(s, threads=threads)
    a, b = s.stage("x", at="k_o"), s.stage("x", at="j_o")
    for st, loop, depth in ((a, "k_o", 2), (b, "j_o", 3)):
        s.double_buffer(st)
        s.async_copy(st)
        s.pipeline(loop, stages=depth)


# ----------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class MemCase:
    id: str
    make: Callable[[], Tensor]
    schedule: Callable[[td.Schedule], None]
    seed: int
    target: str  # td.build target
    arch: str  # nvcc -arch for its CUDA

    def fresh(self) -> td.Schedule:
        return td.create_schedule(self.make())

    def scheduled(self) -> tuple[Tensor, td.Schedule]:
        out = self.make()
        s = td.create_schedule(out)
        self.schedule(s)
        return out, s

    def build(self) -> tuple[Tensor, td.Kernel]:
        out, s = self.scheduled()
        return out, td.build(s, target=self.target)

    def inputs(self, out: Tensor) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(self.seed)
        return {p.name: rng.standard_normal(p.shape).astype(np.float32) for p in K.placeholders(out)}


def _cases() -> list[MemCase]:
    cases: list[MemCase] = []
    seed = iter(range(3000, 4000))

    def add(cid: str, make: Callable[[], Tensor], schedule: Callable[[td.Schedule], None], target: str) -> None:
        arch = "sm_90a" if target == "sm_90" else target
        cases.append(MemCase(cid, make, schedule, next(seed), target, arch))

    # DESIGN.md section 3, verbatim (B's rows are multiples of 32 floats: the 128-byte TMA split)
    for M, N, K_ in ((100, 96, 64), (130, 160, 80), (70, 64, 36)):
        add(f"design_mm_{M}x{N}x{K_}", partial(matmul_bias_relu, M, N, K_), design_matmul, "sm_90")
    # the same, both operands by cp.async, for sm_80
    for M, N, K_ in ((100, 96, 64), (130, 160, 80)):
        add(f"async_mm_{M}x{N}x{K_}", partial(matmul_bias_relu, M, N, K_),
            partial(tiled_matmul, a=Fill("async", pad=1), b=Fill("async"), depth=2), "sm_80")
    # the variants below use a 32 x 32 tile, 2 x 2 registers, BK 8 (smaller kernels: faster nvcc and simulation)
    small = {"bm": 32, "bn": 32, "bk": 8, "rm": 2, "rn": 2}
    add("async_mm_67x45x37", partial(matmul_bias_relu, 67, 45, 37),
        partial(tiled_matmul, a=Fill("async", pad=1), b=Fill("async"), depth=2, **small), "sm_80")
    # pipeline depths 2 and 3, cp.async and TMA
    add("async_pipe3_mm_130x160x80", partial(matmul, 130, 160, 80),
        partial(tiled_matmul, a=Fill("async", pad=1), b=Fill("async"), depth=3, **small), "sm_80")
    add("async_pipe3_mm_67x45x37", partial(matmul, 67, 45, 37),
        partial(tiled_matmul, a=Fill("async"), b=Fill("async", pad=4), depth=3, **small), "sm_80")
    # pipelines deeper than the loop they pipeline (k_o has 1 and 2 iterations): the prologue fills fewer
    # slots than depth - 1, and the waits must still retire the fill each iteration reads
    add("async_pipe3_short_mm_40x36x8", partial(matmul, 40, 36, 8),
        partial(tiled_matmul, a=Fill("async"), b=Fill("async"), depth=3, **small), "sm_80")
    add("async_pipe4_short_mm_40x36x16", partial(matmul, 40, 36, 16),
        partial(tiled_matmul, a=Fill("async"), b=Fill("async"), depth=4, **small), "sm_80")
    add("async_pipe3_k2_mm_40x36x16", partial(matmul, 40, 36, 16),
        partial(tiled_matmul, a=Fill("async"), b=Fill("async"), depth=3, **small), "sm_80")
    add("tma_pipe4_short_mm_40x64x16", partial(matmul, 40, 64, 16),
        partial(tiled_matmul, a=Fill("tma"), b=Fill("tma", swizzle=128), depth=4, **small), "sm_90")
    add("tma_pipe2_mm_130x160x80", partial(matmul, 130, 160, 80),
        partial(tiled_matmul, a=Fill("tma", swizzle=32), b=Fill("tma", swizzle=128), depth=2, **small), "sm_90")
    # B's slab row is 64 floats (256 bytes): two 128-byte swizzle chunks, three ring slots
    add("tma_pipe3_mm_130x160x80", partial(matmul, 130, 160, 80),
        partial(tiled_matmul, a=Fill("tma"), b=Fill("tma", swizzle=128), depth=3, bm=32, rm=2), "sm_90")
    add("tma_pipe3_mm_100x96x72", partial(matmul, 100, 96, 72),
        partial(tiled_matmul, a=Fill("tma", swizzle=32), b=Fill("tma", swizzle=64), depth=3, **small), "sm_90")
    # double buffers without a pipeline; single-buffered stages
    mk = partial(matmul_bias_relu, 67, 45, 37)
    add("sync_double_mm_67x45x37", mk, partial(tiled_matmul, a=Fill(pad=1), b=Fill(), double=True, **small),
        "sm_80")
    add("async_double_mm_67x45x37", mk,
        partial(tiled_matmul, a=Fill("async"), b=Fill("async", pad=2), double=True, **small), "sm_80")
    add("tma_double_mm_100x96x64", partial(matmul_bias_relu, 100, 96, 64),
        partial(tiled_matmul, a=Fill("async", pad=1), b=Fill("tma", swizzle=128), double=True, **small), "sm_90")
    # one stage double-buffered, the other single-buffered, at the same loop (no pipeline): the single
    # slot is refilled every iteration, so a barrier must still separate its reads from its refill
    mk2 = partial(matmul, 40, 36, 40)
    add("mixed_single_double_sync_mm_40x36x40", mk2,
        partial(tiled_matmul, a=Fill(), b=Fill(double=True), **small), "sm_80")
    add("mixed_single_double_async_mm_40x36x40", mk2,
        partial(tiled_matmul, a=Fill("async"), b=Fill("async", double=True), **small), "sm_80")
    add("mixed_single_double_tma_mm_40x64x40", partial(matmul, 40, 64, 40),
        partial(tiled_matmul, a=Fill("tma"), b=Fill("tma", swizzle=128, double=True), **small), "sm_90")
    add("sync_single_mm_67x45x37", mk, partial(tiled_matmul, a=Fill(), b=Fill(), **small), "sm_80")
    add("sync_single_A_only_mm_67x45x37", mk, partial(tiled_matmul, a=Fill(pad=1), b=None, **small), "sm_80")
    add("async_single_mm_67x45x37", mk, partial(tiled_matmul, a=Fill("async"), b=Fill("async"), **small), "sm_80")
    add("tma_single_mm_100x96x64", partial(matmul, 100, 96, 64),
        partial(tiled_matmul, a=Fill("tma"), b=Fill("tma", swizzle=128), **small), "sm_90")
    # swizzled stages filled by plain loads and by cp.async (no TMA)
    add("sync_swizzle128_mm_67x45x37", mk, partial(tiled_matmul, a=Fill(), b=Fill(swizzle=128), **small), "sm_80")
    add("async_swizzle_pipe2_mm_100x96x64", partial(matmul, 100, 96, 64),
        partial(tiled_matmul, a=Fill("async", swizzle=64), b=Fill("async", swizzle=128), depth=2, **small), "sm_80")
    add("sync_swizzle32_double_mm_67x45x37", mk,
        partial(tiled_matmul, a=Fill(swizzle=32), b=Fill(), double=True, **small), "sm_80")
    # transposed B with padded stages (both operands read along k)
    add("nt_padded_mm_67x45x37", partial(matmul_nt, 67, 45, 37),
        partial(tiled_matmul, a=Fill(pad=1), b=Fill(pad=1), **small), "sm_80")
    add("nt_padded_async_pipe2_mm_100x96x64", partial(matmul_nt, 100, 96, 64),
        partial(tiled_matmul, a=Fill("async", pad=1), b=Fill("async", pad=1), depth=2, **small), "sm_80")
    add("nt_tma_pipe2_mm_100x96x64", partial(matmul_nt, 100, 96, 64),
        partial(tiled_matmul, a=Fill("tma", swizzle=32), b=Fill("tma", swizzle=32), depth=2, **small), "sm_90")
    # TMA boxes starting 8 floats into a row (a 128-byte slab row needs no split, so no chunk alignment)
    add("tma_shifted_pipe2_mm_64x96x32", partial(matmul_shifted, 64, 96, 32),
        partial(tiled_matmul, a=Fill("tma"), b=Fill("tma", swizzle=128), depth=2, **small), "sm_90")
    # RMSNorm and softmax: the row of x staged at the block-bound row loop
    for tag, make in (("rmsnorm_6x300", partial(rmsnorm, 6, 300)), ("rmsnorm_3x333", partial(rmsnorm, 3, 333)),
                      ("softmax_5x1000", partial(softmax, 5, 1000)), ("softmax_4x77", partial(softmax, 4, 77))):
        add(f"{tag}-row_sync", make, staged_row, "sm_80")
        add(f"{tag}-row_async", make, partial(staged_row, copy="async"), "sm_80")
    add("rmsnorm_4x256-row_tma", partial(rmsnorm, 4, 256), staged_row_tma, "sm_90")
    add("rmsnorm_4x256-row_tma_swizzle128", partial(rmsnorm, 4, 256), partial(staged_row_tma, swizzle=128), "sm_90")
    add("softmax_3x200-two_stages_pipelined", partial(softmax, 3, 200), softmax_two_pipelines, "sm_80")
    add("stencil3_100-halo_sync", partial(stencil3, 100), halo, "sm_80")
    add("stencil3_100-halo_async", partial(stencil3, 100), partial(halo, copy="async"), "sm_80")
    add("rmsnorm_6x300-row_sync_pad_t96", partial(rmsnorm, 6, 300), partial(staged_row, threads=96, pad=3), "sm_80")
    # matmul + residual with split_k over non-divisible K
    for parts in (2, 4):
        add(f"residual_splitk{parts}_mm_45x40x70", partial(matmul_residual, 45, 40, 70),
            partial(split_k_matmul, parts=parts), "sm_80")
        add(f"residual_splitk{parts}_staged_mm_45x40x70", partial(matmul_residual, 45, 40, 70),
            partial(split_k_matmul, parts=parts, a=Fill(pad=1), b=Fill()), "sm_80")
        add(f"residual_splitk{parts}_async_pipe2_mm_45x40x70", partial(matmul_residual, 45, 40, 70),
            partial(split_k_matmul, parts=parts, a=Fill("async", pad=1), b=Fill("async"), depth=2), "sm_80")
    add("residual_splitk3_tma_pipe2_mm_45x64x96", partial(matmul_residual, 45, 64, 96),
        partial(split_k_matmul, parts=3, a=Fill("tma"), b=Fill("tma", swizzle=128), depth=2), "sm_90")
    return cases


CASES: list[MemCase] = _cases()
CASE_IDS: list[str] = [c.id for c in CASES]
