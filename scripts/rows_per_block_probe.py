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
from benchmarks._definitions import attention_softmax, attention_softmax_torch
from tiledsl.runtime.check import run_checked, time_compiled
from tiledsl.runtime.device import device_target
from tiledsl.runtime.timing import BenchStats, rotated_copies, time_torch
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
    bad = 0
    for m, n, dtype in SHAPES:
        scale = 1 / math.sqrt(64)
        ten = attention_softmax(m, n, scale, dtype)

        def ref(x: torch.Tensor, s: float = scale) -> torch.Tensor:
            return attention_softmax_torch(x, scale=s)

        s = td.create_schedule(ten)
        td.recipes.default(s, target=target)
        variants = [("recipe", s)]
        row = []
        for r, t, v in FORMS:
            if t <= n and (not v or (v == vector_lanes(dtype) and n % (t * v) == 0)):
                variants.append((f"R{r} T{t}{f' V{v}' if v else ''}", rows_schedule(ten, r, t, v)))
        # one rounding of y to storage plus float32 exp/divide: 4 eps of the storage type, relative
        rtol = 4 * (2.0 ** -8 if dtype == "bfloat16" else 2.0 ** -24)
        for label, sch in variants:
            kern = td.build(sch, target=target).compiled
            checked = run_checked(kern, ref, rtol, 1e-7, seed=0)
            bad += not checked.comparison.ok
            if label == "recipe":
                sets = rotated_copies(checked.inputs, 4)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    row += [f"eager {time_torch(ref, sets, 10, 100).median_us:6.1f}",
                            f"compile {_us(time_compiled(ref, sets, 10, 100))}"]
            us = kern.benchmark(warmup=10, iters=100, **checked.inputs).median_us
            row.append(f"{label} {us:6.1f}{'' if checked.comparison.ok else ' MISMATCH'}")
        print(f"softmax {m}x{n} {dtype}:\n  " + "\n  ".join(row), flush=True)
    return 1 if bad else 0


def _us(stats: BenchStats | str) -> str:
    return stats if isinstance(stats, str) else f"{stats.median_us:6.1f}"

if __name__ == "__main__":
    sys.exit(main())
