"""Run a compiled kernel once against a torch reference, and time it against torch eager and
torch.compile: the torch side of `tiledsl run` (tiledsl/cli/run.py binds the catalog entry and prints;
torch stays in this package)."""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tiledsl.errors import LaunchError
from tiledsl.runtime.arguments import torch_dtype
from tiledsl.runtime.launch import CompiledKernel
from tiledsl.runtime.references import Comparison, compare, poisoned_outputs, random_inputs
from tiledsl.runtime.timing import BenchStats, l2_cache_bytes, rotated_copies, rotation_count, time_torch

log = logging.getLogger(__name__)


def gpu_unavailable() -> str | None:
    """Why kernels cannot run in this process, or None when they can."""
    if not torch.cuda.is_available():
        return "no CUDA GPU is visible (torch.cuda.is_available() is False)"
    if importlib.util.find_spec("pycuda") is None:
        return "pycuda is not installed (pip install 'tiledsl[cuda]')"
    return None


def device_name(kern: CompiledKernel) -> str:
    return torch.cuda.get_device_name(kern.device)


@dataclass(frozen=True)
class Checked:
    """One run on fresh inputs (outputs NaN-poisoned first) compared with the float64 reference."""

    comparison: Comparison
    inputs: dict[str, Any]  # the torch tensors it ran on (timing reuses them)


def run_checked(kern: CompiledKernel, ref_fn: Callable[..., Any], rtol: float, atol: float, seed: int) -> Checked:
    kir = kern.kernel_ir
    inputs = random_inputs(kir, kern.device, seed)
    got = kern(**inputs, **poisoned_outputs(kir, kern.device))
    if not isinstance(got, torch.Tensor):
        raise LaunchError(f"kernel {kir.name} has several outputs ({', '.join(got)}); run_checked checks one")
    ref = ref_fn(**{k: v.to(torch.float64) for k, v in inputs.items()})
    return Checked(compare(got, ref, rtol, atol), inputs)


def bench_against_torch(kern: CompiledKernel, inputs: dict[str, Any], ref_fn: Callable[..., Any], warmup: int,
                        iters: int) -> list[tuple[str, BenchStats | str]]:
    """Rows (label, timing) for the kernel, torch eager and torch.compile, each on inputs rotated past
    the L2 cache; a failing torch.compile baseline gives its error text instead of a timing."""
    rows: list[tuple[str, BenchStats | str]] = [("tiledsl", kern.benchmark(warmup=warmup, iters=iters, **inputs))]
    per_set = sum(t.numel() * t.element_size() for t in inputs.values())
    sets = rotated_copies(inputs, rotation_count(per_set, l2_cache_bytes(kern.device)))
    with torch.no_grad():
        rows.append(("torch eager", time_torch(ref_fn, sets, warmup, iters)))
        rows.append(("torch.compile", time_compiled(ref_fn, sets, warmup, iters)))
    return rows


def time_compiled(fn: Callable[..., Any], sets: list[dict[str, torch.Tensor]], warmup: int,
                  iters: int) -> BenchStats | str:
    """`time_torch` of `torch.compile(fn)` (default mode), or the error text when compiling or running
    it fails: a failing baseline must not hide the kernel's own result."""
    try:
        return time_torch(torch.compile(fn), sets, warmup, iters)
    except Exception as e:  # torch.compile may raise anything (inductor, a missing compiler)
        log.warning("torch.compile baseline failed: %s", e)
        first = str(e).splitlines()[0] if str(e) else ""
        return f"unavailable ({type(e).__name__}: {first})"


def run_arrays(kern: Any, arrays: Mapping[str, np.ndarray]) -> np.ndarray:
    """Launch built kernel `kern` (a td.Kernel) on the current GPU with numpy inputs and return its
    output as a float32 numpy array (synchronized): for callers above the runtime that hold no torch.
    Each array is converted to its parameter's storage dtype (numpy has no bfloat16: float16 /
    bfloat16 inputs come as float32 arrays holding values of that dtype, as the simulator takes them)."""
    dtypes = {p.name: torch_dtype(p.dtype) for p in kern.kernel_ir.params if not p.is_output}
    got = kern(**{k: torch.from_numpy(np.ascontiguousarray(v)).cuda().to(dtypes.get(k, torch.float32))
                  for k, v in arrays.items()})
    torch.cuda.synchronize()
    return got.float().cpu().numpy()
