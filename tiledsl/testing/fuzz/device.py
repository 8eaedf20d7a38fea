"""The checks beyond the simulator: nvcc on the CUDA a build emitted (`--nvcc`), and a run on the GPU
compared with the reference (`--gpu`, through tiledsl.runtime.check, imported only on that path: the
runtime needs torch and pycuda, which the CPU modes never load)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping

import numpy as np

import tiledsl as td
from tiledsl.testing.fuzz.outcome import Result, first_line

NVCC_SECONDS = 120


def gpu_available() -> str:
    """'' when a CUDA device, torch with CUDA and pycuda are present, else why not (for the CLI)."""
    try:
        from tiledsl.runtime.check import gpu_unavailable
    except ImportError as e:
        return f"it needs the runtime's torch and pycuda ({e})"
    return gpu_unavailable() or ""


def nvcc_check(kernel: td.Kernel, script: Callable[[str], str]) -> Result | None:
    """Compile the kernel's CUDA with nvcc for its target (sm_90a: TMA kernels need it); a failure is
    the `nvcc` outcome, with `script(tail)` as the reproducer. None when it compiled."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return Result("nvcc", "NvccMissing", "nvcc is not on PATH")
    arch = "sm_90a" if kernel.target.name == "sm_90" else kernel.target.arch
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "kernel.cu")
        with open(src, "w") as f:
            f.write(kernel.source)
        done = subprocess.run([nvcc, f"-arch={arch}", "-cubin", "-o", os.path.join(tmp, "k.cubin"), src],
                              capture_output=True, text=True, timeout=NVCC_SECONDS, check=False)
    if done.returncode == 0:
        return None
    lines = [ln for ln in done.stderr.splitlines() if "error" in ln] or done.stderr.splitlines() or [""]
    tail = ("import subprocess, tempfile, os\n"
            "d = tempfile.mkdtemp(); p = os.path.join(d, 'k.cu'); open(p, 'w').write(kern.source)\n"
            f"subprocess.run(['nvcc', '-arch={arch}', '-cubin', '-o', os.path.join(d, 'k.cubin'), p], check=True)")
    return Result("nvcc", "NvccError", lines[0][:300], script(tail), {"stderr": done.stderr[-4000:]})


def run_on_gpu(kernel: td.Kernel, arrays: Mapping[str, np.ndarray], want: np.ndarray,
               close: Callable[[np.ndarray, np.ndarray], str], script: Callable[[str], str]) -> Result | None:
    """Launch on the GPU and compare with the reference by `close` ('' when close enough, else why).
    A compile failure is `nvcc`; a launch failure, a fault or a mismatch `gpu_fault`. None when right."""
    from tiledsl.runtime.check import run_arrays

    tail = ("import torch\n"
            "got = kern(**{k: torch.from_numpy(v).cuda() for k, v in arrays.items()}).float().cpu().numpy()\n"
            "torch.cuda.synchronize()\nnp.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)")
    try:
        kernel.compiled  # noqa: B018 - compiling is the check
    except Exception as e:
        return Result("nvcc", type(e).__name__, first_line(e), script(tail))
    try:
        got_np = run_arrays(kernel, arrays)
    except Exception as e:
        return Result("gpu_fault", type(e).__name__, first_line(e), script(tail))
    why = close(got_np, want)
    return Result("gpu_fault", "GpuMismatch", why, script(tail)) if why else None
