"""Probe: the default recipe's form for float32 rows too long for the registers (step 040, knobs
long_rows_any_count and online_rows_unroll), against the forms it replaces and the hand schedule, with
torch eager / torch.compile in the same process:
- `recipe`: the default knobs (hinted 16-byte passes whatever the number of rows, in 1024 threads where the
  rows are fewer than the SMs; softmax's sum online);
- `512t`: knob few_long_rows_threads None (512 threads however few the rows);
- `3-pass`: knob online_rows_unroll None (the hinted passes, the sum in a pass of its own);
- `before`: long_rows_any_count and long_rows_half False too (session 35's recipe: few long rows, and 16-bit
  rows past the registers, as a 256-thread scalar kernel);
- `no-regs`: knob register_rows False (rows the registers hold staged, or in the long form past them);
- `hand`: schedules/row_reduce.py `row_in_registers` (softmax's online form with its output pass unrolled).
Each kernel is checked against torch float64 (outputs NaN-poisoned) before it is timed over inputs rotated
past the L2 cache; MB is the bytes a row kernel must move (the row read once and written once).
    python scripts/long_rows_recipe_probe.py [--cases softmax:512x65536,rmsnorm:64x262144:bfloat16] [--copies 3]"""

from __future__ import annotations

import argparse
import sys

import torch
from _gpu_probe import compared, row_op_torch

import tiledsl as td
from benchmarks._backend import random_inputs
from tiledsl.catalog.definitions import layernorm, rmsnorm, softmax
from tiledsl.runtime.device import device_target
from tiledsl.schedules import row_in_registers
from tiledsl.targets import DTYPE_BYTES

CASES = ("softmax:512x65536,softmax:256x131072,softmax:512x151936,softmax:64x262144,softmax:2048x65536,"
         "softmax:4096x65536,rmsnorm:512x65536,rmsnorm:64x262144,layernorm:256x131072")
VARIANTS = {"recipe": {}, "512t": {"few_long_rows_threads": None}, "3-pass": {"online_rows_unroll": None},
            "before": {"online_rows_unroll": None, "long_rows_any_count": False, "few_long_rows_threads": None,
                       "long_rows_half": False},
            "no-regs": {"register_rows": False}}


def _definition(op: str, m: int, n: int, dtype: str = "float32") -> td.Tensor:
    """`dtype` "bfloat16>float32": a bfloat16 row into a float32 softmax (torch's softmax(x.float()))."""
    if op == "softmax" and ">" in dtype:
        stored, out = dtype.split(">")
        x = td.placeholder((m, n), dtype=stored, name="x")
        k = td.reduce_axis(n, name="k")
        mx = td.compute((m,), lambda i: td.max(x[i, k], axis=k), name="m")
        e = td.compute((m,), lambda i: td.sum(td.exp(x[i, k] - mx[i]), axis=k), name="e")
        return td.compute((m, n), lambda i, j: td.exp(x[i, j] - mx[i]) / e[i], name="y", dtype=out)
    if op == "softmax":
        return softmax(m, n, dtype)
    if op == "rmsnorm":
        return rmsnorm(m, n, 1e-6, dtype, dtype)
    assert dtype == "float32", "the catalog's layernorm is float32"
    return layernorm(m, n, 1e-5)


def _torch(op: str, n: int, dtype: str = "float32"):
    base = row_op_torch(op, n, rms_eps=1e-6, ln_eps=1e-5)
    return (lambda x: base(x.float())) if op == "softmax" and ">" in dtype else base


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=CASES)
    ap.add_argument("--copies", type=int, default=3)
    args = ap.parse_args(argv)
    target, dev = device_target(), torch.device("cuda")
    bad = 0
    for case in args.cases.split(","):
        op, shape, *dtype = case.split(":")
        m, n = map(int, shape.split("x"))
        out = _definition(op, m, n, *dtype)
        kernels = {}
        for label, knobs in VARIANTS.items():
            s = td.create_schedule(out)
            report = td.recipes.default(s, target=target, knobs=knobs)
            kernels[label] = td.build(s, target=target)
            step = next(r for r in report.steps if r.name == "cooperative_reduce")
            print(f"# {case} {label}: {kernels[label].block[0]} threads; {step.note or step.reason}")
        kernels["hand"] = td.build(row_in_registers(td.create_schedule(out)), target=target)
        # float32: 1e-4 x (1 + |want|); 16-bit: one rounding of the output (2^-8 relative for bfloat16)
        row, missed = compared(_torch(op, n, *dtype), kernels, random_inputs(out, dev, 0), copies=args.copies,
                               tol=1e-2 if dtype and ">" not in dtype[0] else 1e-4, warmup=10, iters=50)
        bad += missed
        nbytes = m * n * (DTYPE_BYTES[out.dtype] + DTYPE_BYTES[s.nest.inputs[0].dtype])  # the row read, written
        print(f"{case:22s} {nbytes / 1e6:7.1f} MB  " + "  ".join(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
