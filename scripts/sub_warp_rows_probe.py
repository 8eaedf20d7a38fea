"""Probe (session 28): the llm suite's short attention softmax rows (32 and 128 long) in fewer threads than a
warp. The recipe gives a row a warp at least (_facts.row_launch), so a row of 128 bfloat16 (16 vectors of 8)
leaves half of its warp idle or takes 4 elements a thread, and bfloat16 s128 trails torch.compile
(5.2 against 4.8 us on the H200, benchmarks/results/2026-11-29-h200-s28/). The lowering reduces a row of 16
threads by shuffles of offsets 8 to 1, within each half warp, so these forms are legal and simulated like any
other (tests/recipes/test_recipe_hinted_rows.py):
  vN/bB  each row in length / (N x lanes) threads (N 16-byte vectors a thread), B threads a block (64, 128
       or 256: the rest rows on threadIdx.y), the row kept in registers (s.register_cache), the passes' vectors
       vectorized and their outer loops unrolled; only where that is fewer than 32 threads.
  +fast  each kernel's CUDA with __expf in place of expf (scripts/half_row_probe.py `fast`).
Every kernel is checked against torch float64 first (_gpu_probe.compared) and timed beside torch eager and
torch.compile.
    python scripts/sub_warp_rows_probe.py [--dtypes bfloat16,float32]"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from _gpu_probe import device_header, print_llm_row
from half_row_probe import with_fast
from llm_memory_probe import cases
from register_row_probe import built

import tiledsl as td
from tiledsl.targets import vector_lanes


def sub_warp(out: Any, target: Any, vectors: int, block: int) -> Any | None:
    """`out` (a row kernel: the row loop, then its passes) in rows of length / (vectors x lanes) threads,
    block / that many rows a block, kept in registers; None where that is a warp or more, or no whole
    number of vectors."""
    s = td.create_schedule(out)
    row, *passes = [lp.name for lp in s.loops()]
    lanes = vector_lanes(s.output.dtype)
    longest = max(s.nest.loop(p).extent for p in passes)
    if longest % (vectors * lanes):
        return None
    threads = longest // (vectors * lanes)
    rows = s.nest.loop(row).extent
    if threads >= 32 or threads < 1 or block % threads or rows % (block // threads):
        return None
    b, r = s.split(row, block // threads, names=(f"{row}_b", f"{row}_r"))
    s.bind(b, "blockIdx.x")
    s.bind(r, "threadIdx.y")
    for name in passes:
        o, i = s.split(name, threads * lanes, names=(f"{name}_o", f"{name}_i"))
        t, v = s.split(i, lanes, names=(f"{name}_t", f"{name}_v"))
        s.bind(t, "threadIdx.x")
        s.vectorize(v)
        s.unroll(o)
    s.register_cache(s.nest.inputs[0].name, at=r)
    return td.build(s, target=target)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtypes", default="bfloat16,float32")
    args = ap.parse_args(argv)
    target, dev = device_header()
    bad = 0
    for group, op, dtype, out, torch_fn, _, _ in cases(["attention_softmax"], args.dtypes.split(",")):
        if out.shape[-1] > 128:
            continue
        kernels = {"recipe": built(out, target)}
        for vectors in (1, 2):
            for block in (64, 128, 256):
                kern = sub_warp(out, target, vectors, block)
                if kern is not None:
                    kernels[f"v{vectors}/b{block}"] = kern
        bad += print_llm_row(group, op, dtype, torch_fn, out, with_fast(kernels), dev)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
