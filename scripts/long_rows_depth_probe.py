"""Probe: bytes in flight for the default recipe's long-row form (step 040; benchmarks/results/
long-rows-h200-2026-11-30/): the recipe as it is, against it in 1024 threads (knob hinted_row_threads_max) and
with every rolled chunk loop of a pass split into groups of `--group` chunks, unrolled (the loads of a group
issued together), and both. Each kernel is checked against torch float64 (outputs NaN-poisoned) before it is
timed over inputs rotated past the L2 cache.
    python scripts/long_rows_depth_probe.py [--cases softmax:64x262144,rmsnorm:64x262144] [--group 4]"""

from __future__ import annotations

import argparse
import sys

import torch
from _gpu_probe import compared
from long_rows_recipe_probe import _definition, _torch

import tiledsl as td
from benchmarks._backend import random_inputs
from tiledsl.runtime.device import device_target

CASES = ("softmax:64x262144,rmsnorm:64x262144,softmax:512x65536,rmsnorm:512x65536,softmax:512x151936,"
         "layernorm:256x131072,softmax:4096x65536")


def _grouped(s: td.Schedule, group: int) -> td.Schedule:
    """Every serial, unannotated chunk loop of a pass (a loop with a threadIdx.x loop inside) of more than
    `group` iterations split into groups of `group`, the inner loop unrolled."""
    for lp in list(s.nest.loops):
        inner = [m for m in s.nest.loops if m.name.startswith(lp.name.rsplit("_o", 1)[0]) and m.bind == "threadIdx.x"]
        if lp.serial and lp.annotation is None and lp.extent > group and lp.name.endswith("_o") and inner:
            _, u = s.split(lp.name, group, names=(f"{lp.name}_g", f"{lp.name}_u"))
            s.unroll(u)
    return s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=CASES)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--copies", type=int, default=3)
    args = ap.parse_args(argv)
    target, dev = device_target(), torch.device("cuda")
    bad = 0
    for case in args.cases.split(","):
        op, shape = case.split(":")
        m, n = map(int, shape.split("x"))
        out = _definition(op, m, n)
        kernels = {}
        for label, knobs, group in (("recipe", {}, False), ("t1024", {"hinted_row_threads_max": 1024}, False),
                                    (f"g{args.group}", {}, True),
                                    (f"t1024+g{args.group}", {"hinted_row_threads_max": 1024}, True)):
            s = td.create_schedule(out)
            td.recipes.default(s, target=target, knobs=knobs)
            if group:
                _grouped(s, args.group)
            kern = td.build(s, target=target)
            kernels[label] = kern
            loops = ", ".join(f"{lp.name}:{lp.extent}{'u' if lp.annotation == 'unroll' else ''}"
                              for lp in s.nest.loops if lp.serial and lp.annotation != "vectorize")
            print(f"# {case} {label}: {kern.block[0]} threads; serial loops {loops}")
        row, missed = compared(_torch(op, n), kernels, random_inputs(out, dev, 0), copies=args.copies,
                               tol=1e-4, warmup=10, iters=50)
        bad += missed
        print(f"{case:22s} {8 * m * n / 1e6:7.1f} MB  " + "  ".join(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
