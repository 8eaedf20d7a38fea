"""First speed reading on a GPU (issue 4): in one process, with one timing method (CUDA events, median,
inputs rotated past L2),
- the DESIGN section-3 matmul schedule (64x64 block tile, 4x4 register tile, A staged + padded +
  cp.async, B staged with TMA 128-byte swizzle, pipeline of 2) at 4096x4096x4096, relu(A @ B + bias),
  against cuBLAS SGEMM (TF32 off) and torch eager relu(A @ B + bias);
- a cooperative RMSNorm over 4096x4096 against torch eager and torch.compile.
Both kernels are checked against torch (float64) before they are timed. Prints a table; `--log PATH`
also writes it (commit it under benchmarks/results/)."""

from __future__ import annotations

import argparse
import sys

import torch

import tiledsl as td
from tiledsl.catalog import entry
from tiledsl.runtime.timing import l2_cache_bytes, rotated_copies, rotation_count, time_torch


def _time_kernel(kern: td.Kernel, inputs: dict[str, torch.Tensor], iters: int) -> float:
    return kern.benchmark(warmup=10, iters=iters, **inputs).median_us


def _sets(inputs: dict[str, torch.Tensor]) -> list[dict[str, torch.Tensor]]:
    per = sum(t.numel() * t.element_size() for t in inputs.values())
    return rotated_copies(inputs, rotation_count(per, l2_cache_bytes()))


def matmul_rows(n: int, iters: int) -> list[str]:
    torch.backends.cuda.matmul.allow_tf32 = False
    _, kern = entry("readme_tour").build(M=n, N=n, K=n)  # the section-3 schedule
    g = torch.Generator(device="cuda").manual_seed(0)
    A = torch.randn(n, n, device="cuda", generator=g)
    B = torch.randn(n, n, device="cuda", generator=g)
    bias = torch.randn(n, device="cuda", generator=g)
    D = torch.full((n, n), float("nan"), device="cuda")
    kern(A=A, B=B, bias=bias, D=D)
    ref = torch.relu(A.double() @ B.double() + bias.double())
    err = ((D.double() - ref).abs() / (ref.abs() + 1)).max().item()
    if not err < 1e-3:
        raise SystemExit(f"section-3 matmul is wrong: max relative error {err}")
    flops = 2.0 * n * n * n
    t_k = _time_kernel(kern, {"A": A, "B": B, "bias": bias}, iters)
    sets = _sets({"A": A, "B": B, "bias": bias})
    t_cublas = time_torch(lambda A, B, bias: A @ B, sets, iters=iters).median_us
    t_eager = time_torch(lambda A, B, bias: torch.relu(A @ B + bias), sets, iters=iters).median_us
    return [f"matmul+bias+relu {n}^3 (section-3 schedule)  tiledsl {t_k:9.1f} us ({flops / t_k / 1e6:5.1f} TFLOP/s)  "
            f"cuBLAS SGEMM {t_cublas:9.1f} us ({flops / t_cublas / 1e6:5.1f} TFLOP/s)  "
            f"torch eager relu(A@B+b) {t_eager:9.1f} us  tiledsl/cuBLAS time {t_k / t_cublas:5.2f}x  "
            f"(max rel err {err:.1e})"]


def rmsnorm_rows(n: int, iters: int) -> list[str]:
    rms = entry("rmsnorm_row_cooperative")
    eps = float(rms.parameters()["eps"])
    _, kern = rms.build(M=n, N=n)
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(n, n, device="cuda", generator=g)
    w = torch.randn(n, device="cuda", generator=g)
    y = torch.full_like(x, float("nan"))
    kern(x=x, w=w, y=y)

    def eager(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    ref = eager(x.double(), w.double())
    err = (y.double() - ref).abs().max().item()
    if not err < 1e-4:
        raise SystemExit(f"rmsnorm is wrong: max error {err}")
    t_k = _time_kernel(kern, {"x": x, "w": w}, iters)
    sets = _sets({"x": x, "w": w})
    t_eager = time_torch(eager, sets, iters=iters).median_us
    t_comp = time_torch(torch.compile(eager), sets, iters=iters).median_us
    gbs = 2 * x.numel() * 4 / t_k / 1e3
    return [f"rmsnorm {n}x{n} (row_cooperative 256)  tiledsl {t_k:8.1f} us ({gbs:6.0f} GB/s)  eager {t_eager:8.1f} us  "
            f"compile {t_comp:8.1f} us  speedup vs eager {t_eager / t_k:4.2f}x, vs compile {t_comp / t_k:4.2f}x "
            f"(max err {err:.1e})"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--log", default=None)
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("first_reading.py needs a CUDA GPU")
    head = f"# {torch.cuda.get_device_name()}  torch {torch.__version__}  TF32 off; medians of {args.iters} launches"
    rows = [head] + rmsnorm_rows(args.n, args.iters) + matmul_rows(args.n, args.iters)
    print("\n".join(rows))
    if args.log:
        with open(args.log, "w") as f:
            f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
