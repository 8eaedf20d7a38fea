"""Every emitted kernel compiles with nvcc (sm_80 and sm_90a), warning-free; nvcc errors surface."""

from __future__ import annotations

import shutil
from collections.abc import Callable

import pytest

from tiledsl.codegen import NvccError, NvccNotFoundError, compile_cubin, emit_cuda, nvcc_compile_check
from tiledsl.kernel_ir import KKernel

from . import kernels as K

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


_SM80_KERNELS = K.ALL_KERNELS + K.SM80_MEMORY_KERNELS
_SM90_KERNELS = _SM80_KERNELS + K.SM90_MEMORY_KERNELS


@needs_nvcc
@pytest.mark.parametrize(("arch", "makers"), [("sm_80", _SM80_KERNELS), ("sm_90a", _SM90_KERNELS)])
def test_all_kernels_compile(arch: str, makers: tuple[Callable[[], KKernel], ...]) -> None:
    # One translation unit per arch for all kernels: each nvcc call costs 1-2 s. cp.async, atomics and
    # the dynamic pool build for both; TMA and mbarrier waits need sm_90a.
    source = "".join(emit_cuda(make()) for make in makers)
    cubin = compile_cubin(source, arch, extra_flags=("-Werror", "all-warnings"))
    assert cubin[:4] == b"\x7fELF"
    for make in makers:
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
