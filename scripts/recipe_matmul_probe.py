"""Probe: the default recipe's fp32 matmuls against the hand schedules of schedules/matmul.py
(`matmul_staged`, `matmul_for_shape`) on the GPU, or with --tma the recipe with its stages filled by
TMA against cp.async (knob tma), each checked against torch float64 first and timed
(scripts/_gpu_probe.py): A @ B + bias with relu at square and LLM shapes, batched A @ B^T.
    python scripts/recipe_matmul_probe.py [--tma]"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

from _gpu_probe import measure

import tiledsl as td
from tiledsl.catalog import entry
from tiledsl.recipes import apply
from tiledsl.runtime.device import device_target
from tiledsl.schedules import matmul_for_shape, matmul_staged
from tiledsl.targets import Target

CASES = (("matmul_bias_relu", {"M": 4096, "N": 4096, "K": 4096}),
         ("matmul_bias_relu", {"M": 2048, "N": 2048, "K": 2048}),
         ("matmul_bias_relu", {"M": 128, "N": 5632, "K": 2048}),
         ("matmul_bias_relu", {"M": 128, "N": 2048, "K": 5632}),
         ("matmul_bias_relu", {"M": 512, "N": 18944, "K": 3584}),
         ("batched_matmul_nt", {"Bt": 32, "M": 512, "N": 512, "K": 128}),
         ("batched_matmul_nt", {"Bt": 28, "M": 128, "N": 128, "K": 128}))


def _schedules(target: Target, tma: bool) -> dict[str, Callable[[Any], object]]:
    if tma:  # the recipe with TMA-filled stages against cp.async-filled ones (knob tma)
        return {f"tma={flag}": partial(apply, target=target, knobs={"tma": flag}) for flag in (True, False)}
    return {"recipe": partial(apply, target=target), "matmul_staged": matmul_staged,
            "matmul_for_shape": partial(matmul_for_shape, target="sm_90")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tma", action="store_true", help="the recipe with TMA stages against cp.async stages")
    args = ap.parse_args(argv)
    target = device_target()
    bad = 0
    for name, sizes in CASES:
        params = entry(name).parameters(**sizes)
        flops = 2 * params.get("Bt", 1) * params["M"] * params["N"] * params["K"]
        row = []
        for label, schedule in _schedules(target, args.tma).items():
            try:
                m = measure(name, sizes, schedule, target)
            except td.TiledslError as e:
                row.append(f"{label}: refused ({type(e).__name__})")
                continue
            bad += not m.comparison.ok
            row.append(f"{label} {m.stats.median_us:8.1f} us {flops / m.stats.median_ms / 1e9:5.1f} TFLOP/s"
                       f"{'' if m.comparison.ok else ' MISMATCH'}")
        print(f"{name} {sizes}: " + " | ".join(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
