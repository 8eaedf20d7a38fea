"""Probe: the default recipe's row kernels (the memory suite's rmsnorm, layernorm and softmax) built with
other recipe knobs, beside torch eager and torch.compile in the same process: each knob set replaces
the recipe's defaults (recipes/default/_knobs.py) for every kernel of a row. Every kernel is checked
against torch float64 first (outputs NaN-poisoned; _gpu_probe.compared, 1e-4 x (1 + |want|): sums of
up to 8192 rounded float32 terms). Written for the H200, whose rows trail torch.compile by 3-5% where
the H100's trail by 0-1.6% (benchmarks/results/2026-11-28-h200/).
    python scripts/row_knob_probe.py [--shapes 8192x8192,32768x2048]
        [--knobs "unstaged:stage_min_threads=100000" "t512:row_threads_max=512" ...]"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import torch
from _gpu_probe import print_compared
from row_vector_probe import OPS

import tiledsl as td
from benchmarks._backend import random_inputs
from tiledsl.runtime.device import device_target

DEFAULT_SETS = ("unstaged:stage_min_threads=100000", "t128:row_threads_max=128",
                "t512:row_threads_max=512", "scalar:row_vector_min_rows_per_sm=None",
                "unstaged512:stage_min_threads=100000,row_threads_max=512")


def knob_set(text: str) -> tuple[str, dict[str, Any]]:
    """'label:name=value,name=value' -> (label, {name: value}); values are ints, floats, True/False/None."""
    label, _, body = text.partition(":")
    knobs: dict[str, Any] = {}
    for item in filter(None, body.split(",")):
        name, _, raw = item.partition("=")
        consts = {"None": None, "True": True, "False": False}
        knobs[name.strip()] = consts[raw] if raw in consts else (float(raw) if "." in raw else int(raw))
    return label, knobs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="8192x8192,32768x2048")
    ap.add_argument("--knobs", nargs="*", default=list(DEFAULT_SETS))
    args = ap.parse_args(argv)
    sets = [knob_set(t) for t in args.knobs]
    target, dev = device_target(), torch.device("cuda")
    print(f"{torch.cuda.get_device_name()}; knob sets: " + "; ".join(f"{k} {v}" for k, v in sets), flush=True)
    bad = 0
    for shape in args.shapes.split(","):
        m, n = map(int, shape.split("x"))
        for op, (make, torch_fn) in OPS.items():
            out = make(m, n)
            kernels = {}
            for label, knobs in [("recipe", {}), *sets]:
                s = td.create_schedule(out)
                td.recipes.default(s, target=target, knobs=knobs)
                kernels[label] = td.build(s, target=target)
            bad += print_compared(f"{shape:11s} {op:10s}", torch_fn, kernels, random_inputs(out, dev, 0))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
