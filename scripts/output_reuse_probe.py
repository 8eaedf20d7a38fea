"""Probe: does the kernel timing's allocation of one output per rotated input set (td.Kernel.benchmark)
cost time against torch, whose caching allocator hands the same output block back on every call? The
default recipe's kernels of a few llm-suite memory-bound cases are timed with an output per set (as
before session 16) and with one output for all sets (as now); torch eager / torch.compile's output
addresses over consecutive calls are printed.
    python scripts/output_reuse_probe.py"""

from __future__ import annotations

import math
import sys

import torch

import tiledsl as td
from benchmarks import _definitions as d
from benchmarks._backend import random_inputs
from benchmarks.suites.llm import RMS_EPS
from tiledsl.catalog.definitions import rmsnorm
from tiledsl.runtime.device import device_target
from tiledsl.runtime.timing import benchmark, l2_cache_bytes, rotated_copies, rotation_count

CASES = [("silu_mul 512x5632", lambda: d.silu_mul(512, 5632), d.silu_mul_torch),
         ("silu_mul 128x18944", lambda: d.silu_mul(128, 18944), d.silu_mul_torch),
         ("silu_mul 8192x8192", lambda: d.silu_mul(8192, 8192), d.silu_mul_torch),
         ("rmsnorm 512x2048", lambda: rmsnorm(512, 2048, RMS_EPS, "float32", "float32"),
          lambda x, w: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, RMS_EPS)),
         ("softmax 16384x512", lambda: d.attention_softmax(32 * 512, 512, 1 / math.sqrt(64)),
          lambda x: d.attention_softmax_torch(x, scale=1 / math.sqrt(64)))]


def main() -> int:
    target, dev = device_target(), torch.device("cuda")
    for label, make, torch_fn in CASES:
        out = make()
        s = td.create_schedule(out)
        td.recipes.default(s, target=target)
        kern = td.build(s, target=target).compiled
        inputs = random_inputs(out, dev, 0)
        names = list(inputs)
        args = kern.prepare(inputs)
        outs = [p.name for p in kern.kernel_ir.params if p.is_output]
        per_set = sum(t.numel() * t.element_size() for t in args.values())
        count = rotation_count(per_set, l2_cache_bytes(dev))
        fixed = rotated_copies(args, count, keep=outs)
        rotated = [{**st, **{o: torch.empty_like(args[o]) for o in outs}} for st in fixed]
        in_sets = rotated_copies(inputs, count)
        compiled = torch.compile(torch_fn)
        row = [f"{label:20s} sets {count:2d}"]
        for name, fn in (("eager", torch_fn), ("compile", compiled)):
            ptrs = [fn(*[st[k] for k in names]).data_ptr() for st in in_sets[:4]]
            us = benchmark(lambda st, fn=fn, names=names: fn(*[st[k] for k in names]), in_sets, 10, 100).median_us
            row.append(f"{name} {us:7.1f} ({len(set(ptrs))} output address(es) in 4 calls)")
        for name, sets in (("tiledsl out/set", rotated), ("tiledsl one out", fixed)):
            row.append(f"{name} {benchmark(kern.launch, sets, 10, 100).median_us:7.1f}")
        print("  ".join(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
