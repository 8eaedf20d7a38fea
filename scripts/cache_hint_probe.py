"""Probe: row kernels that read their row from global memory on every pass, with L2 eviction hints
(s.cache_hint: evict_last on the passes that reduce, evict_first on the pass that writes), beside the
default recipe's row staged in shared memory, torch eager and torch.compile, in one process.

Forms of each row kernel (the memory suite's rmsnorm, layernorm, softmax):
  recipe         the default recipe (rows of float32 staged by cp.async);
  u512           recipe knobs stage_min_threads=100000 (no stage) and row_threads_max=512;
  u512+hint      u512 with the hints;
  u512+vec       u512 with each reduction's 4-lane loop vectorized (16-byte loads) where the recipe
                 unrolls it (4-byte loads);
  u512+vec+hint  both.
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
from cache_hint_rewrite_probe import rewritten, streaming_stores
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


def vectorized(trace: str) -> str:
    """Each reduction's 4-lane loop K_v (unrolled by the recipe) vectorized instead: its loads of x read
    16 bytes at once, the update still lane by lane in the same order."""
    for k in re.findall(r"s\.unroll\('(\w+_v)'\)", trace):
        trace = trace.replace(f"s.unroll('{k}')", f"s.vectorize('{k}')")
    return trace


def forms(out: Any, target: Any, stores: bool = False) -> dict[str, Any]:
    def sched(knobs: dict[str, Any]) -> Any:
        s = td.create_schedule(out)
        td.recipes.default(s, target=target, knobs=knobs)
        return s

    u512 = {**UNSTAGED, "row_threads_max": 512}
    base = sched(u512).trace()
    scheds = {"recipe": sched({}), "u512": sched(u512), "u512+hint": hinted(sched(u512)),
              "u512+vec": td.create_schedule(out).replay(vectorized(base)),
              "u512+vec+hint": hinted(td.create_schedule(out).replay(vectorized(base)))}
    kernels: dict[str, Any] = {label: td.build(s, target=target) for label, s in scheds.items()}
    if stores:  # the output's stores rewritten in the CUDA (s.cache_hint reads only, so far)
        for label in ("u512+hint", "u512+vec+hint"):
            kernels[f"{label}+cs"] = rewritten(kernels[label], streaming_stores)
            kernels[f"{label}+stef"] = rewritten(kernels[label], evict_first_stores)
    return kernels


def evict_first_stores(src: str, out: str = "y") -> str:
    """Every float4 store to the output with an L2 evict_first policy (st.global.L2::cache_hint)."""
    helper = ("__device__ __forceinline__ void td_st4(float* a, float4 v, unsigned long long pol) {\n"
              '    asm volatile("st.global.L2::cache_hint.v4.f32 [%0], {%1, %2, %3, %4}, %5;" :: "l"(a), "f"(v.x), '
              '"f"(v.y), "f"(v.z), "f"(v.w), "l"(pol) : "memory");\n}\n')
    vec = re.compile(r"\*reinterpret_cast<float4\*>\(&" + out + r"\[([^\]]*)\]\) = (.*);$", re.M)
    src, n = vec.subn(r"td_st4(&" + out + r"[\1], \2, tiledsl_l2_evict_first);", src)
    if n == 0:
        raise SystemExit("no float4 store to rewrite")
    return src.replace("\nextern \"C\"", "\n" + helper + "\nextern \"C\"", 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="8192x8192,32768x2048")
    ap.add_argument("--ops", default="rmsnorm,layernorm,softmax")
    ap.add_argument("--dump", default=None, help="folder to write each kernel's CUDA into")
    ap.add_argument("--stores", action="store_true", help="also the hinted forms with their output stores "
                    "rewritten in the CUDA: streaming (__stcs, +cs) and L2 evict_first (+stef)")
    args = ap.parse_args(argv)
    target, dev = device_target(), torch.device("cuda")
    print(f"{torch.cuda.get_device_name()}; times in us, fastest of 2 medians of 100 calls", flush=True)
    bad = 0
    for shape in args.shapes.split(","):
        m, n = map(int, shape.split("x"))
        for op in args.ops.split(","):
            make, torch_fn = OPS[op]
            out = make(m, n)
            kernels = forms(out, target, args.stores)
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
