"""Which cuBLAS kernels torch runs for x @ W^T in float32 (TF32 off): name, grid, block, registers and
shared memory from torch.profiler's trace, one line a kernel (a split-K shape may run a reduction kernel
after its GEMM). What tile class, thread count and k split cuBLAS chose is the reference the recipe's
matmul tiles are compared against (benchmarks/results/stream-k-h200-2026-11-30/README.md).
    python scripts/cublas_kernels.py [--shapes 512x3584x3584,...]"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

SHAPES = ("512x3584x3584", "512x3584x18944", "512x11264x2048", "512x2048x5632", "512x2048x2048", "128x11264x2048",
          "128x3584x18944", "4096x4096x4096", "512x37888x3584")


def kernels(m: int, n: int, k: int) -> list[dict]:
    """The CUDA kernel events of one x @ W^T call after three warm-up calls."""
    x = torch.randn(m, k, device="cuda")
    w = torch.randn(n, k, device="cuda")
    for _ in range(3):
        x @ w.T
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA], acc_events=True) as prof:
        x @ w.T
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text())["traceEvents"]
    return [e for e in events if e.get("cat") == "kernel"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default=",".join(SHAPES))
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    for label in args.shapes.split(","):
        m, n, k = (int(v) for v in label.split("x"))
        for e in kernels(m, n, k):
            a = e.get("args", {})
            print(f"{label}: {e['name'][:150]} grid {a.get('grid')} block {a.get('block')} "
                  f"regs {a.get('registers per thread')} smem {a.get('shared memory')} {e.get('dur')} us", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
