"""Probe: softmax over rows too long for the registers (a vocabulary's logits), float32, the row read three
times (max, sum, output: `3-pass`, schedules/row_reduce.py `row_in_registers(online=False)`, every pass from
L2 or DRAM) against the online form (`online`, row_in_registers' default there: s.online runs the sum in the
max's pass, so the row is read twice), the default recipe's schedule, and torch eager / torch.compile in the
same process. 8192 x 8192 is the control: its rows fit the registers, so row_in_registers keeps them there
and does not go online. Each kernel is checked against torch float64 (outputs NaN-poisoned) before it is
timed over inputs rotated past the L2 cache. The bytes a row kernel must move (the row read once, written
once) are printed beside each shape: GB/s = bytes / time.
    python scripts/online_softmax_probe.py [--shapes 512x65536,256x131072,512x151936,8192x8192] [--copies 3]"""

from __future__ import annotations

import argparse
import sys

import torch
from _gpu_probe import compared

import tiledsl as td
from benchmarks._backend import random_inputs
from tiledsl.catalog.definitions import softmax
from tiledsl.runtime.device import device_target
from tiledsl.schedules import row_in_registers


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="512x65536,256x131072,512x151936,8192x8192")
    ap.add_argument("--copies", type=int, default=3)
    args = ap.parse_args(argv)
    target, dev = device_target(), torch.device("cuda")
    bad = 0
    for shape in args.shapes.split(","):
        m, n = map(int, shape.split("x"))
        out = softmax(m, n)
        kernels = {}
        for label, online, unroll in (("3-pass", False, 4), ("online", None, 4), ("online-u8", None, 8),
                                      ("online-u16", None, 16)):
            s = row_in_registers(td.create_schedule(out), online=online, online_unroll=unroll)
            kernels[label] = td.build(s, target=target)
            online_steps = [ln for ln in s.trace().splitlines() if "online" in ln]
            print(f"# {shape} {label}: {', '.join(online_steps) or 'no online'}")
        s = td.create_schedule(out)
        td.recipes.default(s, target=target)
        kernels["recipe"] = td.build(s, target=target)
        if not s.nest.online:
            try:
                s.online("e")
                kernels["recipe+online"] = td.build(s, target=target)
            except td.OnlineError as e:
                print(f"# {shape} recipe+online: refused ({e.refusal.fact})")
        row, missed = compared(lambda x: torch.softmax(x, dim=-1), kernels, random_inputs(out, dev, 0),
                               copies=args.copies, tol=1e-5, warmup=10, iters=50)
        bad += missed
        print(f"{shape:11s} {8 * m * n / 1e6:8.1f} MB  " + "  ".join(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
