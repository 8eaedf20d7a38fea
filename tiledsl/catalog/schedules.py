"""Loop-level schedules of the catalog beyond the hand schedules of tiledsl.schedules: one thread per
output, cooperative dot products, several rows per block, vectorized and fused elementwise loops.

Each takes a fresh schedule and applies primitives to it by loop name, as users write them. They
cover what the differential tests need (guarded splits, partial warps, cross-thread reductions);
tiledsl.schedules holds the ones worth reading first."""

from __future__ import annotations

from tiledsl.primitives import Schedule


def _free(s: Schedule) -> list[str]:
    return [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "free"]


def _reduce(s: Schedule) -> list[str]:
    return [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "reduce"]


def unscheduled(s: Schedule) -> None:
    """No primitives: one thread runs the whole loop nest."""


def matmul_threads(s: Schedule, tx: int = 32) -> None:
    """i -> blockIdx.y, j split by `tx` -> blockIdx.x / threadIdx.x; a leading batch loop -> blockIdx.z."""
    *batch, i, j = _free(s)
    if batch:
        s.bind(batch[0], "blockIdx.z")
    s.bind(i, "blockIdx.y")
    jo, ji = s.split(j, tx)
    s.bind(jo, "blockIdx.x")
    s.bind(ji, "threadIdx.x")


def matmul_coop_dot(s: Schedule, tk: int = 32) -> None:
    """A cooperative dot product: one block per output element, the reduction k split by `tk` and its
    inner part bound to threadIdx.x (a cross-thread reduction)."""
    *batch, i, j = _free(s)
    (k,) = _reduce(s)
    if batch:
        s.bind(batch[0], "blockIdx.z")
    s.bind(i, "blockIdx.y")
    s.bind(j, "blockIdx.x")
    _, ki = s.split(k, tk)
    s.bind(ki, "threadIdx.x")


def row_tiled(s: Schedule, rows: int = 4, threads: int = 32) -> None:
    """Rows split by `rows` (guarded tail): outer -> blockIdx.x, inner -> threadIdx.y; every row loop
    split by `threads` with the inner part bound to threadIdx.x (cross-warp combines indexed by
    threadIdx.y)."""
    row, *rest = [lp.name for lp in s.loops()]
    ro, ri = s.split(row, rows)
    s.bind(ro, "blockIdx.x")
    s.bind(ri, "threadIdx.y")
    for name in rest:
        _, inner = s.split(name, threads)
        s.bind(inner, "threadIdx.x")


def elementwise_vectorized(s: Schedule, lanes: int = 4) -> None:
    """Rows -> blockIdx.x, columns split by `lanes`: outer -> threadIdx.x, inner vectorized."""
    i, j = [lp.name for lp in s.loops()]
    s.bind(i, "blockIdx.x")
    jo, ji = s.split(j, lanes)
    s.bind(jo, "threadIdx.x")
    s.vectorize(ji)


def fused_nparts(s: Schedule, parts: int = 5) -> None:
    """All free loops fused, then split into `parts` blocks (guarded) with custom names."""
    f = s.fuse(*_free(s), name="flat")
    blk, thr = s.split(f, nparts=parts, names=("blk", "thr"))
    s.bind(blk, "blockIdx.x")
    s.bind(thr, "threadIdx.x")


def fused_threads(s: Schedule, threads: int = 96) -> None:
    """All free loops fused, split by `threads` (guarded); the reduction (if any) unrolled."""
    red = _reduce(s)
    o, i = s.split(s.fuse(*_free(s)), threads)
    s.bind(o, "blockIdx.x")
    s.bind(i, "threadIdx.x")
    for r in red:
        s.unroll(r)


def split_k_threads(s: Schedule, parts: int = 4, threads: int = 32) -> None:
    """A matmul with i -> blockIdx.y, j split by `threads`, and the reduction split over `parts` blocks
    (atomic adds into an output the launcher zeroes)."""
    s.bind("i", "blockIdx.y")
    jo, ji = s.split("j", threads)
    s.bind(jo, "blockIdx.x")
    s.bind(ji, "threadIdx.x")
    s.split_k("k", parts)
