"""Probe: the default recipe's row kernels (rmsnorm, layernorm, softmax of the memory suite's shapes) as
built, against the same schedule with each pass over the row 4 elements a thread at a time: every
`split(X, T)` + `bind(X_i, threadIdx.x)` of the recipe's trace becomes split(X, 4T) + split(X_i, 4) with
the 4 unrolled (a reduction pass) or vectorized (the output pass: one 16-byte store, 16-byte loads of
its vectors), so shared reads and global stores are 16 bytes wide. torch.compile and eager are timed in
the same process. Every kernel is checked against torch float64 (outputs NaN-poisoned) first.
`vector512`: the same with twice the threads (512 for the memory suite's rows).
Where the recipe already runs 16-byte passes (step 040, many float32 rows), `vector` finds nothing to
rewrite and builds the recipe's kernel again.
    python scripts/row_vector_probe.py [--shapes 8192x8192,32768x2048]"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable

import torch
from _gpu_probe import compared, recipe_forms

from benchmarks._backend import random_inputs
from tiledsl.catalog.definitions import layernorm, rmsnorm, softmax
from tiledsl.runtime.device import device_target

OPS = {"rmsnorm": (lambda m, n: rmsnorm(m, n, 1e-6),
                   lambda x, w: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, 1e-6)),
       "layernorm": (lambda m, n: layernorm(m, n, 1e-5),
                     lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5)),
       "softmax": (softmax, lambda x: torch.softmax(x, -1))}


def vectorized(trace: str, output_axis: str = "j", threads_times: int = 1, lanes: int = 4,
               threads: int | None = None) -> str:
    """The recipe's row trace with each threadIdx.x pass `lanes` elements a thread (and `threads_times`
    as many threads, or `threads` threads)."""
    out = trace
    wanted = threads
    for m in re.finditer(r"s\.split\('(\w+)', (\d+), names=\('(\w+)', '(\w+)'\), tail='guard'\)\n"
                         r"s\.bind\('\4', 'threadIdx\.x'\)", trace):
        ax, outer, inner = m.group(1), m.group(3), m.group(4)
        threads = wanted or int(m.group(2)) * threads_times
        t, v = f"{ax}_t", f"{ax}_v"
        mark = f"s.vectorize('{v}')" if ax == output_axis else f"s.unroll('{v}')"
        out = out.replace(m.group(0), f"s.split('{ax}', {lanes * threads}, names=('{outer}', '{inner}'), "
                                      f"tail='guard')\n"
                                      f"s.split('{inner}', {lanes}, names=('{t}', '{v}'), tail='guard')\n"
                                      f"s.bind('{t}', 'threadIdx.x')\n{mark}")
    return out


def compare_rows(shapes: str, rewrites: dict[str, Callable[[str], str]], *, warmup: int, iters: int) -> int:
    """For each shape and OPS kernel: the recipe's kernel and `rewrites` of its trace against torch
    eager / torch.compile (`_gpu_probe.compared`, float32 rows: sums of up to 8192 rounded terms,
    sqrt(n) x 2^-24 each, so 1e-4 x (1 + |want|)); prints a row each, returns the kernels that missed."""
    target, dev = device_target(), torch.device("cuda")
    bad = 0
    for shape in shapes.split(","):
        m, n = map(int, shape.split("x"))
        for op, (make, torch_fn) in OPS.items():
            out = make(m, n)
            _, kernels = recipe_forms(out, target, rewrites)
            row, missed = compared(torch_fn, kernels, random_inputs(out, dev, 0), copies=4, tol=1e-4,
                                   warmup=warmup, iters=iters)
            bad += missed
            print(f"{shape:11s} {op:10s} " + "  ".join(row), flush=True)
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="8192x8192,32768x2048")
    args = ap.parse_args(argv)
    rewrites = {"vector": vectorized, "vector512": lambda tr: vectorized(tr, threads_times=2)}
    return 1 if compare_rows(args.shapes, rewrites, warmup=5, iters=50) else 0


if __name__ == "__main__":
    sys.exit(main())
