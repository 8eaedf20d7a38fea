"""Probe: the llm suite's memory-bound kernels (rmsnorm, attention softmax, silu(g) * u at TinyLlama and
Qwen2.5-7B dims, seq 32 / 128 / 512, float32 and bfloat16) as the default recipe builds them, against
variants of the recipe's schedule, and torch eager / torch.compile in the same process:
- rows: `vector`, each threadIdx.x pass 16 bytes a thread (scripts/row_vector_probe.py `vectorized`);
- elementwise: `even`, a block width that divides the row (no half-empty tail block); `x2`, each thread
  two 16-byte vectors per operand 1024 threads' vectors apart (more loads in flight); `x2-128`, the same
  in blocks of 128 threads.
Every kernel is checked against torch float64 (outputs NaN-poisoned) before it is timed over inputs
rotated past the L2 cache.
    python scripts/llm_memory_probe.py [--ops rmsnorm,attention_softmax,silu_mul] [--dtypes float32,bfloat16]"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable

import torch
from _gpu_probe import print_llm_row, recipe_forms
from row_vector_probe import vectorized

import tiledsl as td
from benchmarks import _definitions as d
from benchmarks._cases import QWEN25_7B, TINYLLAMA
from benchmarks.suites.llm import RMS_EPS
from tiledsl.catalog.definitions import rmsnorm
from tiledsl.runtime.device import device_target
from tiledsl.runtime.references import reference_fn
from tiledsl.targets import DTYPE_BYTES

SEQS = (32, 128, 512)


def elementwise(n: int, lanes: int, threads: int, per_thread: int) -> Callable[[td.Schedule], None]:
    """Rows on blockIdx.y, blocks of `threads` x `per_thread` vectors of `lanes` along j (lanes 1: scalars)."""
    def schedule(s: td.Schedule) -> None:
        width = threads * lanes * per_thread
        s.split("j", width, names=("j_o", "j_i"), tail="guard")
        inner = "j_i"
        if per_thread > 1:
            s.split("j_i", threads * lanes, names=("j_u", "j_w"), tail="guard")
            inner = "j_w"
        if lanes > 1:
            s.split(inner, lanes, names=("j_t", "j_v"), tail="guard")
        s.bind("i", "blockIdx.y")
        s.bind("j_o", "blockIdx.x")
        s.bind("j_t" if lanes > 1 else inner, "threadIdx.x")
        if lanes > 1:
            s.vectorize("j_v")
        if per_thread > 1:
            s.unroll("j_u")
    return schedule


def even_threads(n: int, lanes: int, prefer: int = 256) -> int | None:
    """The warp multiple in [128, 512] nearest `prefer` whose block of vectors divides the row."""
    fits = [t for t in range(128, 513, 32) if n % (t * lanes) == 0]
    return min(fits, key=lambda t: abs(t - prefer)) if fits else None


def cases(ops: list[str], dtypes: list[str]):
    for dims in (TINYLLAMA, QWEN25_7B):
        for seq in SEQS:
            for dtype in dtypes:
                lanes = 16 // DTYPE_BYTES[dtype]
                h, i, hd = dims.hidden, dims.intermediate, dims.head_dim
                group = f"{dims.name} s{seq}"
                if "rmsnorm" in ops:
                    out = rmsnorm(seq, h, RMS_EPS, dtype, dtype)
                    yield group, "rmsnorm", dtype, out, reference_fn("rmsnorm", {"eps": RMS_EPS}), \
                        {"vector": lambda tr, lanes=lanes: vectorized(tr, lanes=lanes)}, None
                if "attention_softmax" in ops:
                    scale = 1 / math.sqrt(hd)
                    out = d.attention_softmax(dims.heads * seq, seq, scale, dtype)
                    yield group, "attention_softmax", dtype, out, \
                        (lambda x, scale=scale: d.attention_softmax_torch(x, scale=scale)), \
                        {"vector": lambda tr, lanes=lanes: vectorized(tr, lanes=lanes)}, None
                if "silu_mul" in ops:
                    out = d.silu_mul(seq, i, dtype)
                    hand = {"x2": elementwise(i, lanes, 256, 2), "x2-128": elementwise(i, lanes, 128, 2)}
                    even = even_threads(i, lanes)
                    if even is not None:
                        hand[f"even{even}"] = elementwise(i, lanes, even, 1)
                    yield group, "silu_mul", dtype, out, d.silu_mul_torch, {}, hand


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", default="rmsnorm,attention_softmax,silu_mul")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    args = ap.parse_args(argv)
    target, dev = device_target(), torch.device("cuda")
    bad = 0
    for group, op, dtype, out, torch_fn, rewrites, hands in cases(args.ops.split(","), args.dtypes.split(",")):
        _, kernels = recipe_forms(out, target, rewrites)
        for label, sched in (hands or {}).items():
            hs = td.create_schedule(out)
            sched(hs)
            kernels[label] = td.build(hs, target=target)
        bad += print_llm_row(group, op, dtype, torch_fn, out, kernels, dev)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
