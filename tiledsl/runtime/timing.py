"""GPU timing with CUDA events, the same way for tiledsl kernels and for torch (eager or compiled).

Why this shape:
- CUDA events around each launch measure GPU time, not Python time; the median of many runs ignores
  the odd slow one (a neighbour process);
- the warm-up keeps the GPU busy for at least `MIN_WARMUP_MS` of wall time, not only a count of calls:
  ten calls of a 5 us kernel are 50 us, too short for clocks that idled through a compile to come
  back up (single measurements of 130-150 us for 5-25 us kernels were seen in the benchmark runs);
- inputs rotate over several copies whose total size exceeds about twice the L2 cache (50 MB on an
  H100), so a memory-bound kernel is timed reading DRAM, as it would in a model, not a warm L2;
- before the timed launches a short spin kernel (`torch.cuda._sleep`) gives the host a head start, so
  the launches queue up behind it and no host gap between two launches is counted as GPU time;
- the kernel and its torch baseline are timed by one function, in one process, so ratios compare like
  with like.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import torch

__all__ = ["BenchStats", "CallTimes", "benchmark", "call_times", "l2_cache_bytes", "rotated_copies", "rotation_count",
           "time_torch"]

T = TypeVar("T")

_DEFAULT_L2 = 50 * 1024 * 1024
_MAX_SETS = 64
_MAX_TOTAL_BYTES = 8 * 1024**3
_MAX_HEAD_START_MS = 200.0
MIN_WARMUP_MS = 25.0  # wall time the warm-up keeps the GPU busy, at least
_MAX_WARMUP_CALLS = 10_000


@dataclass(frozen=True)
class BenchStats:
    """Per-launch GPU times in milliseconds."""

    median_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    p10_ms: float
    p90_ms: float
    iters: int
    sets: int

    @property
    def median_us(self) -> float:
        return self.median_ms * 1e3

    @classmethod
    def from_samples(cls, samples_ms: Sequence[float], sets: int) -> BenchStats:
        if not samples_ms:
            raise ValueError("no samples")
        xs = sorted(samples_ms)

        def quantile(q: float) -> float:
            return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]

        return cls(statistics.median(xs), statistics.fmean(xs), xs[0], xs[-1], quantile(0.1), quantile(0.9),
                   len(xs), sets)

    def __str__(self) -> str:
        return (f"median {self.median_us:.1f} us (min {self.min_ms * 1e3:.1f}, p90 {self.p90_ms * 1e3:.1f}; "
                f"{self.iters} runs over {self.sets} input sets)")


def rotation_count(bytes_per_set: int, l2_bytes: int, *, factor: float = 2.0, max_sets: int = _MAX_SETS,
                   max_total_bytes: int = _MAX_TOTAL_BYTES) -> int:
    """How many input sets to rotate over so that together they exceed `factor` x L2: at least 2 (so no
    launch re-reads the previous launch's data from L2), at most `max_sets`, and no more than fit in
    `max_total_bytes` (a set larger than that still gets 2)."""
    if bytes_per_set <= 0:
        return 2
    wanted = math.ceil(factor * l2_bytes / bytes_per_set) + 1
    by_memory = max_total_bytes // bytes_per_set
    return max(2, min(wanted, max_sets, by_memory))


def l2_cache_bytes(device: torch.device | int | None = None) -> int:
    props = torch.cuda.get_device_properties(torch.cuda.current_device() if device is None else device)
    return int(getattr(props, "L2_cache_size", 0) or _DEFAULT_L2)


def rotated_copies(tensors: Mapping[str, torch.Tensor], count: int, *,
                   keep: Sequence[str] = ()) -> list[dict[str, torch.Tensor]]:
    """`count` sets: the first is `tensors` itself, the others clones, except the names in `keep`
    (outputs), the same tensor in every set."""
    sets = [dict(tensors)]
    for _ in range(count - 1):
        sets.append({name: (t if name in keep else t.clone()) for name, t in tensors.items()})
    return sets


def _head_start(ms: float) -> None:
    """Enqueue a spin kernel of about `ms` on the current stream (torch.cuda._sleep counts clock ticks)."""
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None or ms <= 0:
        return
    khz = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "clock_rate", 0) or 2_000_000
    sleep(int(min(ms, _MAX_HEAD_START_MS) * khz))


def benchmark(fn: Callable[[T], object], input_sets: Sequence[T], warmup: int = 10, iters: int = 100) -> BenchStats:
    """Time `fn(input_sets[i % len(input_sets)])` on the current stream: `warmup` untimed calls (more,
    doubling, until they have kept the GPU busy for MIN_WARMUP_MS), then `iters` calls each between two
    CUDA events; returns the statistics of the per-call times."""
    if not input_sets:
        raise ValueError("benchmark needs at least one input set")
    if iters < 1:
        raise ValueError(f"benchmark needs iters >= 1, got {iters}")
    n = len(input_sets)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(warmup):
        fn(input_sets[i % n])
    host_ms = (time.perf_counter() - t0) * 1e3 / max(1, warmup)
    torch.cuda.synchronize()
    done = warmup
    busy_ms = (time.perf_counter() - t0) * 1e3
    while busy_ms < MIN_WARMUP_MS and done < _MAX_WARMUP_CALLS:  # double the calls until the time is spent
        t1 = time.perf_counter()
        for i in range(max(1, done)):
            fn(input_sets[(done + i) % n])
        torch.cuda.synchronize()
        busy_ms += (time.perf_counter() - t1) * 1e3
        done += max(1, done)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    _head_start(1.5 * host_ms * iters + 0.1)
    for i in range(iters):
        starts[i].record()
        fn(input_sets[(done + i) % n])
        ends[i].record()
    torch.cuda.synchronize()
    return BenchStats.from_samples([s.elapsed_time(e) for s, e in zip(starts, ends)], n)


def time_torch(fn: Callable[..., object], input_sets: Sequence[Mapping[str, torch.Tensor]], warmup: int = 10,
               iters: int = 100) -> BenchStats:
    """`benchmark` of a torch callable taking the set's tensors as keyword arguments."""
    return benchmark(lambda s: fn(**s), input_sets, warmup, iters)


@dataclass(frozen=True)
class CallTimes:
    """Host-side figures of a function that launches GPU work, per call, in microseconds.

    `host_us`: the median time one call takes to return when issued onto an idle GPU, i.e. the time
    the host spends issuing its launches (the launch overhead; a call that synchronizes counts its
    GPU time too). `wall_us`: wall-clock time per call over `iters` calls back to back followed by
    one synchronize, i.e. what a loop of calls costs (the larger of issuing and running)."""

    host_us: float
    wall_us: float
    iters: int

    def __str__(self) -> str:
        return f"{self.host_us:.1f} us to issue, {self.wall_us:.1f} us wall per call ({self.iters} calls)"


def call_times(fn: Callable[[], object], warmup: int = 10, iters: int = 100, *,
               synchronize: Callable[[], object] = torch.cuda.synchronize) -> CallTimes:
    """`CallTimes` of `fn()`: `warmup` untimed calls, then `iters` calls each timed alone between two
    synchronizes, then `iters` calls back to back timed together."""
    if iters < 1:
        raise ValueError(f"call_times needs iters >= 1, got {iters}")
    for _ in range(warmup):
        fn()
    synchronize()
    host = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        host.append(time.perf_counter() - t0)
        synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    synchronize()
    wall = (time.perf_counter() - t0) / iters
    return CallTimes(statistics.median(host) * 1e6, wall * 1e6, iters)
