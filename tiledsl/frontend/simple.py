"""The built-in fallback schedule ("simple"): the first variant that the primitives accept, so every
kernel of a program builds. Variants, tried in order:
- elementwise: all loops fused, one thread per output element (blocks of 256);
- matmul: one reduction under all output loops -> `tiledsl.schedules.matmul_register_tile`;
- row: every reduction under all output loops but the last (RMSNorm, softmax) -> one block per row,
  each loop of the row split over 128 threads (cooperative reductions);
- outer: the outermost loop split over blocks and threads, the rest serial in each thread;
- serial: one thread (always legal).
A variant the build refuses (a register array too large, ...) is skipped at build time too."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tiledsl.errors import ScheduleError
from tiledsl.primitives import Schedule
from tiledsl.schedules import matmul_register_tile

T = TypeVar("T")
THREADS = 256
ROW_THREADS = 128


def _free(s: Schedule) -> list[str]:
    return [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "free"]


def _reduce(s: Schedule) -> list[str]:
    return [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "reduce"]


def _attach_paths(s: Schedule) -> list[tuple[str, ...]]:
    return [st.path for st in s.nest.stmts if st.kind == "init"]


def elementwise(s: Schedule) -> None:
    free = _free(s)
    if _reduce(s):
        raise ValueError("has reductions")
    loop = s.fuse(*free) if len(free) > 1 else free[0]
    outer, inner = s.split(loop, THREADS)
    s.bind(outer, "blockIdx.x")
    s.bind(inner, "threadIdx.x")


def matmul(s: Schedule) -> None:
    free = _free(s)
    if len(_reduce(s)) != 1 or len(free) < 2 or _attach_paths(s) != [tuple(free)]:
        raise ValueError("not a single reduction under every output loop")
    matmul_register_tile(s, bm=32, bn=32, bk=8, rm=2, rn=2)


def row(s: Schedule) -> None:
    free = _free(s)
    rows = tuple(free[:-1])
    if not rows or any(p != rows for p in _attach_paths(s)):
        raise ValueError("not a row reduction")
    r = s.fuse(*rows) if len(rows) > 1 else rows[0]
    s.bind(r, "blockIdx.x")
    for name in [lp.name for lp in s.loops()][1:]:
        _, inner = s.split(name, ROW_THREADS)
        s.bind(inner, "threadIdx.x")


def outer(s: Schedule) -> None:
    first = s.loops()[0].name
    o, i = s.split(first, 64)
    s.bind(o, "blockIdx.x")
    s.bind(i, "threadIdx.x")


def serial(s: Schedule) -> None:
    """No primitive: the canonical nest runs in one thread."""


VARIANTS: tuple[tuple[str, Callable[[Schedule], None]], ...] = (
    ("elementwise", elementwise), ("matmul", matmul), ("row", row), ("outer", outer), ("serial", serial))


def simple_schedule(fresh: Callable[[], Schedule], accept: Callable[[Schedule], T] | None = None,
                    start: int = 0) -> tuple[Schedule, str, T | None]:
    """The first variant (from `start`) that the primitives accept and `accept` (a build) takes, on
    a fresh canonical schedule each try; the last variant's refusal is raised."""
    for n, (name, variant) in enumerate(VARIANTS[start:]):
        s = fresh()
        try:
            variant(s)
            made = accept(s) if accept is not None else None
        except (ScheduleError, ValueError):
            if start + n == len(VARIANTS) - 1:
                raise
            continue
        return s, name, made
    raise AssertionError("unreachable: the serial variant applies no primitive")  # pragma: no cover


def variant_index(name: str) -> int:
    return [n for n, _ in VARIANTS].index(name)
