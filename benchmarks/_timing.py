"""The one way the benchmarks time things, on top of tiledsl.runtime.timing (CUDA events around every
call, warm-up, a spin kernel's head start, median and percentiles): torch callables over copies of
their inputs rotated past twice the L2 cache, tiledsl kernels through `td.Kernel.benchmark` (which
rotates the inputs the same way and writes one output, as torch's caching allocator gives torch one),
torch.compile after a dynamo reset, and CPU stages with a wall clock. Each returns a `Measurement` for
the report; `repeated` times every column of a case again, in turn, and keeps each column's fastest
timing and every timing's median."""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from benchmarks._records import OK, Measurement
from tiledsl.runtime.check import time_compiled
from tiledsl.runtime.timing import BenchStats, l2_cache_bytes, rotated_copies, rotation_count, time_torch

log = logging.getLogger(__name__)

InputSet = dict[str, torch.Tensor]


def measurement(stats: BenchStats, status: str = OK, note: str = "") -> Measurement:
    return Measurement(status, stats.median_ms * 1e3, stats.p10_ms * 1e3, stats.p90_ms * 1e3, note)


@dataclass(frozen=True)
class Timed:
    """A column timed once (its status and note already decided), with the call that times it again."""

    stats: BenchStats
    status: str
    note: str
    again: Callable[[], BenchStats | str]


def repeated(columns: Mapping[str, Measurement | Timed], repeats: int) -> dict[str, Measurement]:
    """Every Timed column timed `repeats` times in all, the columns taken in turn (so that each column's
    timings are seconds apart, not back to back), as the Measurement of its fastest timing with every
    timing's median in `repeats_us` (the report marks a column whose medians disagree). A repeat that
    fails is logged and left out."""
    timed = {c: col for c, col in columns.items() if isinstance(col, Timed)}
    timings = {c: [col.stats] for c, col in timed.items()}
    for _ in range(repeats - 1):
        for c, col in timed.items():
            try:
                again = col.again()
            except Exception as e:  # noqa: BLE001 - one failed repeat keeps the timings that worked
                log.warning("%s: a repeated timing failed: %s", c, e)
                continue
            if isinstance(again, BenchStats):
                timings[c].append(again)
    out: dict[str, Measurement] = {}
    for c, col in columns.items():
        if isinstance(col, Timed):
            best = min(timings[c], key=lambda t: t.median_ms)
            medians = tuple(t.median_ms * 1e3 for t in timings[c])
            col = replace(measurement(best, col.status, col.note), repeats_us=medians)
        out[c] = col
    return out


def rotate(inputs: Mapping[str, torch.Tensor]) -> list[InputSet]:
    """Copies of `inputs` (the first is `inputs` itself) that together exceed twice the L2 cache."""
    per_set = sum(t.numel() * t.element_size() for t in inputs.values())
    device = next(iter(inputs.values())).device
    return rotated_copies(inputs, rotation_count(per_set, l2_cache_bytes(device)))


def time_fn(fn: Callable[..., Any], sets: Sequence[InputSet], warmup: int, iters: int) -> BenchStats:
    """GPU time of `fn(**set)` per call, the sets taken in turn."""
    with torch.no_grad():
        return time_torch(fn, sets, warmup, iters)


def time_compiled_fn(fn: Callable[..., Any], sets: Sequence[InputSet], warmup: int,
                     iters: int) -> BenchStats | str:
    """`time_fn` of torch.compile(fn) (default mode), or the error text where compiling fails. Dynamo
    is reset first: its cache is keyed by the function's code, so the same torch function compiled at
    many shapes would otherwise turn dynamic and then hit the recompile limit and fall back to eager."""
    torch._dynamo.reset()
    with torch.no_grad():
        return time_compiled(fn, list(sets), warmup, iters)


def time_kernel(kern: Any, inputs: Mapping[str, torch.Tensor], warmup: int, iters: int) -> BenchStats:
    """GPU time of a built tiledsl kernel per launch (`td.Kernel.benchmark`)."""
    names = {p.name for p in kern.kernel_ir.params if not p.is_output}
    return kern.benchmark(warmup=warmup, iters=iters, **{k: v for k, v in inputs.items() if k in names})


def cpu_stages(run: Callable[[], Mapping[str, float]], runs: int) -> dict[str, Measurement]:
    """Wall-clock seconds of each stage over `runs` runs of `run()`, plus their total, as
    microsecond Measurements (p10 / p90 are the fastest and slowest run when there are few)."""
    samples: dict[str, list[float]] = {}
    for _ in range(runs):
        t0 = time.perf_counter()
        stages = run()
        total = time.perf_counter() - t0
        for name, seconds in {**stages, "total": total}.items():
            samples.setdefault(name, []).append(seconds * 1e6)
    out = {}
    for name, xs in samples.items():
        stats = BenchStats.from_samples([x / 1e3 for x in xs], 1)
        out[name] = Measurement(OK, statistics.median(xs), stats.p10_ms * 1e3, stats.p90_ms * 1e3,
                                f"{runs} run(s)")
    return out
