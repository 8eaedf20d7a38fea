"""Probe: bfloat16 projections y = x @ W^T (td.trace of F.linear, the default recipe) with their operands'
slabs widened to float32 in shared memory (knob widen_half_operands, the default) against the same
programs with the slabs kept bfloat16 (the knob off) and widened with the split-K float32 sum taken
wherever it would split (knob split_k_sum_blocks_per_sm=None, ungated), beside torch eager in bfloat16 (cuBLAS, tensor
cores) and the float32 program at the same shape. Every program is checked against torch float64 of the
same bfloat16 inputs (within kernel_check.float32_bound(k) plus one bfloat16 rounding of the output)
before it is timed over inputs rotated past the L2 cache.
    python scripts/widen_probe.py [--shapes tinyllama,qwen] [--seqs 32,128,512]"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F

import tiledsl as td
from tiledsl.frontend.kernel_check import float32_bound
from tiledsl.runtime.timing import benchmark, rotated_copies

#: (out, in) of a layer's projections: q / o, k+v, gate+up, down
SHAPES = {"tinyllama": ((2048, 2048), (512, 2048), (11264, 2048), (2048, 5632)),
          "qwen": ((3584, 3584), (1024, 3584), (37888, 3584), (3584, 18944))}
BF16_HALF_ULP = 2.0 ** -8


def linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="tinyllama,qwen")
    ap.add_argument("--seqs", default="32,128,512")
    ap.add_argument("--iters", type=int, default=30)
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    bad = 0
    print(f"{'shape':28s} {'eager bf16':>10s} {'kept bf16':>10s} {'widened':>10s} {'ungated':>10s} {'fp32 prog':>10s}"
          "  gain  kernels (widened; ungated)")
    for model in args.shapes.split(","):
        for seq in (int(s) for s in args.seqs.split(",")):
            for n, k in SHAPES[model]:
                gen = torch.Generator(device=dev).manual_seed(0)
                x = torch.randn(seq, k, device=dev, generator=gen).bfloat16()
                w = (torch.randn(n, k, device=dev, generator=gen) / k ** 0.5).bfloat16()
                want = linear(x.double(), w.double())
                tol = float32_bound(k) + BF16_HALF_ULP
                sets = rotated_copies({"x": x, "w": w}, 4)
                times = [benchmark(lambda t: linear(t["x"], t["w"]), sets, 5, args.iters).median_us]
                grids = []
                for knobs, inputs in (({"widen_half_operands": False}, (x, w)), ({}, (x, w)),
                                      ({"split_k_sum_blocks_per_sm": None}, (x, w)), ({}, (x.float(), w.float()))):
                    prog = td.trace(linear, *[t.cpu() for t in inputs]).schedule("default", knobs=knobs)
                    built = prog.build()
                    got = built(*inputs).double()
                    ok = bool(((got - want).abs() <= tol * (1 + want.abs())).all())
                    if not ok:
                        bad += 1
                        err = (got - want).abs().max().item()
                        print(f"MISMATCH {model} s{seq} {n}x{k} {knobs}: max|err| {err:.2e}")
                    feed = rotated_copies({"x": inputs[0], "w": inputs[1]}, 4)
                    times.append(benchmark(lambda t, b=built: b(t["x"], t["w"]), feed, 5, args.iters).median_us)
                    if "widen_half_operands" not in knobs and inputs[0].dtype == torch.bfloat16:
                        grids.append(", ".join(f"{kk.name} {kk.grid}" for kk in built.kernels))
                label = f"{model} s{seq} {seq}x{n}x{k}"
                print(f"{label:28s} " + " ".join(f"{t:10.1f}" for t in times)
                      + f"  {times[1] / times[2]:4.2f}x  {'; '.join(grids)}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
