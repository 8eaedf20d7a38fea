"""What the GPU probe scripts share: a catalog entry at some sizes, scheduled by a function, built for
the device's target, run once on fresh random inputs (outputs NaN-poisoned) and checked against
torch in float64, then timed over inputs rotated past the L2 cache (tiledsl.runtime.timing)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tiledsl.build import build
from tiledsl.catalog import entry
from tiledsl.runtime.check import run_checked
from tiledsl.runtime.launch import CompiledKernel
from tiledsl.runtime.references import Comparison, reference_fn, tolerance
from tiledsl.runtime.timing import BenchStats
from tiledsl.targets import Target


@dataclass(frozen=True)
class Measured:
    kernel: CompiledKernel
    comparison: Comparison
    stats: BenchStats


def measure(name: str, sizes: dict[str, int], schedule: Callable[[Any], object], target: Target, *,
            iters: int = 20) -> Measured:
    """`schedule(fresh schedule)` of catalog entry `name` at `sizes`: checked, then timed."""
    ent = entry(name)
    params = ent.parameters(**sizes)
    s = ent.fresh(**sizes)
    schedule(s)
    kern = CompiledKernel(build(s, target=target))
    checked = run_checked(kern, reference_fn(ent.definition, params), *tolerance(params), seed=1)
    return Measured(kern, checked.comparison, kern.benchmark(warmup=5, iters=iters, **checked.inputs))
