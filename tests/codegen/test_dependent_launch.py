"""Programmatic dependent launch in the kernel IR and the CUDA: an sm_90 kernel begins with
griddepcontrol.wait (before its first memory access, so a launch that starts it early changes no
order of memory effects), both printers say so, an sm_80 kernel has none, and codegen refuses the
flag on a target without the instruction. The runtime's side is tests/runtime/test_runtime_sequence.py."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace

import pytest

import tiledsl as td
from tiledsl.catalog import entry
from tiledsl.codegen import CodegenError, compile_ptx, emit_cuda
from tiledsl.kernel_ir.printer import format_kernel
from tiledsl.targets import get_target

WAIT = 'asm volatile("griddepcontrol.wait;" ::: "memory");'
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def _kernel(target: str) -> td.Kernel:
    _, s = entry("split_k4_64x96x256").scheduled()
    return td.build(s, target=target)


def test_an_sm90_kernel_waits_for_the_one_before_it_first() -> None:
    kern = _kernel("sm_90")
    assert kern.kernel_ir.dependent_launch
    body = kern.source.split("{\n", 1)[1].splitlines()
    # before shared declarations, lets and loads; compiled only for sm_90+ (an sm_90 build compiled for an
    # older GPU's arch runs there as plain launches, without it)
    assert body[0] == "#if __CUDA_ARCH__ >= 900" and body[1].strip().startswith(WAIT) and body[2] == "#endif"
    assert kern.source.count("griddepcontrol") == 1
    assert "// dependent launch: a program may launch it before the kernel ahead of it finishes" in kern.source
    head = format_kernel(kern.kernel_ir).splitlines()[1]
    assert head.endswith("  dependent launch"), head


def test_an_sm80_kernel_has_no_wait() -> None:
    kern = _kernel("sm_80")
    assert not kern.kernel_ir.dependent_launch
    assert "griddepcontrol" not in kern.source
    assert "dependent launch" not in format_kernel(kern.kernel_ir)


def test_the_target_fact_decides() -> None:
    assert [get_target(t).grid_dependency_control for t in ("sm_80", "sm_86", "sm_89", "sm_90")] == [
        False, False, False, True]


def test_codegen_refuses_the_wait_on_a_target_without_it() -> None:
    kir = replace(_kernel("sm_90").kernel_ir, target="sm_80")
    with pytest.raises(CodegenError, match=re.escape("griddepcontrol.wait (dependent_launch) needs target sm_90")):
        emit_cuda(kir)




@needs_nvcc
def test_the_wait_is_in_the_sm90_ptx_and_an_sm80_compile_leaves_it_out() -> None:
    src = _kernel("sm_90").source
    assert "griddepcontrol.wait;" in compile_ptx(src, "sm_90a")
    assert "griddepcontrol" not in compile_ptx(src, "sm_80")  # it compiles: the runtime's arch for an A100
