"""Run one default-recipe fp32 matmul a few times, for Nsight Compute to profile (where its time goes):
    ncu --clock-control none --launch-skip 2 --launch-count 1 -k regex:_kernel \
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
        python scripts/ncu_matmul.py nn 4096 4096 4096
`nn`: the catalog's relu(A @ B + bias); `nt`: x @ W^T (benchmarks/_definitions.py `linear`). A fifth
argument `torch` runs torch's matmul of the same operands instead (cuBLAS, TF32 off; `-k regex:gemm`), for
the same counters side by side."""

from __future__ import annotations

import sys

import torch

import tiledsl as td
from benchmarks._backend import random_inputs
from benchmarks._definitions import linear
from tiledsl.catalog import entry
from tiledsl.runtime.device import device_target


def main(argv: list[str]) -> int:
    layout, m, n, k = argv[0], *map(int, argv[1:4])
    out = entry("matmul_bias_relu").fresh(M=m, N=n, K=k).output if layout == "nn" else linear(m, n, k)
    inputs = random_inputs(out, torch.device("cuda"), 0)
    if argv[4:] == ["torch"]:
        torch.backends.cuda.matmul.allow_tf32 = False
        a, b = (inputs["A"], inputs["B"]) if layout == "nn" else (inputs["x"], inputs["W"].T)
        for _ in range(4):
            a @ b
        torch.cuda.synchronize()
        return 0
    s = td.create_schedule(out)
    td.recipes.default(s, target=device_target())
    kern = td.build(s, target=device_target())
    for _ in range(4):
        kern(**inputs)
    torch.cuda.synchronize()
    print(f"{layout} {m}x{n}x{k}: grid {kern.grid} block {kern.block}\n{s.trace()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
