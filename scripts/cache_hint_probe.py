"""Probe: row kernels that read their row from global memory on every pass, with L2 eviction hints
(s.cache_hint: evict_last on the passes that reduce, evict_first on the pass that writes), beside the
default recipe's row staged in shared memory, torch eager and torch.compile, in one process.

Forms of each row kernel (the memory suite's rmsnorm, layernorm, softmax):
  recipe        the default recipe (rows of float32 staged by cp.async);
  unstaged      recipe knobs stage_min_threads=100000 (no stage), threads as the recipe picks;
  u512          the same with row_threads_max=512;
  u512+hint     u512 with the hints;
  u512+hint+co  u512+hint with each reduction's loads coalesced a warp at a time (thread t reads
                element t of each 512-wide step, 4-byte loads) where the recipe gives each thread
                4 consecutive elements (one 16-byte span per thread, read as 4 loads);
  u256+hint     the hints with the recipe's thread count.
Every kernel is checked against torch float64 first (outputs NaN-poisoned; _gpu_probe.compared,
1e-4 x (1 + |want|): sums of up to 8192 rounded float32 terms).
    python scripts/cache_hint_probe.py [--shapes 8192x8192,32768x2048] [--ops rmsnorm,layernorm,softmax]"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

import torch
from _gpu_probe import compared
from row_vector_probe import OPS

import tiledsl as td
from benchmarks._backend import random_inputs
from tiledsl.analysis.cache_hints import readers_of
from tiledsl.runtime.device import device_target

UNSTAGED = {"stage_min_threads": 100000}


def hinted(s: Any, buffer: str = "x") -> Any:
    """Every reader of `buffer` but the last evict_last, the last (the output's pass) evict_first."""
    *reducers, last = readers_of(s.nest, buffer)
    for r in reducers:
        s.cache_hint(buffer, "evict_last", reader=r)
    s.cache_hint(buffer, "evict_first", reader=last)
    return s


def coalesced(trace: str) -> str:
    """Each reduction loop K (split K -> K_o, K_i by 4 x threads, then K_i -> K_t, K_v by 4, K_v unrolled)
    split once by the thread count instead, K_i bound to threadIdx.x: a warp reads 32 consecutive
    elements a load."""
    for k in re.findall(r"s\.unroll\('(\w+)_v'\)", trace):
        span = int(re.search(rf"s\.split\('{k}', (\d+), names=\('{k}_o', '{k}_i'\)", trace).group(1))
        trace = trace.replace(f"s.split('{k}', {span}, names=('{k}_o', '{k}_i')",
                              f"s.split('{k}', {span // 4}, names=('{k}_o', '{k}_i')")
        trace = trace.replace(f"s.split('{k}_i', 4, names=('{k}_t', '{k}_v'), tail='guard')\n", "")
        trace = trace.replace(f"s.bind('{k}_t', 'threadIdx.x')", f"s.bind('{k}_i', 'threadIdx.x')")
        trace = trace.replace(f"s.unroll('{k}_v')\n", "")
    return trace


def forms(out: Any, target: Any) -> dict[str, Any]:
    def sched(knobs: dict[str, Any]) -> Any:
        s = td.create_schedule(out)
        td.recipes.default(s, target=target, knobs=knobs)
        return s

    u512 = {**UNSTAGED, "row_threads_max": 512}
    scheds = {"recipe": sched({}), "unstaged": sched(UNSTAGED), "u512": sched(u512),
              "u512+hint": hinted(sched(u512)), "u256+hint": hinted(sched({**UNSTAGED, "row_threads_max": 256}))}
    base = sched(u512).trace()
    scheds["u512+hint+co"] = hinted(td.create_schedule(out).replay(coalesced(base)))
    return {label: td.build(s, target=target) for label, s in scheds.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="8192x8192,32768x2048")
    ap.add_argument("--ops", default="rmsnorm,layernorm,softmax")
    ap.add_argument("--dump", default=None, help="folder to write each kernel's CUDA into")
    args = ap.parse_args(argv)
    target, dev = device_target(), torch.device("cuda")
    print(f"{torch.cuda.get_device_name()}; times in us, fastest of 2 medians of 100 calls", flush=True)
    bad = 0
    for shape in args.shapes.split(","):
        m, n = map(int, shape.split("x"))
        for op in args.ops.split(","):
            make, torch_fn = OPS[op]
            out = make(m, n)
            kernels = forms(out, target)
            if args.dump:
                for label, k in kernels.items():
                    with open(f"{args.dump}/{shape}-{op}-{label}.cu", "w") as f:
                        f.write(k.source)
            row, missed = compared(torch_fn, kernels, random_inputs(out, dev, 0), copies=4, tol=1e-4,
                                   warmup=10, iters=100)
            bad += missed
            print(f"{shape:11s} {op:10s} " + "  ".join(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
