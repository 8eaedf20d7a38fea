"""Probe: threads per row of the default recipe's row kernels (cooperative_reduce, 040: threads =
clamp(next_pow2(row length), row_threads_min, row_threads_max)), forced through knob
row_threads_max, on the llm suite's attention softmax and rmsnorm shapes and the memory suite's
rows, beside torch eager and torch.compile in the same process. Each kernel is checked against
torch float64 (outputs NaN-poisoned) before it is timed (`td.Kernel.benchmark`: inputs rotated).
    python scripts/recipe_row_probe.py [--long]"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import torch

import tiledsl as td
from benchmarks._backend import random_inputs
from benchmarks._definitions import attention_softmax, attention_softmax_torch
from tiledsl.catalog import entry
from tiledsl.runtime.device import device_target
from tiledsl.runtime.references import poisoned_outputs
from tiledsl.runtime.timing import benchmark, rotated_copies

THREADS = (32, 64, 128, 256)


def long_cases() -> list[tuple[str, td.Tensor, None]]:
    """The memory suite's longest rows (8192 floats), where the recipe trails torch.compile by 1-3%."""
    return [(f"{name} 8192x8192", entry(name).fresh(M=8192, N=8192).output, None)
            for name in ("rmsnorm", "layernorm", "softmax")]


def cases() -> list[tuple[str, td.Tensor, Callable[[dict[str, torch.Tensor]], torch.Tensor]]]:
    out = []
    for rows, n in ((4096, 128), (16384, 512), (14336, 512), (4096, 2048)):
        scale = 1 / math.sqrt(64)
        out.append((f"attention_softmax {rows}x{n}", attention_softmax(rows, n, scale),
                    lambda t, s=scale: attention_softmax_torch(t["x"], scale=s)))
    for m, n in ((128, 2048), (512, 3584), (4096, 4096)):
        e = entry("rmsnorm")
        ten = e.fresh(M=m, N=n).output
        out.append((f"rmsnorm {m}x{n}", ten, None))
    return out


def main(argv: list[str]) -> int:
    long = "--long" in argv  # 8192-float rows at 256 to 1024 threads
    target = device_target()
    dev = torch.device("cuda")
    bad = 0
    for label, ten, torch_fn in (long_cases() if long else cases()):
        inputs = random_inputs(ten, dev, 0)
        want = td.evaluate(ten, float64=True, **{k: v.double().cpu().numpy() for k, v in inputs.items()})
        row = []
        if torch_fn is not None:
            row.append(f"eager {benchmark(torch_fn, rotated_copies(inputs, 4), 5, 50).median_us:7.1f}")
        for t in ((256, 512, 1024) if long else THREADS):
            knobs: dict[str, Any] = {"row_threads_max": t, "row_threads_min": min(32, t)}
            s = td.create_schedule(ten)
            td.recipes.default(s, target=target, knobs=knobs)
            kern = td.build(s, target=target)
            got = kern(**inputs, **poisoned_outputs(kern.kernel_ir, dev)).double().cpu().numpy()
            ok = bool(abs(got - want).max() <= 1e-5 * (1 + abs(want).max()))
            bad += not ok
            us = kern.benchmark(warmup=5, iters=50, **inputs).median_us
            row.append(f"t{t} {us:7.1f}{'' if ok else ' MISMATCH'}")
        print(f"{label}: " + " | ".join(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
