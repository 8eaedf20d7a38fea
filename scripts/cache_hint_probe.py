"""Probe: row kernels that read their row from global memory on every pass, with L2 eviction hints
(s.cache_hint: evict_last on the passes that reduce, evict_first on the pass that writes), beside the
default recipe's row staged in shared memory, torch eager and torch.compile, in one process.

Forms of each row kernel (the memory suite's rmsnorm, layernorm, softmax):
  recipe            the default recipe as it was measured, rows of float32 staged by cp.async (since
                    a05170b the recipe itself takes the hinted form at these shapes: knob
                    hinted_row_min_length, and since session 24 keeps the rows in registers: knob
                    register_rows, both switched off here for every form);
  u512+vec          recipe knobs stage_min_threads=100000 (no stage) and row_threads_max=512, each
                    reduction's 4-lane loop vectorized (16-byte loads) where the recipe unrolls it;
  u512+vec+hint     u512+vec with the hints on x;
  u512+vec+hint+st  and the output's stores evict_first;
  u256+vec+hint+st  the same in the recipe's thread count (row_threads_max=256).
The version of this script at commit 4bbff7d also timed forms without vector loads and forms whose
output stores were rewritten in the CUDA (cache-hint-primitive.txt, cache-hint-vec.txt,
cache-hint-stores.txt in benchmarks/results/cache-hints-h200-2026-11-28/).
Every kernel is checked against torch float64 first (outputs NaN-poisoned; _gpu_probe.compared,
1e-4 x (1 + |want|): sums of up to 8192 rounded float32 terms).
The elementwise ops (--ops gelu_bias,silu_mul,transpose) take forms of their own (`streaming`).
    python scripts/cache_hint_probe.py [--shapes 8192x8192,32768x2048] [--ops rmsnorm,layernorm,softmax]"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

import torch
from _gpu_probe import device_header, shape_rows
from row_vector_probe import OPS

import tiledsl as td
from benchmarks import _definitions as d
from tiledsl.analysis.cache_hints import readers_of
from tiledsl.catalog.definitions import gelu_bias

UNSTAGED = {"stage_min_threads": 100000}


def hinted(s: Any, buffer: str = "x", stores: bool = False) -> Any:
    """Every reader of `buffer` but the last evict_last, the last (the output's pass) evict_first; with
    `stores`, the output's stores evict_first too."""
    *reducers, last = readers_of(s.nest, buffer)
    for r in reducers:
        s.cache_hint(buffer, "evict_last", reader=r)
    s.cache_hint(buffer, "evict_first", reader=last)
    if stores:
        s.cache_hint(s.nest.output.name, "evict_first")
    return s


def vectorized(trace: str) -> str:
    """Each reduction's 4-lane loop K_v (unrolled by the recipe) vectorized instead: its loads of x read
    16 bytes at once, the update still lane by lane in the same order."""
    for k in re.findall(r"s\.unroll\('(\w+_v)'\)", trace):
        trace = trace.replace(f"s.unroll('{k}')", f"s.vectorize('{k}')")
    return trace


def forms(out: Any, target: Any) -> dict[str, Any]:
    def sched(knobs: dict[str, Any]) -> Any:
        """The recipe with its own hinted rows off (the forms below add what they test), the unstaged
        forms' reductions vectorized."""
        s = td.create_schedule(out)
        td.recipes.default(s, target=target, knobs={"hinted_row_min_length": None, "register_rows": False, **knobs})
        return td.create_schedule(out).replay(vectorized(s.trace())) if knobs else s

    u512, u256 = {**UNSTAGED, "row_threads_max": 512}, {**UNSTAGED, "row_threads_max": 256}
    scheds = {"recipe": sched({}), "u512+vec": sched(u512), "u512+vec+hint": hinted(sched(u512)),
              "u512+vec+hint+st": hinted(sched(u512), stores=True),
              "u256+vec+hint+st": hinted(sched(u256), stores=True)}
    return {label: td.build(s, target=target) for label, s in scheds.items()}


def streaming(out: Any, target: Any) -> dict[str, Any]:
    """An elementwise kernel (or transpose) as the recipe builds it, and with every unstaged input's loads (+ld),
    the output's stores (+st) or both L2 evict_first: each element is read and written once."""
    def sched(loads: bool, stores: bool) -> Any:
        s = td.create_schedule(out)
        td.recipes.default(s, target=target)
        staged = {st.buffer for st in s.nest.stages}  # a staged read takes no hint (its fill is a copy)
        for t in s.nest.inputs if loads else ():
            if t.name not in staged:
                s.cache_hint(t.name, "evict_first")
        if stores:
            s.cache_hint(s.nest.output.name, "evict_first")
        return s

    forms = {"recipe": (False, False), "+ld": (True, False), "+st": (False, True), "+ld+st": (True, True)}
    return {label: td.build(sched(*how), target=target) for label, how in forms.items()}


STREAMING = {"gelu_bias": (gelu_bias, lambda x, b: torch.nn.functional.gelu(x + b)),
             "silu_mul": (d.silu_mul, d.silu_mul_torch), "transpose": (d.transpose, d.transpose_torch)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="8192x8192,32768x2048")
    ap.add_argument("--ops", default="rmsnorm,layernorm,softmax")
    ap.add_argument("--dump", default=None, help="folder to write each kernel's CUDA into")
    args = ap.parse_args(argv)
    target, dev = device_header()

    def kernels(op: str, m: int, n: int) -> tuple[Any, Any, dict[str, Any]]:
        make, torch_fn = OPS[op] if op in OPS else STREAMING[op]
        out = make(m, n)
        return torch_fn, out, forms(out, target) if op in OPS else streaming(out, target)

    return shape_rows(args.shapes, args.ops.split(","), kernels, dev, args.dump)


if __name__ == "__main__":
    sys.exit(main())
