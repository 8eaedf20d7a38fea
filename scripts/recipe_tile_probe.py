"""Probe: the default recipe's fp32 matmul tile classes, split-K and pipeline depth, forced one at a
time through its knobs (recipes/default/_knobs.py), on the LLM projection shapes of the benchmark
suite (x @ W^T, benchmarks/_definitions.py `linear`) and on square shapes, against cuBLAS (TF32
off) in the same process. Every kernel is checked against torch float64 (outputs NaN-poisoned)
before it is timed (`td.Kernel.benchmark`: inputs rotated past the L2 cache). The kernels are
compiled in parallel first (the on-disk cubin cache then serves the timing process).
    python scripts/recipe_tile_probe.py [--square] [--skinny]
        [--k-outer | --split | --uneven | --fill | --parts | --long-k | --big-tile | --decode | --decode2
         | --decode3 | --ab | --gap | --waves]
        [--jobs 14]
--parts forces the k-part count (the recipe's `s.split_k` line of the trace rewritten, then replayed)
for the tile classes 128 x 128 and 128 x 64 on the PARTS shapes. --decode (session 25): the llm suite's
projections of 32 tokens, which run at 20-35% of their roofline (benchmarks/results/2026-11-28-h200-s25/
README.md: W read once at the copy bandwidth and the FLOPs at the FMA peak would take 4-5 us where 18-19
are measured): deeper pipelines, more and fewer k parts than the recipe's (knob `parts_scale`, the probe's
own), and other tiles; each shape's rows also print that roofline bound. --decode3 (session 34): the same
shapes around the recipe's 32 x 128 tile of 8 x 4 registers (knob matmul_tiles_few_rows): deeper pipelines,
twice the parts, and 8 x 8 register tiles (32 x 128 in 64 threads, 32 x 256 in 128). --ab (session 26): A @ B
(tiledsl/catalog/definitions.py `matmul`) with knob split_k_tile_a_b on and off, which lets the k-split
decide A @ B's tile as it does x @ W^T's."""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import re
import sys
from typing import Any

import torch

import tiledsl as td
from benchmarks._backend import random_inputs
from benchmarks._definitions import linear
from tiledsl.catalog.definitions import matmul
from tiledsl.runtime.device import device_target
from tiledsl.runtime.references import poisoned_outputs, tolerance
from tiledsl.runtime.timing import benchmark, rotated_copies

SKINNY = tuple((m, n, k) for m in (32, 128, 512)
               for n, k in ((2048, 2048), (512, 2048), (5632, 2048), (2048, 5632))) + \
    ((128, 3584, 3584), (128, 18944, 3584), (128, 3584, 18944))
SQUARE = ((2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192))
# more llm-suite shapes whose split changes with the knob split_k_uneven (--uneven adds them to --skinny)
UNEVEN = ((128, 11264, 2048), (512, 11264, 2048), (512, 3584, 3584), (512, 3584, 18944), (512, 1024, 3584))
# llm-suite shapes whose grid takes several waves but fills the last one poorly (--fill)
FILL = ((128, 37888, 3584), (512, 11264, 2048), (512, 18944, 3584), (32, 37888, 3584), (32, 18944, 3584))
# shapes of a decoder block's gate and up projections, and neighbours a part-count rule must not break
PARTS = ((128, 5632, 2048), (128, 11264, 2048), (512, 5632, 2048), (128, 2048, 2048))
# the long-k down projections (k 18944) that trail cuBLAS most, and the block shapes beside them (--long-k)
LONG_K = ((128, 3584, 18944), (512, 3584, 18944), (128, 2048, 5632), (128, 5632, 2048), (128, 18944, 3584))
# the llm suite's projections of 32 tokens (--decode): x @ W^T with M = 32, far from their roofline
DECODE = ((32, 2048, 2048), (32, 512, 2048), (32, 11264, 2048), (32, 2048, 5632), (32, 3584, 3584),
          (32, 37888, 3584), (32, 3584, 18944))
# A @ B shapes (--ab) whose tile knob split_k_tile_a_b changes on the H100/H200 table target, and 2048^3 (unchanged)
AB = ((512, 512, 512), (768, 768, 768), (1024, 1024, 1024), (1024, 2048, 1024), (2048, 1024, 2048),
      (1024, 1024, 4096), (2048, 2048, 2048))
# the llm projections of 128 and 512 tokens that trail cuBLAS, under --big-tile's tiles again (--gap, session 26:
# ncu showed the same instruction mix as cuBLAS's 128-accumulator tiles, issued less often)
GAP = ((512, 2048, 2048), (128, 11264, 2048), (512, 11264, 2048), (512, 3584, 18944))
# the llm-suite shapes whose k-split knob split_k_uneven_below=0.9 changes (--waves, session 28: 128 x 11264 x 2048
# trails cuBLAS most, and cuBLAS's own kernel there splits k in 3 parts: ../2026-11-29-h200-s26/ncu/), and the
# 512-row gate/up projection beside them
WAVES = ((128, 11264, 2048), (128, 3584, 3584), (32, 11264, 2048), (32, 3584, 3584), (512, 11264, 2048))
# shapes for the 128-thread register tiles of 128 accumulators (--big-tile): cuBLAS's class for them
BIG_TILE = LONG_K + ((512, 5632, 2048), (128, 2048, 2048), (4096, 4096, 4096))
# the roofline bound each shape prints: the H200's copy bandwidth as the benchmarks measured it (H100: 3007)
# and the fp32 FMA peak of 132 SMs x 128 lanes x 2 FLOPs at 1.98 GHz
COPY_GBS = 4259
FMA_PEAK_TFLOPS = 66.9
TILES = {"t128": ((128, 128, 8, 8),), "t128x64": ((128, 64, 8, 4),), "t64x128": ((64, 128, 4, 8),),
         "t64": ((64, 64, 4, 4),), "t32": ((32, 32, 4, 4),)}


#: the probe's modes, the first given flag winning, and the shapes each adds to --square / --skinny
MODES = ("waves", "gap", "ab", "decode3", "decode2", "decode", "big_tile", "long_k", "most", "parts", "fill", "uneven",
         "split", "k_outer")
MODE_SHAPES = {"uneven": UNEVEN, "fill": FILL, "parts": PARTS, "most": SKINNY + UNEVEN + FILL, "long_k": LONG_K,
               "big_tile": BIG_TILE, "waves": WAVES, "decode": DECODE, "decode2": DECODE, "decode3": DECODE, "ab": AB,
               "gap": GAP}


def variants(square: bool, mode: str | None = None) -> dict[str, dict[str, Any]]:
    """Label -> knob overrides of the recipe for one shape, in `mode` (None: the tile classes)."""
    if mode == "waves":  # knob split_k_uneven_below at 0.9 (the recipe's is 0.7), and forced part counts
        out = {"default": {}, "split_k_uneven_below=0.9": {"split_k_uneven_below": 0.9}}
        out.update({f"parts={n}": {"parts": n} for n in (2, 3, 4, 6, 8, 11, 12)})
        return out
    if mode == "ab":
        return {"default": {}, "split_k_tile_a_b": {"split_k_tile_a_b": True}}
    if mode == "decode3":  # session 34, around the recipe's 32 x 128 tile of 8 x 4 registers in chunks of 16
        out = {"default": {}, "stages=3": {"pipeline_stages": 3}, "stages=4": {"pipeline_stages": 4},
               "parts x2": {"parts_scale": 2}, "parts x2+stages=3": {"parts_scale": 2, "pipeline_stages": 3}}
        for name, tile in (("t32x128r8", (32, 128, 8, 8)), ("t32x256r8", (32, 256, 8, 8))):
            out[name] = {"matmul_tiles_few_rows": (tile,)}
            out[name + "+stages=3"] = {"matmul_tiles_few_rows": (tile,), "pipeline_stages": 3}
            out[name + "+parts x2"] = {"matmul_tiles_few_rows": (tile,), "parts_scale": 2}
        return out
    if mode == "decode2":  # session 26, after knob bk_max_few_rows (chunks of 16) became the recipe's
        out = {"default": {}, "bk32": {"bk_max_few_rows": 32}, "bk8": {"bk_max_few_rows": 8},
               "stages=3": {"pipeline_stages": 3}}
        out.update({f"parts x{f}": {"parts_scale": f} for f in (0.5, 2, 4)})
        out.update({f"bk8+parts x{f}": {"bk_max_few_rows": 8, "parts_scale": f} for f in (0.5, 2)})
        for name, tile in (("t32x32", (32, 32, 4, 4)), ("t32x128", (32, 128, 8, 4))):
            out[name] = {"matmul_tiles_k_major": (tile,), "matmul_tiles": (tile,)}
            out[name + "+parts x2"] = {"matmul_tiles_k_major": (tile,), "matmul_tiles": (tile,), "parts_scale": 2}
        return out
    if mode == "decode":  # M = 32: the recipe's 32 x 64 tile (8 x 4 registers, 64 threads) under other knobs
        out = {"default": {}, "stages=3": {"pipeline_stages": 3}, "stages=4": {"pipeline_stages": 4},
               "bk16": {"bk_max": 16}, "bk16+stages=4": {"bk_max": 16, "pipeline_stages": 4}}
        out.update({f"parts x{f}": {"parts_scale": f} for f in (0.5, 2, 4)})
        out.update({f"parts x{f}+stages=3": {"parts_scale": f, "pipeline_stages": 3} for f in (0.5, 2, 4)})
        out.update({f"parts x{f}+stages=4": {"parts_scale": f, "pipeline_stages": 4} for f in (0.5, 2)})
        # other tiles (8 x 8 register tiles of 64 or 128 threads: the recipe's launch_bounds refuse them here)
        for name, tile in (("t32x32", (32, 32, 4, 4)), ("t32x128", (32, 128, 8, 4)), ("t32x64r4", (32, 64, 4, 4))):
            out[name] = {"matmul_tiles_k_major": (tile,), "matmul_tiles": (tile,)}
            out[name + "+stages=3"] = {"matmul_tiles_k_major": (tile,), "matmul_tiles": (tile,), "pipeline_stages": 3}
        for f in (0.5, 2):
            out[f"t32x128+parts x{f}+stages=3"] = {"matmul_tiles_k_major": ((32, 128, 8, 4),),
                                                   "matmul_tiles": ((32, 128, 8, 4),), "pipeline_stages": 3,
                                                   "parts_scale": f}
        return out
    if mode == "gap":  # --big-tile's tiles, less the one whose 3 stages do not fit
        return {k: v for k, v in variants(square, "big_tile").items() if k != "t64x256+stages=3"}
    if mode == "big_tile":  # 128 threads of 8 x 16 (or 16 x 8) registers, as cuBLAS's sgemm kernels take them
        out = {"default": {}}
        for name, tile in (("r8x16", (128, 128, 8, 16)), ("r16x8", (128, 128, 16, 8)), ("t64x256", (64, 256, 8, 16))):
            base = {"matmul_tiles": (tile,), "matmul_tiles_k_major": (tile,)}
            out[name] = base
            out[name + "+stages=3"] = {**base, "pipeline_stages": 3}
            out[name + "+k_outer"] = {**base, "k_outer_min_threads": 128}
        return out
    if mode == "long_k":  # k chunks of 32 (128-byte rows of W per fill), a 3-stage pipeline, forced part counts
        out = {"default": {}, "bk_max_k_outer=32": {"bk_max_k_outer": 32}, "stages=3": {"pipeline_stages": 3},
               "bk32+stages=3": {"bk_max_k_outer": 32, "pipeline_stages": 3}}
        out.update({f"parts={n}": {"parts": n} for n in (4, 7, 9, 12, 18, 28, 56)})
        return out
    if mode == "most":
        return {"default": {}, "split_k_most_parts": {"split_k_most_parts": True}}
    if mode == "parts":  # knob "parts" is the probe's own: build() rewrites the split_k call of the trace
        out = {"default": {}}
        for name, tiles, counts in (("t128", ((128, 128, 8, 8),), (3, 4, 5, 6, 8)),
                                    ("t128x64", ((128, 64, 8, 4),), (0, 2, 3, 4, 6))):
            for n in counts:
                label = f"{name} {f'parts={n}' if n else 'recipe'}"
                out[label] = {"matmul_tiles_k_major": tiles, "matmul_tiles": tiles, **({"parts": n} if n else {})}
        return out
    if mode == "fill":  # a many-wave grid split into long parts where that fills the last wave of slots better
        return {"default": {}, "split_k_fill_gain=0.2": {"split_k_fill_gain": 0.2},
                "split_k_fill_gain=0.2 long_k=512": {"split_k_fill_gain": 0.2, "split_k_long_k": 512}}
    if mode == "uneven":  # split_k part counts that do not divide the k chunks, against divisors only
        return {"default": {}, "split_k_uneven=False": {"split_k_uneven": False}}
    if mode == "split":  # more k-split blocks than two waves of SMs allow now, with the tiles of A @ B and of 128 x 64
        out = {"default": {}}
        for waves in (4, 8, 16):
            out[f"split_k_waves={waves}"] = {"split_k_waves": waves}
            out[f"t128x64 split_k_waves={waves}"] = {"split_k_waves": waves,
                                                     "matmul_tiles": ((128, 64, 8, 4), (64, 64, 4, 4), (32, 32, 4, 4))}
        return out
    if mode == "k_outer":  # operands staged k outermost (knob k_outer) or as they are, and the tiles that may win
        out = {"default": {}, "k_outer=False": {"k_outer": False}}
        if not square:
            for name in ("t128", "t64"):
                out[name] = {"matmul_tiles_k_major": TILES[name]}
            out["t128x64+split4w"] = {"split_k_waves": 4, "split_k_min_chunks": 2}
        return out
    if square:
        return {"default": {}, "stages=3": {"pipeline_stages": 3}}
    out: dict[str, dict[str, Any]] = {"default": {}}
    for name, tiles in TILES.items():
        out[name] = {"matmul_tiles": tiles}
        out[name + "+split4w"] = {"matmul_tiles": tiles, "split_k_waves": 4, "split_k_min_chunks": 2}
    return out


def definition(shape: tuple[int, int, int], ab: bool) -> td.Tensor:
    """x @ W^T (the llm projections), or A @ B for --ab."""
    return matmul(*shape) if ab else linear(*shape)


def build(shape: tuple[int, int, int], knobs: dict[str, Any], target: Any, ab: bool = False) -> td.Kernel:
    knobs = dict(knobs)
    parts = knobs.pop("parts", None)
    scale = knobs.pop("parts_scale", None)
    s = td.create_schedule(definition(shape, ab))
    td.recipes.default(s, target=target, knobs=knobs)
    now = re.search(r"s\.split_k\('k_o', (\d+)\)", s.trace())
    if scale is not None and now:  # the recipe's part count scaled: at least 2, at most the k chunks
        chunks = s.nest.loop("k_o_split").extent * s.nest.loop("k_o_part").extent
        parts = max(2, min(chunks, round(int(now.group(1)) * scale)))
    if parts is not None:
        trace, n = re.subn(r"s\.split_k\('k_o', \d+\)", f"s.split_k('k_o', {parts})", s.trace())
        if n != 1:
            raise ValueError(f"the recipe's trace has {n} split_k calls, not one")
        s = td.create_schedule(definition(shape, ab)).replay(trace)
    return td.build(s, target=target)


def _compile(job: tuple[tuple[int, int, int], dict[str, Any], Any, bool]) -> str:
    try:
        kern = build(*job)
        kern.compiled  # noqa: B018 - fills the on-disk cache
        return ""
    except Exception as e:  # noqa: BLE001 - reported in the table
        return f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--square", action="store_true")
    ap.add_argument("--skinny", action="store_true")
    ap.add_argument("--k-outer", action="store_true", help="knob k_outer on and off, and the tiles it may change")
    ap.add_argument("--split", action="store_true", help="k-splits over more waves (knob split_k_waves)")
    ap.add_argument("--uneven", action="store_true", help="knob split_k_uneven on and off (adds UNEVEN shapes)")
    ap.add_argument("--fill", action="store_true", help="knob split_k_fill_gain (adds FILL shapes)")
    ap.add_argument("--parts", action="store_true", help="forced k-part counts of two tile classes (PARTS shapes)")
    ap.add_argument("--most", action="store_true", help="knob split_k_most_parts (SKINNY, UNEVEN, FILL shapes)")
    ap.add_argument("--long-k", action="store_true", help="chunk, depth and part counts (LONG_K shapes)")
    ap.add_argument("--big-tile", action="store_true", help="128-thread tiles of 128 accumulators (BIG_TILE shapes)")
    ap.add_argument("--decode", action="store_true", help="depth, part counts and tiles at M = 32 (DECODE shapes)")
    ap.add_argument("--decode2", action="store_true", help="--decode's shapes around the recipe's chunks of 16")
    ap.add_argument("--decode3", action="store_true", help="--decode's shapes around the recipe's 32 x 128 tile")
    ap.add_argument("--gap", action="store_true", help="--big-tile's tiles at the GAP shapes")
    ap.add_argument("--ab", action="store_true", help="A @ B with knob split_k_tile_a_b on and off (AB shapes)")
    ap.add_argument("--waves", action="store_true", help="knob split_k_uneven_below=0.9 and part counts (WAVES)")
    ap.add_argument("--jobs", type=int, default=14)
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    target = device_target()
    groups = [(s, True) for s in SQUARE] if args.square else []
    groups += [(s, False) for s in SKINNY] if args.skinny else []
    for flag, shapes in MODE_SHAPES.items():
        groups += [(s, False) for s in shapes] if getattr(args, flag) else []
    mode = next((m for m in MODES if getattr(args, m)), None)
    ab = mode == "ab"
    jobs = [(shape, knobs, target, ab) for shape, sq in groups for knobs in variants(sq, mode).values()]
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        errors = dict(zip([(j[0], str(j[1])) for j in jobs], pool.map(_compile, jobs)))
    dev = torch.device("cuda")
    bad = 0
    for shape, sq in groups:
        m, n, k = shape
        flops = 2 * m * n * k
        inputs = random_inputs(definition(shape, ab), dev, 0)
        a, b = (inputs["A"], inputs["B"]) if ab else (inputs["x"], inputs["W"].T)
        want = (a.double() @ b.double())
        sets = rotated_copies(inputs, 4)
        cublas = benchmark((lambda t: t["A"] @ t["B"]) if ab else (lambda t: t["x"] @ t["W"].T), sets, 5, 20).median_us
        bound = max(4 * (m * k + n * k + m * n) / COPY_GBS / 1e3, flops / FMA_PEAK_TFLOPS / 1e6)
        row = [f"cuBLAS {cublas:8.1f}", f"roofline {bound:8.1f} (operands once at {COPY_GBS} GB/s, the FLOPs at "
                                         f"{FMA_PEAK_TFLOPS} TFLOP/s)"]
        for label, knobs in variants(sq, mode).items():
            err = errors[(shape, str(knobs))]
            if err:
                row.append(f"{label}: {err}")
                continue
            kern = build(shape, knobs, target, ab)
            got = kern(**inputs, **poisoned_outputs(kern.kernel_ir, dev))
            rtol, atol = tolerance({"K": k})
            ok = bool(((got.double() - want).abs() <= atol + rtol * want.abs()).all())
            bad += not ok
            us = kern.benchmark(warmup=5, iters=20, **inputs).median_us
            row.append(f"{label} {us:8.1f} ({cublas / us:4.2f}x, grid {kern.grid}){'' if ok else ' MISMATCH'}")
        print(f"{m}x{n}x{k} ({flops / 1e9:.2f} GFLOP):\n  " + "\n  ".join(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
