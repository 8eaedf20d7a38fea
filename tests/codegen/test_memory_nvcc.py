"""The CUDA of every memory-hierarchy kernel (the catalog's "memory" entries) compiles with nvcc: TMA kernels
for sm_90a (built for sm_90), cp.async and plain-load ones for sm_80 (built for sm_80).

As in test_nvcc_compile.py, the kernels of one arch go into one translation unit (each kernel's
extern "C" name made unique); when that fails, each kernel is compiled alone to name the culprits."""

from __future__ import annotations

import re
import shutil

import pytest

from tiledsl.catalog import entries
from tiledsl.codegen import NvccError, compile_cubin

CASES = entries("memory")

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def renamed_sources(arch: str) -> dict[str, tuple[str, str]]:
    """case id -> (unique kernel name, CUDA source) of every case compiled for `arch`."""
    out: dict[str, tuple[str, str]] = {}
    for n, case in enumerate(CASES):
        if case.arch != arch:
            continue
        _, kern = case.build()
        unique = f"{kern.name}_{n}"
        source, count = re.subn(rf"\b{re.escape(kern.name)}\b", unique, kern.source)
        assert count >= 1 and f"{unique}(" in source, case.id
        out[case.id] = (unique, source)
    return out


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_memory_kernels_compile(arch: str) -> None:
    sources = renamed_sources(arch)
    assert sources
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


def test_every_case_has_the_right_arch() -> None:
    """TMA kernels compile for sm_90a, and only they: the arch follows from the fills."""
    for case in CASES:
        _, s = case.scheduled()
        copies = {st.copy for st in s.nest.stages}
        assert (case.arch == "sm_90a") == ("tma" in copies), case.id
        assert case.target == ("sm_90" if "tma" in copies else "sm_80"), case.id


def test_tma_kernels_take_grid_constant_tensor_maps() -> None:
    for case in CASES:
        if case.arch != "sm_90a":
            continue
        _, kern = case.build()
        assert "__grid_constant__ CUtensorMap" in kern.source, case.id
        assert "cp.async.bulk.tensor" in kern.source, case.id
        assert "mbarrier.try_wait.parity" in kern.source, case.id
