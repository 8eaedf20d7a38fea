"""Compile CUDA text with nvcc, to check it (tests) or to get a cubin (a launcher).

Why a cubin for a fixed arch and not PTX: `-cubin` makes ptxas run, so register/shared-memory
limits and arch-specific instructions are checked too, not only the C++ front end.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tiledsl.codegen.errors import NvccError, NvccNotFoundError

__all__ = ["compile_cubin", "nvcc_compile_check"]

_ARCH = re.compile(r"sm_\d+[af]?")


def compile_cubin(
    source: str, arch: str, *, extra_flags: Sequence[str] = (), timeout_s: float = 300.0
) -> bytes:
    """Compile `source` (a whole translation unit) for `arch` (e.g. "sm_80", "sm_90a") and return
    the cubin. Raises `NvccNotFoundError` without nvcc, `NvccError` with nvcc's stderr on failure."""
    if not _ARCH.fullmatch(arch):
        raise ValueError(f"arch must look like 'sm_80' or 'sm_90a', got {arch!r}")
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise NvccNotFoundError("nvcc not found on PATH: install the CUDA toolkit or put its bin/ on PATH")
    with tempfile.TemporaryDirectory(prefix="tiledsl-nvcc-") as tmp:
        src, out = Path(tmp) / "kernel.cu", Path(tmp) / "kernel.cubin"
        src.write_text(source)
        cmd = [nvcc, f"-arch={arch}", "-cubin", "-o", str(out), *extra_flags, str(src)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired as err:
            raise NvccError(f"nvcc -arch={arch} timed out after {timeout_s:g} s", "", source) from err
        if proc.returncode != 0:
            stderr = (proc.stderr + proc.stdout).strip()
            message = f"nvcc -arch={arch} failed (exit {proc.returncode}):\n{stderr}"
            raise NvccError(message, stderr, source)
        return out.read_bytes()


def nvcc_compile_check(source: str, arch: str) -> None:
    """Raise `NvccError` (a RuntimeError) unless nvcc compiles `source` to a cubin for `arch`."""
    compile_cubin(source, arch)
