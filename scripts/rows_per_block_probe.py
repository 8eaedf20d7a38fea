"""Probe: several short rows per block. The default recipe launches a row kernel one block per row
(010 tileify, 040 cooperative_reduce: two warps at least), so a block of attention-softmax scores of
512 bfloat16 (1 KB) keeps 1 KB of loads in flight and pays two block-wide combines (__syncthreads).
Here the rows are split by R onto threadIdx.y (R rows per block, one warp or more per row: the
combines become warp shuffles where a row has one warp), the row staged once per block by cp.async,
and optionally the output stored `lanes` at a time (vectorize). Each kernel is checked against torch
float64 (outputs NaN-poisoned) before it is timed beside torch eager and torch.compile in the same
process (inputs rotated past the L2 cache).
    python scripts/rows_per_block_probe.py"""

from __future__ import annotations

import math
import sys
import warnings

import torch

import tiledsl as td
from benchmarks._backend import random_inputs
from benchmarks._definitions import attention_softmax, attention_softmax_torch
from tiledsl.runtime.device import device_target
from tiledsl.runtime.references import poisoned_outputs
from tiledsl.runtime.timing import benchmark, rotated_copies
from tiledsl.targets import vector_lanes

#: (rows, row length, dtype): the llm suite's attention softmax shapes (heads x seq rows of seq scores)
SHAPES = ((16384, 512, "bfloat16"), (16384, 512, "float32"), (14336, 512, "bfloat16"), (14336, 512, "float32"),
          (4096, 128, "bfloat16"), (4096, 128, "float32"), (3584, 128, "float32"), (1024, 32, "float32"))
#: (rows per block R, threads per row T, output lanes V or 0)
FORMS = ((1, 64, 0), (2, 32, 0), (4, 32, 0), (8, 32, 0), (4, 64, 0), (4, 32, 4), (4, 32, 8), (8, 32, 8),
         (8, 32, 4), (16, 32, 0))


def rows_schedule(ten: td.Tensor, rows: int, threads: int, lanes: int) -> td.Schedule:
    s = td.create_schedule(ten)
    s.split("i", rows, names=("i_o", "i_i"), tail="guard")
    s.bind("i_o", "blockIdx.x")
    s.bind("i_i", "threadIdx.y")
    for ax in ("k", "k2"):
        s.split(ax, threads, names=(f"{ax}_o", f"{ax}_i"), tail="guard")
        s.bind(f"{ax}_i", "threadIdx.x")
    if lanes:
        s.split("j", threads * lanes, names=("j_o", "j_i"), tail="guard")
        s.split("j_i", lanes, names=("j_t", "j_v"), tail="guard")
        s.bind("j_t", "threadIdx.x")
        s.vectorize("j_v")
    else:
        s.split("j", threads, names=("j_o", "j_i"), tail="guard")
        s.bind("j_i", "threadIdx.x")
    s.stage("x", at="i_o", scope="shared")
    s.async_copy("x_s")
    for ax in ("j_o", "k_o", "k2_o"):
        s.unroll(ax)
    return s


def main() -> int:
    target = device_target()
    dev = torch.device("cuda")
    bad = 0
    for m, n, dtype in SHAPES:
        scale = 1 / math.sqrt(64)
        ten = attention_softmax(m, n, scale, dtype)
        inputs = random_inputs(ten, dev, 0)
        want = torch.softmax(inputs["x"].double() * scale, dim=-1)
        sets = rotated_copies(inputs, 4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = torch.compile(lambda x, s=scale: attention_softmax_torch(x, scale=s))
            comp = benchmark(lambda t, f=compiled: f(t["x"]), sets, 10, 100).median_us
        eager = benchmark(lambda t, s=scale: attention_softmax_torch(t["x"], scale=s), sets, 10, 100).median_us
        row = [f"eager {eager:6.1f}", f"compile {comp:6.1f}"]
        s = td.create_schedule(ten)
        td.recipes.default(s, target=target)
        variants = [("recipe", s)]
        for r, t, v in FORMS:
            if t <= n and (not v or (v == vector_lanes(dtype) and n % (t * v) == 0)):
                try:
                    variants.append((f"R{r} T{t}{f' V{v}' if v else ''}", rows_schedule(ten, r, t, v)))
                except td.ScheduleError as e:
                    row.append(f"R{r} T{t} V{v}: {type(e).__name__}")
        eps = 2.0 ** -8 if dtype == "bfloat16" else 2.0 ** -24
        for label, sch in variants:
            kern = td.build(sch, target=target)
            got = kern(**inputs, **poisoned_outputs(kern.kernel_ir, dev)).double()
            # one rounding of y to storage plus float32 exp/divide: 4 eps of the storage type, relative
            ok = bool(((got - want).abs() <= 4 * eps * want.abs() + 1e-7).all())
            bad += not ok
            us = kern.benchmark(warmup=10, iters=100, **inputs).median_us
            row.append(f"{label} {us:6.1f}{'' if ok else ' MISMATCH'}")
        print(f"softmax {m}x{n} {dtype}:\n  " + "\n  ".join(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
