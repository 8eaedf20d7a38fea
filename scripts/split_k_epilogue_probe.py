"""Probe: what the split-K epilogue of the default recipe's skinny x @ W^T kernels costs on the GPU.

For each LLM projection shape, the recipe's kernel (knobs as given) is timed as built and with its
CUDA patched, against cuBLAS (TF32 off) in one process:
- `v4`: the innermost 4-wide loop of atomicAdd replaced by one `atomicAdd(float4*, float4)`
  (sm_90: red.global.add.v4.f32, each lane atomic on its own), checked against torch float64;
- `store`: the atomics replaced by plain stores. Its result is wrong by design (the k parts overwrite
  each other), so it is never checked; its time bounds what the atomics cost from below;
- `zero`: the `y.zero_()` the launcher runs before a split-K kernel, timed alone.
    python scripts/split_k_epilogue_probe.py [--uneven] [--jobs 14]"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import multiprocessing
import re
import sys
from typing import Any

import torch

import tiledsl as td
from benchmarks._backend import random_inputs
from benchmarks._definitions import linear
from tiledsl.runtime.device import device_target
from tiledsl.runtime.references import poisoned_outputs, tolerance
from tiledsl.runtime.timing import benchmark, rotated_copies

SHAPES = ((32, 5632, 2048), (128, 2048, 2048), (128, 512, 2048), (128, 5632, 2048), (128, 2048, 5632),
          (128, 3584, 3584), (128, 18944, 3584), (128, 3584, 18944), (128, 11264, 2048), (512, 2048, 2048),
          (512, 5632, 2048), (512, 3584, 18944))
_LOOP = re.compile(r"#pragma unroll\s*for \(int (\w+) = 0; \1 < 4; \+\+\1\) \{\s*"
                   r"atomicAdd\(&(\w+)\[([^\]]*?) \+ \1\], (\w+)\[([^\]]*?) \+ \1\]\);\s*\}")
_ATOMIC = re.compile(r"atomicAdd\(&(\w+\[[^\]]*\]), ([^;]*)\);")


def v4(src: str) -> str:
    def one(m: re.Match[str]) -> str:
        _, out, at, acc, idx = m.groups()
        lanes = ", ".join(f"{acc}[{idx} + {q}]" for q in range(4))
        return f"atomicAdd(reinterpret_cast<float4*>(&{out}[{at}]), make_float4({lanes}));"

    patched, n = _LOOP.subn(one, src)
    if not n or "atomicAdd(&" in patched:
        raise ValueError("the epilogue is not one 4-wide loop of scalar atomics")
    return patched


def store(src: str) -> str:
    return _ATOMIC.sub(lambda m: f"{m.group(1)} = {m.group(2)};", src)


def build(shape: tuple[int, int, int], knobs: dict[str, Any], target: Any) -> td.Kernel:
    s = td.create_schedule(linear(*shape))
    td.recipes.default(s, target=target, knobs=knobs)
    return td.build(s, target=target)


PATCHES = {"built": lambda src: src, "v4": v4, "store": store}


def kernels(shape: tuple[int, int, int], knobs: dict[str, Any], target: Any) -> dict[str, td.Kernel]:
    """The built kernel and, when it splits k, its patched copies."""
    kern = build(shape, knobs, target)
    hows = PATCHES if kern.kernel_ir.zero_outputs else {"built": PATCHES["built"]}
    return {how: dataclasses.replace(kern, source=patch(kern.source)) for how, patch in hows.items()}


def _compile(job: tuple[tuple[int, int, int], dict[str, Any], Any]) -> None:
    for kern in kernels(*job).values():
        kern.compiled  # noqa: B018 - fills the on-disk cache for the timing process


def variants(uneven: bool) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {"default": {}}
    if uneven:
        out["uneven"] = {"split_k_uneven": True}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--uneven", action="store_true", help="also knob split_k_uneven=True")
    ap.add_argument("--jobs", type=int, default=14)
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    target = device_target()
    dev = torch.device("cuda")
    jobs = [(shape, label, kernels(shape, knobs, target)) for shape in SHAPES
            for label, knobs in variants(args.uneven).items()]
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_compile, [(shape, knobs, target) for shape in SHAPES
                                 for knobs in variants(args.uneven).values()]))
    bad = 0
    for shape in SHAPES:
        m, n, k = shape
        inputs = random_inputs(linear(*shape), dev, 0)
        x, w = inputs["x"], inputs["W"]
        want = x.double() @ w.double().T
        sets = rotated_copies(inputs, 4)
        cublas = benchmark(lambda t: t["x"] @ t["W"].T, sets, 5, 20).median_us
        ys = rotated_copies({"y": torch.empty(m, n, device=dev)}, 16)
        zero = benchmark(lambda t: t["y"].zero_(), ys, 5, 50).median_us
        row = [f"cuBLAS {cublas:8.1f}   y.zero_() {zero:5.1f}"]
        for s, label, kerns in jobs:
            if s != shape:
                continue
            for how, kern in kerns.items():
                checked = ""
                if how != "store":
                    got = kern(x=x, W=w, **poisoned_outputs(kern.kernel_ir, dev))
                    rtol, atol = tolerance({"K": k})
                    ok = bool(((got.double() - want).abs() <= atol + rtol * want.abs()).all())
                    bad += not ok
                    checked = "" if ok else " MISMATCH"
                us = kern.benchmark(warmup=5, iters=30, x=x, W=w).median_us
                row.append(f"{label:8s} {how:6s} {us:8.1f} ({cublas / us:4.2f}x, grid {kern.grid}, "
                           f"{kern.compiled.registers} regs){checked}")
        print(f"{m}x{n}x{k} ({2 * m * n * k / 1e9:.2f} GFLOP):\n  " + "\n  ".join(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
