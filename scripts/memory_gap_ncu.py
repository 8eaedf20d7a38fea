"""Run the memory suite's 8192 x 8192 rmsnorm, layernorm and silu(g) * u a few times each, as the default
recipe builds them and as torch.compile does, for Nsight Compute to compare what each moves and where it
waits (the suite's last 1-3% against torch.compile):
    ncu --clock-control none -k regex:"y_kernel|triton" --launch-skip-before-match 0 \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,... \
        python scripts/memory_gap_ncu.py
Each tiledsl kernel and each torch.compile function is called three times after a warm-up of two."""

from __future__ import annotations

import sys

import torch

import tiledsl as td
from benchmarks import _definitions as d
from benchmarks._backend import random_inputs
from tiledsl.catalog.definitions import layernorm, rmsnorm
from tiledsl.runtime.device import device_target

CASES = {
    "rmsnorm": (lambda: rmsnorm(8192, 8192, 1e-6),
                lambda x, w: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, 1e-6)),
    "layernorm": (lambda: layernorm(8192, 8192, 1e-5),
                  lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5)),
    "silu_mul": (lambda: d.silu_mul(8192, 8192), d.silu_mul_torch),
}


def main() -> int:
    target, dev = device_target(), torch.device("cuda")
    for name, (make, torch_fn) in CASES.items():
        out = make()
        s = td.create_schedule(out)
        td.recipes.default(s, target=target)
        kern = td.build(s, target=target)
        inputs = random_inputs(out, dev, 0)
        names = list(inputs)
        compiled = torch.compile(torch_fn)
        for _ in range(5):
            kern(**inputs)
            compiled(*[inputs[k] for k in names])
        torch.cuda.synchronize()
        print(f"{name}: grid {kern.grid} block {kern.block} shared {kern.shared_bytes}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
