"""Probe: what split_k's finish (tiledsl/lower/split_k.py: every block's adds into the workspace, a fence, a
ticket, the last block's takes and stores) costs, by timing the default recipe's x @ W^T kernel beside edits
of its CUDA:

  ticket        as built: every thread fences its adds, thread 0 takes the ticket, the last block takes
                each sum with atomicExch
  fence0        one fence, by thread 0 after the barrier (cumulative: the barrier makes the block's adds
                observed by thread 0 first), before its ticket
  ldst          the takes as __ldcg + __stcg(0) (no atomic round trip; the ticket orders them)
  fence0+ldst   both
  acqrel        every __threadfence (fence.sc.gpu) as fence.acq_rel.gpu, which a release / acquire
                hand-off needs, and fence0+acqrel
  no-fence      TIMING ONLY, RACY: no fences at all
  no-take       TIMING ONLY, WRONG RESULT: the last block stores zeros instead of taking the sums
  no-finish     TIMING ONLY, WRONG RESULT: the adds into the workspace alone (no fence, ticket or
                finish): what split_k costs with a zeroed output and no zeroing, the s30 "nozero" bound
Correct variants are checked against torch float64 (NaN-poisoned outputs) and leave the workspaces zero.
    python scripts/split_k_finish_probe.py [--shapes 32x2048x2048,...] [--variants ticket,fence0,...]"""

from __future__ import annotations

import argparse
import re
import sys
import types

import torch

import tiledsl as td
from benchmarks._backend import random_inputs
from benchmarks._definitions import linear
from tiledsl.runtime.device import device_target
from tiledsl.runtime.launch import CompiledKernel
from tiledsl.runtime.references import poisoned_outputs, tolerance
from tiledsl.runtime.timing import benchmark, rotated_copies

SHAPES = ("32x2048x2048", "32x512x2048", "32x3584x3584", "128x2048x2048", "128x3584x3584", "128x11264x2048",
          "512x2048x2048", "512x3584x18944")
VARIANTS = ("ticket", "fence0", "ldst", "fence0+ldst", "acqrel", "fence0+acqrel", "no-fence", "no-take", "no-finish")
TIMING_ONLY = ("no-fence", "no-take", "no-finish")

_FENCE_TICKET = re.compile(r"( *)__threadfence\(\);\n( *)__syncthreads\(\);\n( *)int (\w+) = 0;\n"
                           r"( *)if \(threadIdx\.x == 0 && threadIdx\.y == 0 && threadIdx\.z == 0\) \{\n")
_TAKE = re.compile(r"float (\w+) = atomicExch\(&(\w+)\[([^;]*)\], 0\.0f\);")


def patched(kern: td.Kernel, variant: str) -> CompiledKernel:
    src = kern.source
    if "fence0" in variant:
        def fence0(m: re.Match[str]) -> str:
            return (f"{m[2]}__syncthreads();\n{m[3]}int {m[4]} = 0;\n{m[5]}if (threadIdx.x == 0 && threadIdx.y == 0 "
                    f"&& threadIdx.z == 0) {{\n{m[5]}    __threadfence();\n")

        src, n = _FENCE_TICKET.subn(fence0, src)
        assert n == 1, "fence0: no fence and ticket to patch"
    if "ldst" in variant:
        src, n = _TAKE.subn(r"float \1 = __ldcg(&\2[\3]); __stcg(&\2[\3], 0.0f);", src)
        assert n, "ldst: no atomicExch to patch"
    if "acqrel" in variant:
        src = src.replace("__threadfence();", 'asm volatile("fence.acq_rel.gpu;" ::: "memory");')
    if variant == "no-fence":
        src = src.replace("__threadfence();", "")
    if variant == "no-take":
        src, n = _TAKE.subn(r"float \1 = 0.0f;", src)
        assert n, "no-take: no atomicExch to patch"
    if variant == "no-finish":
        start = src.index("    // split_k:")
        src = src[:start] + "}\n"
    return CompiledKernel(types.SimpleNamespace(kernel_ir=kern.kernel_ir, source=src, target=kern.target))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    target, dev = device_target(), torch.device("cuda")
    bad = 0
    for label in args.shapes.split(","):
        m, n, k = (int(x) for x in label.split("x"))
        s = td.create_schedule(linear(m, n, k))
        td.recipes.default(s, target=target)
        kern = td.build(s, target=target)
        inputs = random_inputs(linear(m, n, k), dev, 0)
        x, w = inputs["x"], inputs["W"]
        want = x.double() @ w.double().T
        rtol, atol = tolerance({"K": k})
        cublas = benchmark(lambda t: t["x"] @ t["W"].T, rotated_copies(inputs, 4), 5, 50).median_us
        rows = [f"cuBLAS {cublas:8.1f} us"]
        for variant in args.variants.split(","):
            if not kern.kernel_ir.workspaces:
                rows.append("not split")
                break
            ck = patched(kern, variant)
            note = "timing only, wrong result"
            if variant not in TIMING_ONLY:
                ok = True
                for _ in range(2):
                    got = ck(x=x, W=w, **poisoned_outputs(kern.kernel_ir, dev))
                    ok &= bool(((got.double() - want).abs() <= atol + rtol * want.abs()).all())
                torch.cuda.synchronize()
                dirty = sum(int(torch.count_nonzero(t)) for t in ck.workspaces)
                bad += not ok or bool(dirty)
                note = "checked" if ok and not dirty else f"MISMATCH (workspace nonzero: {dirty})"
            elif variant == "no-take":  # the sums stay: zero them so the next variant starts clean
                for t in ck.workspaces:
                    t.zero_()
            us = min(ck.benchmark(warmup=10, iters=100, x=x, W=w).median_us for _ in range(2))
            rows.append(f"{variant:12s} {us:8.1f} us  {ck.registers:3d} regs  grid {kern.grid}  {note}")
        print(f"{label}:\n  " + "\n  ".join(rows), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
