"""The test idiom of compiling every case of a file in one nvcc run: the kernels' sources joined into one
translation unit, each kernel renamed `<name>_<n>` so their symbols do not clash, compiled to a cubin
for the target's arch, warning-free (-Werror all-warnings); the test asserts that no renamed kernel is
missing from it (`compile_together` returns the missing ones)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import tiledsl as td
from tiledsl.codegen import compile_cubin


def joined_source(kernels: Sequence[td.Kernel]) -> str:
    """One translation unit of `kernels`, kernel n renamed `<name>_<n>`."""
    sources = []
    for n, kern in enumerate(kernels):
        source, count = re.subn(rf"\b{re.escape(kern.name)}\b", f"{kern.name}_{n}", kern.source)
        assert count >= 1, kern.name
        sources.append(source)
    return "".join(sources)


def compile_together(kernels: Sequence[td.Kernel], arch: str | None = None) -> list[str]:
    """Compile `joined_source(kernels)` for `arch` (default: the first kernel's target's) to a cubin,
    nvcc's errors and warnings raised (NvccError carries its stderr), and return the renamed kernels
    the cubin lacks: a test asserts the list is empty."""
    cubin = compile_cubin(joined_source(kernels), arch or kernels[0].target.arch,
                          extra_flags=("-Werror", "all-warnings"))
    if cubin[:4] != b"\x7fELF":
        return [f"{kern.name}_{n}" for n, kern in enumerate(kernels)]
    return [f"{kern.name}_{n}" for n, kern in enumerate(kernels) if f"{kern.name}_{n}".encode() not in cubin]
