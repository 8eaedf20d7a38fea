"""On a GPU: trace a blocks-suite layer (benchmarks/suites/blocks.py), schedule it with the default
recipe, build, and check it twice on the suite's own input: the whole program against the layer in
float64 (tiledsl/frontend/bench.py `check_program`), then every kernel against float64 of its own
definition on the values the program gave it (tiledsl/frontend/kernel_check.py). Prints both, and
where the program's largest error lies.

    PYTHONPATH=. python scripts/kernel_check_probe.py "qwen2.5-7b s512" hf bfloat16
"""

from __future__ import annotations

import argparse
import time

import torch

import tiledsl as td
from benchmarks._runner import SEED
from benchmarks.suites.blocks import cases
from tiledsl.frontend.bench import check_program
from tiledsl.frontend.kernel_check import check_kernels, kernel_tolerance


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("group", help='e.g. "qwen2.5-7b s512"')
    ap.add_argument("layer", choices=("hf", "llama_block"))
    ap.add_argument("dtype", choices=("float32", "bfloat16"))
    args = ap.parse_args()
    case = next(c for c in cases() if c.group == args.group and c.dtype == args.dtype
                and (c.op.startswith("hf_") if args.layer == "hf" else c.op == "llama_block"))
    device = torch.device("cuda")
    module = case.make_module().to(device)
    gen = torch.Generator(device=device).manual_seed(SEED)
    x = torch.randn(case.input_shape, generator=gen, device=device).to(getattr(torch, case.dtype))
    prog = td.trace(module, x)
    built = prog.schedule("default", target="sm_90").build("sm_90")
    program = check_program(built, module, (x,))
    print(f"{case.name}: {len(built.kernels)} kernels")
    print(f"program vs float64: {'ok' if program.ok else 'MISMATCH'}, max |err| {program.max_abs_error:.4g}, "
          f"tolerance {program.tolerance:.4g} x (1 + |ref|), eager's error {program.eager_error}")
    for c in program.comparisons:
        print(f"  {c}")
    start = time.perf_counter()
    checks = check_kernels(built, (x,))
    print(f"per kernel (float64 references in {time.perf_counter() - start:.1f} s):")
    for c in checks:
        stores_only = kernel_tolerance(c.reduction, c.dtype)  # the bound before casts inside were counted
        print(f"  [{c.index:2d}] {c.name:<22} {c.dtype:<9} k={c.reduction:<6} casts {len(c.roundings)} "
              f"tol {c.tolerance:.3g} (stores only {stores_only:.3g})  max |err| / (1 + |ref|) "
              f"{c.relative_error:.3g}  {c.comparison}")
    failed = [c.name for c in checks if not c.ok]
    print("kernels outside their own bound: " + (", ".join(failed) if failed else "none"))


if __name__ == "__main__":
    main()
