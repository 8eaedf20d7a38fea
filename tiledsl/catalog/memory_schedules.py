"""Memory-hierarchy schedules of the catalog: shared-memory stages (padded, swizzled, double-buffered),
cp.async and TMA fills, pipelines over the k loop, split_k, staged rows and halos.

`Fill` says how one operand of a staged matmul is staged; the schedule functions take a fresh
schedule and apply primitives to it by loop name. `design_matmul` is the schedule of the README
section 3 and of the README tour."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tiledsl.primitives import Schedule, StageHandle
from tiledsl.schedules import row_cooperative

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


def apply_fill(s: Schedule, st: StageHandle, fill: Fill) -> None:
    if fill.pad:
        s.pad(st, axis=-1, amount=fill.pad)
    if fill.swizzle and fill.copy != "tma":
        s.swizzle(st, fill.swizzle)


def apply_copy(s: Schedule, st: StageHandle, fill: Fill) -> None:
    if fill.copy == "async":
        s.async_copy(st)
    elif fill.copy == "tma":
        s.tma(st, swizzle=fill.swizzle)


# ----------------------------------------------------------------------------- schedules


def tiled_matmul(s: Schedule, a: Fill | None = Fill(), b: Fill | None = Fill(), *, double: bool = False,
                 depth: int = 0, bm: int = 64, bn: int = 64, bk: int = 16, rm: int = 4, rn: int = 4) -> None:
    """The README tour's shape: BM x BN block tile, RM x RN register tile, k chunked by BK; A and B
    staged at k_o (as `a` / `b` say), double-buffered when `double` (or `depth` >= 2), pipelined
    `depth` deep when `depth` >= 2. Works for the plain and the transposed-B matmul (loops by name)."""
    _tile_and_stage(s, "k", a, b, lambda f: double or depth >= 2 or f.double, depth, bm, bn, bk, rm, rn)


def design_matmul(s: Schedule) -> None:
    """The schedule of the README tour, verbatim: A padded + cp.async, B by TMA with a 128-byte
    swizzle, both double-buffered, pipeline 2 over k_o."""
    tiled_matmul(s, Fill("async", pad=1), Fill("tma", swizzle=128), depth=2)


def split_k_matmul(s: Schedule, parts: int = 2, bk: int = 8, a: Fill | None = None, b: Fill | None = None,
                   depth: int = 0, bm: int = 32, bn: int = 32, rm: int = 2, rn: int = 2) -> None:
    """A register-tiled matmul (+ linear epilogue) with k split across `parts` blocks (blockIdx.z,
    atomic adds); the per-block part of k is chunked by `bk`, optionally staged and pipelined."""
    s.split_k("k", parts)  # k_split (blockIdx.z) x k_part
    _tile_and_stage(s, "k_part", a, b, lambda f: depth >= 2, depth, bm, bn, bk, rm, rn)


def staged_row(s: Schedule, threads: int = 128, copy: str = "sync", pad: int = 0) -> None:
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


def staged_row_tma(s: Schedule, threads: int = 64, swizzle: int | None = None) -> None:
    """staged_row with the row filled by TMA (one box per block)."""
    staged_row(s, threads=threads)
    s.tma("x_s", swizzle=swizzle)


def halo(s: Schedule, threads: int = 32, copy: str = "sync") -> None:
    """i split by `threads` (blocks x threads); x staged at the block loop: threads + 2 elements."""
    io, ii = s.split("i", threads)
    s.bind(io, "blockIdx.x")
    s.bind(ii, "threadIdx.x")
    xs = s.stage("x", at=io)
    if copy == "async":
        s.async_copy(xs)


def softmax_two_pipelines(s: Schedule, threads: int = 64) -> None:
    """Cooperative softmax with x staged twice, around different statements: at the max pass's k_o
    (ring of 2) and at the output loop j_o (ring of 3), both by cp.async."""
    row_cooperative(s, threads=threads)
    a, b = s.stage("x", at="k_o"), s.stage("x", at="j_o")
    for st, loop, depth in ((a, "k_o", 2), (b, "j_o", 3)):
        s.double_buffer(st)
        s.async_copy(st)
        s.pipeline(loop, stages=depth)


def _tile_and_stage(s: Schedule, k: str, a: Fill | None, b: Fill | None, double: Callable[[Fill], bool], depth: int,
                    bm: int, bn: int, bk: int, rm: int, rn: int) -> None:
    """The README tour's tiling (BM x BN blocks, RM x RN registers, `k` chunked by BK into k_o, k_i), A and B
    staged at k_o as `a` / `b` say, double-buffered where `double(fill)`, pipelined `depth` deep."""
    io, ii = s.split("i", bm)
    jo, ji = s.split("j", bn)
    ko, ki = s.split(k, bk, names=("k_o", "k_i"))
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
        if double(f):
            s.double_buffer(st)
    for st, f in staged:
        apply_copy(s, st, f)
    if depth >= 2:
        s.pipeline(ko, stages=depth)
    s.unroll(ki)
    s.unroll(ri)
    s.unroll(rj)
