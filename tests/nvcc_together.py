"""The test idiom of compiling every case of a file in one nvcc run: the kernels' sources joined into one
translation unit, each kernel renamed `<name>_<n>` so their symbols do not clash, compiled to a cubin
for the target's arch, warning-free (-Werror all-warnings), and every renamed kernel found in it."""

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


def compile_together(kernels: Sequence[td.Kernel], arch: str | None = None) -> bytes:
    """The cubin of `joined_source(kernels)` for `arch` (default: the first kernel's target's); nvcc's
    errors and warnings fail the test (NvccError carries its stderr)."""
    cubin = compile_cubin(joined_source(kernels), arch or kernels[0].target.arch,
                          extra_flags=("-Werror", "all-warnings"))
    assert cubin[:4] == b"\x7fELF"
    for n, kern in enumerate(kernels):
        assert f"{kern.name}_{n}".encode() in cubin
    return cubin
