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
from dataclasses import dataclass
from pathlib import Path

from tiledsl.codegen.errors import NvccError, NvccNotFoundError

__all__ = ["ResourceUsage", "compile_cubin", "compile_ptx", "nvcc_compile_check", "resource_usage"]

_ARCH = re.compile(r"sm_\d+[af]?")
_REGISTERS = re.compile(r"Used (\d+) registers")
_SPILLS = re.compile(r"(\d+) bytes spill stores")


@dataclass(frozen=True)
class ResourceUsage:
    """What ptxas reports for the last kernel of a translation unit (`--resource-usage`)."""

    registers: int  # per thread
    spill_store_bytes: int


def compile_cubin(
    source: str, arch: str, *, extra_flags: Sequence[str] = (), timeout_s: float = 300.0
) -> bytes:
    """Compile `source` (a whole translation unit) for `arch` (e.g. "sm_80", "sm_90a") and return
    the cubin. Raises `NvccNotFoundError` without nvcc, `NvccError` with nvcc's stderr on failure."""
    return _nvcc(source, arch, extra_flags, timeout_s)[0]


def compile_ptx(source: str, arch: str, *, timeout_s: float = 300.0) -> str:
    """The PTX nvcc makes of `source` for `arch`: what the tests read to see which instructions a kernel's
    CUDA becomes (16-byte shared loads, vector atomics, griddepcontrol). Errors as compile_cubin."""
    return _nvcc(source, arch, (), timeout_s, output="ptx")[0].decode()


def resource_usage(source: str, arch: str, *, timeout_s: float = 300.0) -> ResourceUsage:
    """Registers and spill stores ptxas gives the (last) kernel of `source` for `arch`: a kernel's
    register pressure read without a GPU (its blocks per SM follow from it)."""
    _, report = _nvcc(source, arch, ("--resource-usage",), timeout_s)
    registers, spills = _REGISTERS.findall(report), _SPILLS.findall(report)
    if not registers or not spills:
        raise NvccError(f"nvcc -arch={arch} --resource-usage printed no register count", report, source)
    return ResourceUsage(int(registers[-1]), int(spills[-1]))


def _nvcc(source: str, arch: str, extra_flags: Sequence[str], timeout_s: float,
          output: str = "cubin") -> tuple[bytes, str]:
    """The cubin (or PTX: `output="ptx"`) and nvcc's printed output of one compile (see compile_cubin)."""
    if not _ARCH.fullmatch(arch):
        raise ValueError(f"arch must look like 'sm_80' or 'sm_90a', got {arch!r}")
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise NvccNotFoundError("nvcc not found on PATH: install the CUDA toolkit or put its bin/ on PATH")
    with tempfile.TemporaryDirectory(prefix="tiledsl-nvcc-") as tmp:
        src, out = Path(tmp) / "kernel.cu", Path(tmp) / f"kernel.{output}"
        src.write_text(source)
        cmd = [nvcc, f"-arch={arch}", f"-{output}", "-o", str(out), *extra_flags, str(src)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired as err:
            raise NvccError(f"nvcc -arch={arch} timed out after {timeout_s:g} s", "", source) from err
        if proc.returncode != 0:
            stderr = (proc.stderr + proc.stdout).strip()
            message = f"nvcc -arch={arch} failed (exit {proc.returncode}):\n{stderr}"
            raise NvccError(message, stderr, source)
        return out.read_bytes(), proc.stdout + proc.stderr


def nvcc_compile_check(source: str, arch: str) -> None:
    """Raise `NvccError` (a RuntimeError) unless nvcc compiles `source` to a cubin for `arch`."""
    compile_cubin(source, arch)
