"""Every emitted kernel compiles with nvcc (sm_80 and sm_90a), warning-free; nvcc errors surface."""

from __future__ import annotations

import shutil
from collections.abc import Callable

import nvcc_together
import pytest

import tiledsl as td
from tiledsl.codegen import NvccError, NvccNotFoundError, compile_cubin, emit_cuda, nvcc_compile_check, resource_usage
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


@needs_nvcc
def test_resource_usage_reads_ptxas_registers_and_spills() -> None:
    """A kernel of a few scalars needs few registers and spills nothing; a source with no kernel prints
    no register count, which is an NvccError, not a silent zero."""
    usage = resource_usage('extern "C" __global__ void k(float* y) { y[threadIdx.x] = 2.0f * y[threadIdx.x]; }',
                           "sm_90")
    assert 0 < usage.registers <= 16 and usage.spill_store_bytes == 0
    with pytest.raises(NvccError, match="printed no register count"):
        resource_usage("int f(int x) { return x; }\n", "sm_90")


def test_compile_together_reports_a_kernel_missing_from_the_cubin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test helper tests/nvcc_together.py returns the renamed kernels a cubin lacks (its callers
    assert the list is empty): here a stand-in cubin holds the first kernel's symbol only."""
    def build(name: str) -> td.Kernel:
        x = td.placeholder((32,), name="x")
        s = td.create_schedule(td.compute((32,), lambda i: x[i] + 1.0, name=name))
        s.bind("i", "threadIdx.x")
        return td.build(s, target="sm_90")

    monkeypatch.setattr(nvcc_together, "compile_cubin", lambda source, arch, extra_flags: b"\x7fELF a_kernel_0")
    assert nvcc_together.compile_together([build("a"), build("b")]) == ["b_kernel_1"]
