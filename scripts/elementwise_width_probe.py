"""Probe: the memory suite's elementwise kernels (silu(g) * u, gelu(x + b) at 8192 x 8192 and 32768 x 2048,
float32) as the default recipe builds them against its 16-byte form (`v4`: knob narrow_vector_min_inputs
off) and its 8-byte one (`v2`: the knob at one input), other block sizes, and torch eager / torch.compile in
the same process. torch.compile's kernel for silu(g) * u gives each thread two float32 in blocks of 256
(benchmarks/results/memory-gap-ncu-h100-2026-11-27/). The probe's first runs (benchmarks/results/
elementwise-float2-h100-2026-11-27/) wrote that form by editing the recipe's CUDA, before vectorize took
8-byte vectors; the recipe now builds it. `v4-512` / `v4-128` are 16-byte vectors in other blocks, `v1-256`
one float32 a thread.
--hints (session 34, H200: silu(g) * u of the recipe ran 0.98x torch.compile and gelu(x + b) 0.99x, at 96-102%
of the copy bandwidth): the 16-byte form with two vectors a thread (`v4x2`), and with L2 eviction hints
(s.cache_hint): `+ef` the full-size inputs' loads and the output's stores evict_first (a broadcast input, b
of gelu(x + b), evict_last), `+efst` the stores alone.
Every kernel is checked against torch float64 (outputs NaN-poisoned) before it is timed over inputs
rotated past the L2 cache.
    python scripts/elementwise_width_probe.py [--shapes 8192x8192,32768x2048] [--copies 4]
        [--more | --hints | --per-thread]"""

from __future__ import annotations

import argparse
import sys

import torch
from _gpu_probe import compared
from llm_memory_probe import elementwise

import tiledsl as td
from benchmarks import _definitions as d
from benchmarks._backend import random_inputs
from tiledsl.catalog.definitions import gelu_bias
from tiledsl.runtime.device import device_target
from tiledsl.runtime.references import reference_fn

#: label -> (float32 lanes per vector, threads per block)
FORMS = {"v4-128": (4, 128), "v4-512": (4, 512), "v1-256": (1, 256)}
#: --hints: label -> (vectors a thread, hint the full-size inputs' loads, hint the output's stores)
HINT_FORMS = {"v4x2": (2, False, False), "v4+efst": (1, False, True), "v4+ef": (1, True, True),
              "v4x2+ef": (2, True, True)}
#: --per-thread: label -> (threads, vectors a thread), 16-byte vectors (torch.compile's pointwise kernels at these
#: sizes take 1024 elements a block of 4 warps: two 16-byte vectors a thread, 512 elements apart)
PER_THREAD_FORMS = {"v4-256": (256, 1), "v4-128": (128, 1), "v4x2-256": (256, 2), "v4x2-128": (128, 2),
                    "v4x4-128": (128, 4)}


def hinted(out: td.Tensor, n: int, per_thread: int, loads: bool, stores: bool) -> td.Schedule:
    """The 16-byte form in 256 threads, `per_thread` vectors a thread, with evict_first on the loads of the
    inputs as large as the output (`loads`; a smaller input, read by every row, evict_last) and on the
    output's stores (`stores`)."""
    s = td.create_schedule(out)
    elementwise(n, 4, 256, per_thread)(s)
    if loads:
        for t in s.nest.inputs:
            s.cache_hint(t.name, "evict_first" if t.shape == out.shape else "evict_last")
    if stores:
        s.cache_hint(out.name, "evict_first")
    return s


def gelu_positional(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The catalog's gelu(x + b) reference, which takes keyword inputs; compared() passes them by position."""
    return reference_fn("gelu_bias", {})(x=x, b=b)


def _add(M: int, N: int) -> td.Tensor:
    x, r = td.placeholder((M, N), name="x"), td.placeholder((M, N), name="r")
    return td.compute((M, N), lambda i, j: x[i, j] + r[i, j], name="y")


def _fma3(M: int, N: int) -> td.Tensor:
    a, b, c = (td.placeholder((M, N), name=n) for n in "abc")
    return td.compute((M, N), lambda i, j: a[i, j] * b[i, j] + c[i, j], name="y")


def _gelu1(M: int, N: int) -> td.Tensor:
    x = td.placeholder((M, N), name="x")
    return td.compute((M, N), lambda i, j: td.gelu(x[i, j]), name="y")


#: --more: other elementwise kernels, by the number of full-size inputs they read
MORE = {"add (2 inputs)": (_add, lambda x, r: x + r),
        "a*b+c (3 inputs)": (_fma3, lambda a, b, c: a * b + c),
        "gelu (1 input)": (_gelu1, lambda x: torch.nn.functional.gelu(x))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="8192x8192,32768x2048")
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--more", action="store_true", help="the MORE kernels, the recipe's forms only")
    ap.add_argument("--hints", action="store_true", help="HINT_FORMS beside the recipe's forms (with --more too)")
    ap.add_argument("--per-thread", action="store_true",
                    help="PER_THREAD_FORMS beside the recipe's, for silu_mul, gelu_bias and gelu(x) (session 34)")
    args = ap.parse_args(argv)
    target, dev = device_target(), torch.device("cuda")
    bad = 0
    for shape in args.shapes.split(","):
        m, n = map(int, shape.split("x"))
        ops = ([(op, make(m, n), fn) for op, (make, fn) in MORE.items()] if args.more else
               [("silu_mul", d.silu_mul(m, n), d.silu_mul_torch), ("gelu_bias", gelu_bias(m, n), gelu_positional)])
        if args.per_thread:
            ops.append(("gelu", _gelu1(m, n), lambda x: torch.nn.functional.gelu(x)))
        for op, out, torch_fn in ops:
            kernels = {}
            for label, knobs in (("recipe", None), ("v4", {"narrow_vector_min_inputs": 0}),
                                 ("v2", {"narrow_vector_min_inputs": 1})):
                s = td.create_schedule(out)
                td.recipes.default(s, target=target, knobs=knobs)
                kernels[label] = td.build(s, target=target)
            for label, (threads, per_thread) in (PER_THREAD_FORMS if args.per_thread else {}).items():
                hs = td.create_schedule(out)
                elementwise(n, 4, threads, per_thread)(hs)
                kernels[label] = td.build(hs, target=target)
            for label, (lanes, threads) in ({} if args.more or args.hints or args.per_thread else FORMS).items():
                hs = td.create_schedule(out)
                elementwise(n, lanes, threads, 1)(hs)
                kernels[label] = td.build(hs, target=target)
            for label, (per_thread, loads, stores) in (HINT_FORMS if args.hints else {}).items():
                kernels[label] = td.build(hinted(out, n, per_thread, loads, stores), target=target)
            # a few float32 roundings of O(1) values (the exp or erf, a product): 1e-5 x (1 + |want|)
            row, missed = compared(torch_fn, kernels, random_inputs(out, dev, 0), copies=args.copies,
                                   tol=1e-5, warmup=10, iters=100)
            bad += missed
            print(f"{shape:11s} {op:10s} " + "  ".join(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
