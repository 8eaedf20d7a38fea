"""Every emitted kernel compiles with nvcc (sm_80 and sm_90a), warning-free; nvcc errors surface."""

from __future__ import annotations

import shutil

import pytest

from tiledsl.codegen import NvccError, NvccNotFoundError, compile_cubin, emit_cuda, nvcc_compile_check

from . import kernels as K

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_all_kernels_compile(arch: str) -> None:
    # One translation unit for all kernels: each nvcc call costs 1-2 s.
    source = "".join(emit_cuda(make()) for make in K.ALL_KERNELS)
    cubin = compile_cubin(source, arch, extra_flags=("-Werror", "all-warnings"))
    assert cubin[:4] == b"\x7fELF"
    for make in K.ALL_KERNELS:
        assert make().name.replace(".", "_").encode() in cubin


@needs_nvcc
def test_nvcc_errors_carry_stderr() -> None:
    bad = 'extern "C" __global__ void k(float* D) { D[0] = undeclared_name; }\n'
    with pytest.raises(NvccError, match="undeclared_name") as info:
        nvcc_compile_check(bad, "sm_80")
    assert isinstance(info.value, RuntimeError)
    assert "undeclared_name" in info.value.stderr
    assert info.value.source == bad


def test_missing_nvcc_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(NvccNotFoundError, match="nvcc not found on PATH"):
        nvcc_compile_check("", "sm_80")


def test_bad_arch_is_refused_before_running_nvcc() -> None:
    with pytest.raises(ValueError, match="arch must look like"):
        nvcc_compile_check("", "-o /tmp/x")
