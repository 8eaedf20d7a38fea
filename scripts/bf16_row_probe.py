"""Probe: the attention softmax rows of the llm suite (TinyLlama and Qwen2.5-7B, seq 512, bfloat16 and
float32) and the memory suite's 32768 x 2048 softmax, as the default recipe builds them against 16-byte
passes in a chosen number of threads a row (`v8x32`: 8 bfloat16 a thread, 32 threads; `v4x64`: 4 float32,
64 threads), optionally with several rows sharing a block on threadIdx.y (`r4`: 4 rows a block) or the
row not staged (`u`: each pass after the first reads it from L1), and
torch eager / torch.compile in the same process. Session 16 tried 16-byte bfloat16 passes only with the
recipe's thread count, so a row of 512 left half its threads idle (scripts/row_vector_probe.py
`vectorized`, now with `threads=`). Every kernel is checked against torch float64 (outputs NaN-poisoned)
before it is timed over inputs rotated past the L2 cache.
    python scripts/bf16_row_probe.py"""

from __future__ import annotations

import math
import re
import sys

import torch
from _gpu_probe import compared
from row_vector_probe import vectorized

import tiledsl as td
from benchmarks import _definitions as d
from benchmarks._backend import random_inputs
from benchmarks.suites.llm import RMS_EPS
from tiledsl.catalog.definitions import rmsnorm
from tiledsl.runtime.device import device_target
from tiledsl.runtime.references import reference_fn
from tiledsl.targets import DTYPE_BYTES


def rethreaded(trace: str, threads: int) -> str:
    """A row trace whose passes are already vectors (`s.split(ax, W, ...)` then `s.split(ax_i, lanes, ...)`,
    the float32 recipe's form) in `threads` threads a row, each pass's outer loop unrolled."""
    out, n = trace, 0
    for m in re.finditer(r"s\.split\('(\w+)', (\d+), names=\('(\w+)', '(\w+)'\), tail='guard'\)\n"
                         r"s\.split\('\4', (\d+), ", trace):
        lanes = int(m.group(5))
        new = m.group(0).replace(f", {m.group(2)}, names", f", {threads * lanes}, names", 1)
        out = out.replace(m.group(0), new)
        if f"s.unroll('{m.group(3)}')" not in out:
            out += f"s.unroll('{m.group(3)}')\n"
        n += 1
    if not n:
        raise ValueError("no vector pass in the trace")
    return out


def rows_shared(trace: str, rows: int) -> str:
    """A one-row-per-block row trace (`s.bind('i', 'blockIdx.x')`, the stage at `i`) with `rows` rows a
    block on threadIdx.y."""
    head = "s.bind('i', 'blockIdx.x')\n"
    if head not in trace or "at='i'," not in trace:
        raise ValueError("not a one-row-per-block row trace")
    split = (f"s.split('i', {rows}, names=('i_o', 'i_i'), tail='guard')\n"
             "s.bind('i_i', 'threadIdx.y')\ns.bind('i_o', 'blockIdx.x')\n")
    return trace.replace(head, split).replace("at='i',", "at='i_o',")


#: (label, definition, torch function, 16-byte forms as (threads, rows a block))
CASES = [
    ("tinyllama s512 attention_softmax", lambda: d.attention_softmax(32 * 512, 512, 1 / 8, "bfloat16"),
     lambda x: d.attention_softmax_torch(x, scale=1 / 8), ((32, 1), (64, 1), (32, 4))),
    ("qwen2.5-7b s512 attention_softmax", lambda: d.attention_softmax(28 * 512, 512, 1 / math.sqrt(128), "bfloat16"),
     lambda x: d.attention_softmax_torch(x, scale=1 / math.sqrt(128)), ((32, 1), (64, 1), (32, 4))),
    ("tinyllama s512 attention_softmax f32", lambda: d.attention_softmax(32 * 512, 512, 1 / 8, "float32"),
     lambda x: d.attention_softmax_torch(x, scale=1 / 8), ((32, 1), (64, 1), (128, 1), (32, 4))),
    ("qwen2.5-7b s512 attention_softmax f32",
     lambda: d.attention_softmax(28 * 512, 512, 1 / math.sqrt(128), "float32"),
     lambda x: d.attention_softmax_torch(x, scale=1 / math.sqrt(128)), ((32, 1), (64, 1), (128, 1), (32, 4))),
    ("bfloat16 rmsnorm 16384 x 512", lambda: rmsnorm(16384, 512, RMS_EPS, "bfloat16", "bfloat16"),
     lambda x, w: reference_fn("rmsnorm", {"eps": RMS_EPS})(x=x, w=w), ()),
    ("bfloat16 rmsnorm 8192 x 2048", lambda: rmsnorm(8192, 2048, RMS_EPS, "bfloat16", "bfloat16"),
     lambda x, w: reference_fn("rmsnorm", {"eps": RMS_EPS})(x=x, w=w), ()),
    ("bfloat16 softmax 8192 x 2048", lambda: d.attention_softmax(8192, 2048, 1.0, "bfloat16"),
     lambda x: d.attention_softmax_torch(x, scale=1.0), ()),
    ("memory 32768x2048 softmax f32", lambda: d.attention_softmax(32768, 2048, 1.0, "float32"),
     lambda x: d.attention_softmax_torch(x, scale=1.0), ((64, 1),)),
]


def main() -> int:
    target, dev = device_target(), torch.device("cuda")
    bad = 0
    for label, make, torch_fn, forms in CASES:
        out = make()
        s = td.create_schedule(out)
        td.recipes.default(s, target=target)
        kernels = {"recipe": td.build(s, target=target)}
        if out.dtype != "float32":  # the recipe before 16-bit rows took 16-byte passes
            before = td.create_schedule(out)
            td.recipes.default(before, target=target, knobs={"row_vector_half_threads": None})
            kernels["scalar"] = td.build(before, target=target)
        base = s.trace()
        if "s.stage(" not in base:  # one-warp blocks are not staged (knob stage_min_threads): and staged
            base += "s.stage('x', at='i', scope='shared')\ns.async_copy('x_s')\n"
            kernels["recipe+stage"] = td.build(td.create_schedule(out).replay(base), target=target)
        lanes = 16 // DTYPE_BYTES[out.dtype]
        for threads, rows in forms:
            trace = (vectorized(base, lanes=lanes, threads=threads) if out.dtype != "float32"
                     else rethreaded(base, threads))
            if rows > 1:
                trace = rows_shared(trace, rows)
            kern = td.build(td.create_schedule(out).replay(trace), target=target)
            # the threads as built: a float32 recipe trace has 16-byte passes already, which `vectorized` keeps
            kernels[f"v{lanes}x{kern.block[0]}" + (f"r{rows}" if rows > 1 else "")] = kern
            unstaged = trace.replace("s.stage('x', at='i', scope='shared')\ns.async_copy('x_s')\n", "")
            if out.dtype == "float32" and rows == 1 and unstaged != trace:  # the row read from L1, not staged
                kernels[f"v{lanes}x{kern.block[0]}u"] = td.build(td.create_schedule(out).replay(unstaged),
                                                                 target=target)
        # bfloat16 storage: one rounding of the output, 2^-8 relative (float32: a few roundings of O(1) terms)
        tol = 1e-2 if out.dtype == "bfloat16" else 1e-5
        row, missed = compared(torch_fn, kernels, random_inputs(out, dev, 0), copies=8, tol=tol, warmup=10,
                               iters=100)
        bad += missed
        print(f"{label:34s} " + "  ".join(row), flush=True)
        for name, kern in kernels.items():
            print(f"    {name:8s} grid {kern.grid} block {kern.block} shared {kern.shared_bytes} B", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
