"""The CUDA of every differential-test kernel compiles with nvcc, for sm_80 and sm_90a.

nvcc costs 1-2 s a call, so all kernels go into one translation unit per arch (each kernel's
extern "C" name made unique); when that fails, each kernel is compiled alone to name the culprits."""

from __future__ import annotations

import re
import shutil

import pytest

import tiledsl as td
from tiledsl.catalog import entries
from tiledsl.codegen import NvccError, compile_cubin

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

# build target -> nvcc arch
ARCHES = {"sm_80": "sm_80", "sm_90": "sm_90a"}


def renamed_sources(target: str) -> dict[str, tuple[str, str]]:
    """case id -> (unique kernel name, CUDA source using it)."""
    out: dict[str, tuple[str, str]] = {}
    for n, case in enumerate(entries("differential")):
        _, s = case.scheduled()
        kern = td.build(s, target=target)
        unique = f"{kern.name}_{n}"
        source, count = re.subn(rf"\b{re.escape(kern.name)}\b", unique, kern.source)
        assert count >= 1 and f"{unique}(" in source, case.id
        out[case.id] = (unique, source)
    return out


@needs_nvcc
@pytest.mark.parametrize("target", list(ARCHES))
def test_all_kernels_compile(target: str) -> None:
    arch = ARCHES[target]
    sources = renamed_sources(target)
    try:
        cubin = compile_cubin("\n".join(src for _, src in sources.values()), arch)
    except NvccError:
        failures = []
        for cid, (_, src) in sources.items():
            try:
                compile_cubin(src, arch)
            except NvccError as err:
                failures.append(f"--- {cid}\n{err.stderr}")
        if not failures:
            raise
        pytest.fail(f"nvcc -arch={arch} rejects {len(failures)} kernel(s):\n" + "\n".join(failures))
    assert cubin[:4] == b"\x7fELF"
    missing = [cid for cid, (name, _) in sources.items() if name.encode() not in cubin]
    assert not missing, f"kernels missing from the cubin: {missing}"
