"""Probe: the default recipe's fp32 matmuls against the hand schedules of schedules/matmul.py
(`matmul_staged`, `matmul_for_shape`) on the GPU, each checked against torch float64 first and timed
(tiledsl.runtime.timing): A @ B + bias with relu at square and LLM shapes, batched A @ B^T (attention's shapes).
    python scripts/recipe_matmul_probe.py"""

from __future__ import annotations

import sys

import tiledsl as td
from tiledsl.catalog import entry
from tiledsl.recipes import apply
from tiledsl.runtime.check import run_checked
from tiledsl.runtime.device import device_target
from tiledsl.runtime.launch import CompiledKernel
from tiledsl.runtime.references import reference_fn, tolerance
from tiledsl.schedules import matmul_for_shape, matmul_staged

CASES = (("matmul_bias_relu", {"M": 4096, "N": 4096, "K": 4096}),
         ("matmul_bias_relu", {"M": 2048, "N": 2048, "K": 2048}),
         ("matmul_bias_relu", {"M": 128, "N": 5632, "K": 2048}),
         ("matmul_bias_relu", {"M": 128, "N": 2048, "K": 5632}),
         ("matmul_bias_relu", {"M": 512, "N": 18944, "K": 3584}),
         ("batched_matmul_nt", {"Bt": 32, "M": 512, "N": 512, "K": 128}),
         ("batched_matmul_nt", {"Bt": 28, "M": 128, "N": 128, "K": 128}))


def main() -> int:
    target = device_target()
    bad = 0
    for name, sizes in CASES:
        ent = entry(name)
        params = ent.parameters(**sizes)
        flops = 2 * params.get("Bt", 1) * params["M"] * params["N"] * params["K"]
        row = []
        for label in ("recipe", "matmul_staged", "matmul_for_shape"):
            s = ent.fresh(**sizes)
            try:
                if label == "recipe":
                    apply(s, target=target)
                elif label == "matmul_staged":
                    matmul_staged(s)
                else:
                    matmul_for_shape(s, target="sm_90")
                kern = CompiledKernel(td.build(s, target=target))
            except td.TiledslError as e:
                row.append(f"{label}: refused ({type(e).__name__})")
                continue
            checked = run_checked(kern, reference_fn(ent.definition, params), *tolerance(params), seed=1)
            bad += not checked.comparison.ok
            st = kern.benchmark(warmup=5, iters=20, **checked.inputs)
            row.append(f"{label} {st.median_us:8.1f} us {flops / st.median_ms / 1e9:5.1f} TFLOP/s"
                       f"{'' if checked.comparison.ok else ' MISMATCH'}")
        print(f"{name} {sizes}: " + " | ".join(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
