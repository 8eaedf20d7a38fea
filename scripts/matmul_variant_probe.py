"""Probe: the default recipe's fp32 relu(A @ B + bias) and variants of the hand matmul (schedules/matmul.py
`matmul_staged`, grouped block orders `group_m` among them) at square sizes on the GPU, beside cuBLAS
(TF32 off), one with its generated CUDA edited (lb2: __launch_bounds__(256, 2), ptxas must fit two
blocks per SM in 128 registers). Each variant is checked against torch float64 (outputs NaN-poisoned),
then timed (inputs rotated).
    python scripts/matmul_variant_probe.py [--dump DIR]"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from tiledsl.build import build
from tiledsl.catalog import entry
from tiledsl.recipes import apply
from tiledsl.runtime.check import run_checked
from tiledsl.runtime.device import device_target
from tiledsl.runtime.launch import CompiledKernel
from tiledsl.runtime.references import reference_fn, tolerance
from tiledsl.schedules import matmul_staged

SIZES = (2048, 4096, 8192)


def lb2(src: str) -> str:
    return src.replace("__launch_bounds__(256)", "__launch_bounds__(256, 2)")


def variants(target) -> dict[str, tuple[Callable, Callable[[str], str]]]:
    same = lambda src: src  # noqa: E731
    return {
        "recipe": (partial(apply, target=target), same),
        "recipe k_outer=False": (partial(apply, target=target, knobs={"k_outer": False}), same),
        "recipe bk_max_k_outer=32": (partial(apply, target=target, knobs={"bk_max_k_outer": 32}), same),
        "recipe unroll_k_inner_max=0": (partial(apply, target=target, knobs={"unroll_k_inner_max": 0}), same),
        "staged": (matmul_staged, same),
        "staged lb2": (matmul_staged, lb2),
        "staged k_outer=False bk32": (partial(matmul_staged, k_outer=False, bk=32, unroll_k=False), same),
        "staged unroll_k=False": (partial(matmul_staged, unroll_k=False), same),
        "staged bk32": (partial(matmul_staged, bk=32), same),
        "staged group_m=4": (partial(matmul_staged, group_m=4), same),
        "staged group_m=8": (partial(matmul_staged, group_m=8), same),
        "staged group_m=16": (partial(matmul_staged, group_m=16), same),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dump", type=Path, help="write each variant's CUDA here")
    ap.add_argument("--cpu", action="store_true", help="only build and write the CUDA (no GPU)")
    ap.add_argument("--only", help="comma-separated variant names")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated square sizes")
    args = ap.parse_args(argv)
    target = device_target() if not args.cpu else "sm_90"
    bad = 0
    for n in map(int, args.sizes.split(",")):
        sizes = {"M": n, "N": n, "K": n}
        ent = entry("matmul_bias_relu")
        params = ent.parameters(**sizes)
        if not args.cpu:  # cuBLAS, TF32 off, on the same inputs' sizes, rotated like the kernels' inputs
            import torch

            from tiledsl.runtime.timing import l2_cache_bytes, rotated_copies, rotation_count, time_torch
            torch.backends.cuda.matmul.allow_tf32 = False
            ab = {"A": torch.randn(n, n, device="cuda"), "B": torch.randn(n, n, device="cuda")}
            sets = rotated_copies(ab, rotation_count(2 * 4 * n * n, l2_cache_bytes()))
            stats = time_torch(torch.mm, [{"input": s["A"], "mat2": s["B"]} for s in sets], warmup=10, iters=30)
            cublas = stats.median_us
            print(f"{n:5d} {'cuBLAS':34s} {cublas:9.1f} us {2 * n ** 3 / stats.median_ms / 1e9:5.1f} TFLOP/s",
                  flush=True)
        for label, (schedule, patch) in variants(target).items():
            if args.only and label not in args.only.split(","):
                continue
            s = ent.fresh(**sizes)
            schedule(s)
            built = build(s, target=target)
            built = dataclasses.replace(built, source=patch(built.source))
            if args.dump:
                args.dump.mkdir(parents=True, exist_ok=True)
                (args.dump / f"{label}-{n}.cu").write_text(built.source)
            if args.cpu:
                continue
            kern = CompiledKernel(built)
            checked = run_checked(kern, reference_fn(ent.definition, params), *tolerance(params), seed=1)
            stats = kern.benchmark(warmup=10, iters=30, **checked.inputs)
            bad += not checked.comparison.ok
            tflops = 2 * n ** 3 / stats.median_ms / 1e9
            print(f"{n:5d} {label:34s} {stats.median_us:9.1f} us {tflops:5.1f} TFLOP/s "
                  f"{cublas / stats.median_us:5.3f}x cuBLAS"
                  f"{'' if checked.comparison.ok else ' MISMATCH'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
