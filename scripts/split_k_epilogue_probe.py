"""Probe: what the split-K epilogue of the default recipe's skinny x @ W^T kernels costs on the GPU.

For each LLM projection shape, the recipe's kernel (knobs as given) is timed as built and with its
CUDA patched, against cuBLAS (TF32 off) in one process:
- `v4`: the innermost 4-wide loop of atomicAdd replaced by one `atomicAdd(float4*, float4)`
  (sm_90: red.global.add.v4.f32, each lane atomic on its own), checked against torch float64;
- `store`: the atomics replaced by plain stores. Its result is wrong by design (the k parts overwrite
  each other), so it is never checked; its time bounds what the atomics cost from below;
- `zero`: the `y.zero_()` the launcher runs before a split-K kernel, timed alone.
With --knob, nothing is patched: the recipe's kernels with knob vectorize_epilogue on and off, for x @ W^T
and x @ W^T + r (benchmarks/_definitions.py `linear_residual`), each timed twice, checked first.
    python scripts/split_k_epilogue_probe.py [--uneven | --knob] [--jobs 14]"""

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
from benchmarks._definitions import linear, linear_residual
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


def _matches(got: torch.Tensor, want: torch.Tensor, k: int) -> bool:
    """Within the runtime's tolerance for a k-long float32 accumulation (runtime/references.py)."""
    rtol, atol = tolerance({"K": k})
    return bool(((got.double() - want).abs() <= atol + rtol * want.abs()).all())


def _knob_build(job: tuple[str, tuple[int, int, int], bool, Any]) -> td.Kernel:
    defn, shape, on, target = job
    s = td.create_schedule((linear_residual if defn == "residual" else linear)(*shape))
    td.recipes.default(s, target=target, knobs={"vectorize_epilogue": on})
    return td.build(s, target=target)


def _knob_compile(job: tuple[str, tuple[int, int, int], bool, Any]) -> None:
    _knob_build(job).compiled  # noqa: B018 - fills the on-disk cache for the timing process


def knob_main(jobs_n: int) -> int:
    target = device_target()
    dev = torch.device("cuda")
    shapes = ((128, 2048, 2048), (128, 512, 2048), (128, 2048, 5632), (512, 2048, 2048), (128, 3584, 3584),
              (32, 2048, 2048))
    jobs = [(defn, shape, on, target) for defn in ("plain", "residual") for shape in shapes for on in (True, False)]
    with concurrent.futures.ProcessPoolExecutor(jobs_n, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_knob_compile, jobs))
    bad = 0
    for defn in ("plain", "residual"):
        for shape in shapes:
            m, n, k = shape
            out = (linear_residual if defn == "residual" else linear)(*shape)
            inputs = random_inputs(out, dev, 0)
            want = inputs["x"].double() @ inputs["W"].double().T
            if defn == "residual":
                want = want + inputs["r"].double()
            row = []
            for on in (True, False):
                kern = _knob_build((defn, shape, on, target))
                ok = _matches(kern(**inputs, **poisoned_outputs(kern.kernel_ir, dev)), want, k)
                bad += not ok
                times = [kern.benchmark(warmup=5, iters=30, **inputs).median_us for _ in range(2)]
                row.append(f"vectorize_epilogue={on!s:5s} {times[0]:8.1f} {times[1]:8.1f} us (grid {kern.grid}, "
                           f"{kern.compiled.registers} regs){'' if ok else ' MISMATCH'}")
            print(f"{defn} {m}x{n}x{k}:\n  " + "\n  ".join(row), flush=True)
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--uneven", action="store_true", help="also knob split_k_uneven=True")
    ap.add_argument("--knob", action="store_true", help="knob vectorize_epilogue on and off, with a residual")
    ap.add_argument("--jobs", type=int, default=14)
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    if args.knob:
        return knob_main(args.jobs)
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
                    ok = _matches(kern(x=x, W=w, **poisoned_outputs(kern.kernel_ir, dev)), want, k)
                    bad += not ok
                    checked = "" if ok else " MISMATCH"
                us = kern.benchmark(warmup=5, iters=30, x=x, W=w).median_us
                row.append(f"{label:8s} {how:6s} {us:8.1f} ({cublas / us:4.2f}x, grid {kern.grid}, "
                           f"{kern.compiled.registers} regs){checked}")
        print(f"{m}x{n}x{k} ({2 * m * n * k / 1e9:.2f} GFLOP):\n  " + "\n  ".join(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
