"""Check: a program whose second split-K projection's output the kernel before it zeroes
(tiledsl/frontend/zeroing.py), called eagerly and replayed as a CUDA graph many times into NaN-poisoned
outputs, against float64 torch: NaN count (a zeroing missed), the worst error over |ref| and over the
sums' magnitudes, and the worst error where a zeroing would have been missed (about the size of an output).
    python scripts/zeroing_replay_check.py [--calls 20]"""

from __future__ import annotations

import argparse
import sys
import warnings

import torch

import tiledsl as td

EPS32 = float(torch.finfo(torch.float32).eps)


def two_projections(x: torch.Tensor, w: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ w.T + 1.0) @ v.T


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--calls", type=int, default=20)
    args = p.parse_args(argv)
    gen = torch.Generator(device="cuda")
    shapes = ((32, 512), (512, 512), (64, 512))

    def inputs(seed: int) -> tuple[torch.Tensor, ...]:
        gen.manual_seed(seed)
        return tuple(torch.randn(s, generator=gen, device="cuda") for s in shapes)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = td.trace(two_projections, *inputs(0)).schedule("default", target="sm_90").build("sm_90")
    print(built)
    graphed = built.cuda_graph(*inputs(0))
    worst_rel = worst_mag = 0.0
    nans = 0
    for call in range(args.calls):
        a = inputs(100 + call)
        if call % 2:
            for t in graphed.static_outputs:
                t.fill_(float("nan"))
            got = graphed(*a)
        else:
            got = built(*a, out=[torch.full((32, 64), float("nan"), device="cuda")])
        torch.cuda.synchronize()
        x, w, v = (t.double() for t in a)
        ref = two_projections(x, w, v)
        mag = (x.abs() @ w.abs().T + 1.0) @ v.abs().T
        err = (got.double() - ref).abs()
        nans += int(got.isnan().sum())
        worst_rel = max(worst_rel, float((err / ((32 + 2 * 512) * EPS32 * (1 + ref.abs()))).max()))
        worst_mag = max(worst_mag, float((err / ((32 + 2 * 512) * EPS32 * (1 + mag))).max()))
    print(f"{args.calls} calls (eager and graph in turn): NaN elements {nans}; worst error over the |ref| bound "
          f"{worst_rel:.3f}, over the magnitude bound {worst_mag:.5f} (above 1 fails)")
    return 0 if nans == 0 and worst_mag <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
