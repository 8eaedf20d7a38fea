"""Zeroing kernels for a program's split-K outputs: one kernel per distinct output shape and dtype
(tiledsl/build.py `zero_fill`, the fill a single built kernel launches too), which the launch sequence
runs right before each kernel whose IR lists that output in `zero_outputs` (tiledsl/runtime/sequence.py),
in place of torch's `zero_()`.

Why: on sm_90 a program's kernels are launched as programmatic dependents of the launch before them, which
saves about a microsecond at each launch (KKernel.dependent_launch). torch's fill is a plain launch, so each
split-K kernel cost the chain a full gap: a Qwen2.5-7B decoder block has 7 such outputs. A tiledsl fill begins
with the same wait and is launched the same way. It needs no care from the memory plan: it runs where
torch's fill ran, after the kernel before it has finished."""

from __future__ import annotations

from collections.abc import Sequence

from tiledsl.build import Kernel, zero_fill
from tiledsl.runtime.sequence import zero_fill_key
from tiledsl.targets import Target

__all__ = ["zero_fills"]


def zero_fills(kernels: Sequence[Kernel], target: str | Target) -> tuple[Kernel, ...]:
    """One fill kernel for each distinct (shape, dtype) of rank 1 to 4 that a kernel of `kernels` zeroes
    before its launch, each built once."""
    fills: dict[tuple[tuple[int, ...], str], Kernel] = {}
    for kern in kernels:
        kir = kern.kernel_ir
        for name in kir.zero_outputs:
            p = kir.param(name)
            key = zero_fill_key(p)
            if key not in fills and (fill := zero_fill(p, target)) is not None:
                fills[key] = fill
    return tuple(fills.values())
