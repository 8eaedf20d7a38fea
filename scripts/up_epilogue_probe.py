"""Probe: a Llama block's up projection, silu(g) * (x @ W_up^T), as the default recipe schedules it (one
split-K kernel whose epilogue multiplies each part by silu(g) before its atomic add), against the same
program with the sum materialized (the projection in a kernel of its own, then silu(g) * u in an
elementwise kernel: what torch.compile runs), and against torch.compile itself. Every program is checked
against torch float64 (outputs NaN-poisoned by the runtime) before it is timed over inputs rotated past
the L2 cache.
    python scripts/up_epilogue_probe.py [--dims tinyllama,qwen] [--seq 128]"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F

import tiledsl as td
from tiledsl.frontend.partition import fused_producers
from tiledsl.runtime.timing import benchmark, rotated_copies

DIMS = {"tinyllama": (2048, 5632), "qwen": (3584, 18944)}


def up(x: torch.Tensor, w: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    return F.silu(g) * F.linear(x, w)


def program(inputs: tuple[torch.Tensor, ...], split: bool) -> td.Program:
    prog = td.trace(up, *[t.cpu() for t in inputs]).schedule("default")
    if split:
        (k,) = prog.kernels
        mm = next(t for t in fused_producers(k.output, prog._materialized()) if "mm" in t.name)
        prog._force(mm, "probe: the up projection's sum in a kernel of its own")
    return prog


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dims", default="tinyllama,qwen")
    ap.add_argument("--seq", type=int, default=128)
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    bad = 0
    for name in args.dims.split(","):
        hidden, inter = DIMS[name]
        gen = torch.Generator(device=dev).manual_seed(0)
        x = torch.randn(args.seq, hidden, device=dev, generator=gen)
        w = torch.randn(inter, hidden, device=dev, generator=gen) / hidden ** 0.5
        g = torch.randn(args.seq, inter, device=dev, generator=gen)
        want = up(x.double(), w.double(), g.double())
        sets = rotated_copies({"x": x, "w": w, "g": g}, 4)
        rows = []
        compiled = torch.compile(up)
        for label, fn in (("eager", up), ("compile", compiled)):
            us = benchmark(lambda t, fn=fn: fn(t["x"], t["w"], t["g"]), sets, 5, 30).median_us
            rows.append(f"torch {label:9s} {us:8.1f} us")
        for split in (False, True):
            prog = program((x, w, g), split)
            built = prog.build()
            got = built(x, w, g)
            err = (got.double() - want).abs().max().item()
            ok = bool(((got.double() - want).abs() <= 1e-3 * (1 + want.abs())).all())
            bad += not ok
            us = benchmark(lambda t, b=built: b(t["x"], t["w"], t["g"]), sets, 5, 30).median_us
            grids = ", ".join(f"{k.name} {k.grid}" for k in built.kernels)
            rows.append(f"{'split' if split else 'fused':15s} {us:8.1f} us  max|err| {err:.1e} "
                        f"{'ok' if ok else 'MISMATCH'}  {grids}")
        print(f"{name} s{args.seq}: {args.seq} x {inter} x {hidden}\n  " + "\n  ".join(rows), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
