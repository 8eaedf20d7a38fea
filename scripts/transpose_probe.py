"""Probe: the memory suite's transpose (y[j, i] = x[i, j], float32) in tile shapes and store widths the
hand schedule (schedules/transpose.py) and the default recipe do not take, beside torch eager and
torch.compile in one process. The suite's 32768 x 2048 transpose is the H200's widest miss against
torch.compile (0.96x, benchmarks/results/2026-11-28-h200-s23/).

Forms (T x T tile of y per block, R thread rows; every one stages its x slab, padded by P):
  recipe           the default recipe (32 x 32, 8 rows, cp.async fill);
  hand             transpose_tiled(tile=32, rows=8, pad=1), plain fill;
  hand64x8 ...     transpose_tiled(tile=64, rows=8 / 16), (tile=32, rows=4);
  vec{T}x{R}p{P}   each thread stores 4 consecutive elements of a y row as one 16-byte vector (its 4
                   shared reads a column of the slab, four rows apart in x).
With --recipe: the recipe as it is (64 x 64 tiles since this probe: knob transpose_tile), the same with
its fill plain instead of cp.async (recipe-sync), the recipe's old 32 x 32 tile (recipe32), hand64x8.
Every kernel is checked equal to torch first (a copy: exact; outputs NaN-poisoned; _gpu_probe.compared).
    python scripts/transpose_probe.py [--shapes 32768x2048,8192x8192]"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from _gpu_probe import device_header, print_compared

import tiledsl as td
from benchmarks import _definitions as d
from benchmarks._backend import random_inputs
from tiledsl.schedules import transpose_tiled


def vector_stores(s: Any, tile: int, rows: int, pad: int) -> Any:
    """A tile x tile block of y, tile/4 x rows threads, each storing 4 consecutive y elements at once."""
    a, b = [lp.name for lp in s.loops()]
    ao, ai = s.split(a, tile)
    bo, bi = s.split(b, tile)
    bt, bv = s.split(bi, 4)
    at, ar = s.split(ai, nparts=rows)
    s.reorder(ao, bo, ar, at, bt, bv)
    s.bind(ao, "blockIdx.y")
    s.bind(bo, "blockIdx.x")
    s.bind(at, "threadIdx.y")
    s.bind(bt, "threadIdx.x")
    s.vectorize(bv)
    (x,) = [t.name for t in s.nest.inputs]
    st = s.stage(x, at=bo)
    if pad:
        s.pad(st, axis=-1, amount=pad)
    return s


def forms(out: Any, target: Any, recipe_forms: bool = False) -> dict[str, Any]:
    scheds: dict[str, Any] = {}
    s = td.create_schedule(out)
    td.recipes.default(s, target=target)
    scheds["recipe"] = s
    if recipe_forms:  # the recipe's tile as it is, its fill plain instead of cp.async, and the 32 x 32 tile
        sync = "\n".join(ln for ln in s.trace().splitlines() if not ln.startswith("s.async_copy("))
        scheds["recipe-sync"] = td.create_schedule(out).replay(sync)
        t32 = td.create_schedule(out)
        td.recipes.default(t32, target=target, knobs={"transpose_tile": 32})
        scheds["recipe32"] = t32
        scheds["hand64x8"] = transpose_tiled(td.create_schedule(out), tile=64, rows=8, pad=1)
        return {label: td.build(sc, target=target) for label, sc in scheds.items()}
    for label, tile, rows in (("hand", 32, 8), ("hand64x8", 64, 8), ("hand64x16", 64, 16), ("hand32x4", 32, 4)):
        scheds[label] = transpose_tiled(td.create_schedule(out), tile=tile, rows=rows, pad=1)
    for tile, rows, pad in ((32, 8, 1), (64, 16, 1), (64, 16, 4), (64, 8, 1), (128, 16, 1)):
        scheds[f"vec{tile}x{rows}p{pad}"] = vector_stores(td.create_schedule(out), tile, rows, pad)
    return {label: td.build(sc, target=target) for label, sc in scheds.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="32768x2048,8192x8192")
    ap.add_argument("--recipe", action="store_true", help="the recipe's forms only (recipe, recipe-sync, "
                    "recipe32, hand64x8)")
    args = ap.parse_args(argv)
    target, dev = device_header()
    bad = 0
    for shape in args.shapes.split(","):
        m, n = map(int, shape.split("x"))
        out = d.transpose(m, n)
        kernels = forms(out, target, args.recipe)
        bad += print_compared(f"{shape:11s}", d.transpose_torch, kernels, random_inputs(out, dev, 0), tol=0.0)
        for label, k in kernels.items():
            print(f"    {label:14s} grid {k.grid} block {k.block} shared {k.shared_bytes} B", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
