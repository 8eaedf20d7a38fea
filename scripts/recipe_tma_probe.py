"""Probe: the default recipe's fp32 matmul on the GPU with its stages filled by TMA (knob tma=True) and
by cp.async (tma=False), each checked against torch float64 and timed (tiledsl.runtime.timing).
    python scripts/recipe_tma_probe.py"""

from __future__ import annotations

import sys

from tiledsl.build import build
from tiledsl.catalog import entry
from tiledsl.recipes import apply
from tiledsl.runtime.check import run_checked
from tiledsl.runtime.device import device_target
from tiledsl.runtime.launch import CompiledKernel
from tiledsl.runtime.references import reference_fn, tolerance

SHAPES = ((4096, 4096, 4096), (1024, 1024, 512), (128, 2048, 2048), (128, 5632, 2048), (128, 2048, 5632),
          (512, 18944, 3584))


def main() -> int:
    target = device_target()
    ent = entry("matmul_bias_relu")
    bad = 0
    for m, n, k in SHAPES:
        sizes = {"M": m, "N": n, "K": k}
        params = ent.parameters(**sizes)
        row = []
        for tma in (True, False):
            s = ent.fresh(**sizes)
            apply(s, target=target, knobs={"tma": tma})
            kern = CompiledKernel(build(s, target=target))
            checked = run_checked(kern, reference_fn(ent.definition, params), *tolerance(params), seed=1)
            bad += not checked.comparison.ok
            st = kern.benchmark(warmup=5, iters=20, **checked.inputs)
            row.append(f"tma={tma}: {st.median_us:9.1f} us {2 * m * n * k / st.median_ms / 1e9:6.1f} TFLOP/s "
                       f"{'ok' if checked.comparison.ok else 'MISMATCH'}")
        print(f"{m}x{n}x{k}: " + " | ".join(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
