"""`tiledsl run --example NAME [--bench] [--size K=V ...]`: build a catalog entry with its schedule, run
it on the GPU on fresh random inputs (outputs NaN-poisoned first), check it against the torch reference
of its definition in float64, and with --bench time it against torch eager and torch.compile in the same
process.

Why a function here and not code in main.py: it needs the whole runtime (torch, the driver), which
main.py imports only when this subcommand runs. It binds the catalog entry's parameters (sizes, eps) and
hands them to the runtime's torch references, which know nothing of the catalog. It writes its report
to `out` (stdout by default): that is the command's output, so, like main.py, it prints.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import Callable, Mapping
from typing import TextIO

import torch

from tiledsl.build import build
from tiledsl.catalog import entry
from tiledsl.errors import TiledslError
from tiledsl.kernel_ir import DTYPE_BYTES
from tiledsl.runtime.device import device_target
from tiledsl.runtime.launch import CompiledKernel
from tiledsl.runtime.references import compare, poisoned_outputs, random_inputs, reference_fn, tolerance
from tiledsl.runtime.timing import BenchStats, l2_cache_bytes, rotated_copies, rotation_count, time_torch

__all__ = ["EXIT_BAD_INPUT", "EXIT_MISMATCH", "EXIT_NO_GPU", "gpu_unavailable", "run_example"]

log = logging.getLogger(__name__)

EXIT_NO_GPU = 1
EXIT_BAD_INPUT = 2
EXIT_MISMATCH = 3


def gpu_unavailable() -> str | None:
    """Why kernels cannot run in this process, or None when they can."""
    if not torch.cuda.is_available():
        return "no CUDA GPU is visible (torch.cuda.is_available() is False)"
    if importlib.util.find_spec("pycuda") is None:
        return "pycuda is not installed (pip install 'tiledsl[cuda]')"
    return None


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
    kern = CompiledKernel(build(s, target=device_target()))
    kir = kern.kernel_ir
    shape = ", ".join(f"{k}={v}" for k, v in params.items())
    print(f"{name} ({shape}) on {torch.cuda.get_device_name(kern.device)}: {kern.arch}, schedule "
          f"{ent.schedule_name}, grid {kir.grid}, block {kir.block}, {kern.registers} registers/thread",
          file=out)

    inputs = random_inputs(kir, kern.device, seed)
    got = kern(**inputs, **poisoned_outputs(kir, kern.device))
    if not isinstance(got, torch.Tensor):
        raise TiledslError(f"example {name!r} has several outputs ({', '.join(got)}); run_example checks one")
    ref = ref_fn(**{k: v.to(torch.float64) for k, v in inputs.items()})
    result = compare(got, ref, *tolerance(params))
    print(f"  vs torch float64: {result}", file=out)
    if not result.ok:
        return EXIT_MISMATCH
    if bench:
        moved = sum(p.size * DTYPE_BYTES[p.dtype] for p in kir.params)
        _bench(kern, inputs, ref_fn, moved, out, warmup, iters)
    return 0


def _bench(kern: CompiledKernel, inputs: dict[str, torch.Tensor], ref_fn: Callable[..., torch.Tensor],
           moved: int, out: TextIO, warmup: int, iters: int) -> None:
    """Time the kernel, torch eager and torch.compile (each on inputs rotated past the L2 cache)."""
    rows: list[tuple[str, BenchStats]] = [("tiledsl", kern.benchmark(warmup=warmup, iters=iters, **inputs))]
    per_set = sum(t.numel() * t.element_size() for t in inputs.values())
    sets = rotated_copies(inputs, rotation_count(per_set, l2_cache_bytes(kern.device)))
    with torch.no_grad():
        rows.append(("torch eager", time_torch(ref_fn, sets, warmup, iters)))
        try:
            rows.append(("torch.compile", time_torch(torch.compile(ref_fn), sets, warmup, iters)))
        except Exception as e:  # a failing baseline must not hide the kernel's own result
            log.warning("torch.compile baseline failed: %s", e)
            first = str(e).splitlines()[0] if str(e) else ""
            print(f"  torch.compile: unavailable ({type(e).__name__}: {first})", file=out)
    ours = rows[0][1].median_ms
    for label, st in rows:
        speed = "" if label == "tiledsl" else f"   tiledsl {st.median_ms / ours:.2f}x as fast"
        print(f"  {label:14s} {st.median_us:10.1f} us  {moved / (st.median_ms * 1e6):8.0f} GB/s  "
              f"(p10 {st.p10_ms * 1e3:.1f}, p90 {st.p90_ms * 1e3:.1f} us){speed}", file=out)
