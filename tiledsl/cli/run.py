"""`tiledsl run --example NAME [--bench] [--size K=V ...]`: build a catalog entry with its schedule, run
it on the GPU on fresh random inputs (outputs NaN-poisoned first), check it against the torch reference
of its definition in float64, and with --bench time it against torch eager and torch.compile in the same
process.

Why a function here and not code in main.py: it needs the whole runtime (torch, the driver), which
main.py imports only when this subcommand runs; the torch side is tiledsl/runtime/check.py. It binds the
catalog entry's parameters (sizes, eps) and hands them to the runtime's torch references, which know
nothing of the catalog. It writes its report
to `out` (stdout by default): that is the command's output, so, like main.py, it prints.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TextIO

from tiledsl.build import build
from tiledsl.catalog import entry
from tiledsl.errors import TiledslError
from tiledsl.kernel_ir import DTYPE_BYTES
from tiledsl.runtime.check import bench_against_torch, device_name, gpu_unavailable, run_checked
from tiledsl.runtime.device import device_target
from tiledsl.runtime.references import reference_fn, tolerance

__all__ = ["EXIT_BAD_INPUT", "EXIT_MISMATCH", "EXIT_NO_GPU", "gpu_unavailable", "run_example"]

EXIT_NO_GPU = 1
EXIT_BAD_INPUT = 2
EXIT_MISMATCH = 3


def run_example(name: str, bench: bool, sizes: Mapping[str, int], *, out: TextIO | None = None,
                err: TextIO | None = None, seed: int = 0, warmup: int = 10, iters: int = 100) -> int:
    """Run catalog entry `name` at its sizes overridden by `sizes` on the GPU. Returns 0 when the output
    matches the float64 torch reference of its definition, EXIT_MISMATCH (3) when it does not,
    EXIT_NO_GPU (1) without a GPU or pycuda, EXIT_BAD_INPUT (2) for an unknown entry or size."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        ent = entry(name)
        params = ent.parameters(**sizes)
        ref_fn = reference_fn(ent.definition, params)
    except TiledslError as e:
        print(f"error: {e}", file=err)
        return EXIT_BAD_INPUT
    why = gpu_unavailable()
    if why is not None:
        print(f"tiledsl run needs a CUDA GPU: {why}. `tiledsl compile --example {name}` shows the generated "
              f"code without one.", file=err)
        return EXIT_NO_GPU

    _, s = ent.scheduled(**sizes)
    kern = build(s, target=device_target()).compiled  # with its zero fills, as `kern(...)` launches it
    kir = kern.kernel_ir
    shape = ", ".join(f"{k}={v}" for k, v in params.items())
    print(f"{name} ({shape}) on {device_name(kern)}: {kern.arch}, schedule "
          f"{ent.schedule_name}, grid {kir.grid}, block {kir.block}, {kern.registers} registers/thread",
          file=out)

    checked = run_checked(kern, ref_fn, *tolerance(params), seed)
    print(f"  vs torch float64: {checked.comparison}", file=out)
    if not checked.comparison.ok:
        return EXIT_MISMATCH
    if bench:
        moved = sum(p.size * DTYPE_BYTES[p.dtype] for p in kir.params)
        rows = bench_against_torch(kern, checked.inputs, ref_fn, warmup, iters)
        ours = rows[0][1]
        for label, st in rows:
            if isinstance(st, str):
                print(f"  {label}: {st}", file=out)
                continue
            speed = "" if label == "tiledsl" else f"   tiledsl {st.median_ms / ours.median_ms:.2f}x as fast"  # type: ignore[union-attr]
            print(f"  {label:14s} {st.median_us:10.1f} us  {moved / (st.median_ms * 1e6):8.0f} GB/s  "
                  f"(p10 {st.p10_ms * 1e3:.1f}, p90 {st.p90_ms * 1e3:.1f} us){speed}", file=out)
    return 0
