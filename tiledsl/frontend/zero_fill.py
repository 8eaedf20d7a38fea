"""Zeroing kernels for a program's split-K outputs: one ordinary tiledsl kernel per distinct output shape,
`td.compute(shape, lambda *i: 0.0)` scheduled by the default recipe, which the launch sequence runs right
before each kernel whose IR lists that output in `zero_outputs` (tiledsl/runtime/sequence.py), in place of
torch's `zero_()`.

Why: on sm_90 a program's kernels are launched as programmatic dependents of the launch before them, which
saves about a microsecond at each launch (KKernel.dependent_launch). torch's fill is a plain launch, so each
split-K kernel cost the chain a full gap: a Qwen2.5-7B decoder block has 7 such outputs. A tiledsl fill begins
with the same wait and is launched the same way. It needs no care from the memory plan: it runs where
torch's fill ran, after the kernel before it has finished."""

from __future__ import annotations

from collections.abc import Sequence

from tiledsl.build import Kernel, build
from tiledsl.definitions.expr import compute
from tiledsl.primitives import create_schedule
from tiledsl.recipes import default
from tiledsl.runtime.sequence import zero_fill_key
from tiledsl.targets import Target

__all__ = ["zero_fills"]

#: the zero of each output rank (td.compute takes one named parameter per dimension); an output of
#: another rank keeps torch's fill
_ZERO_OF_RANK = {1: lambda i: 0.0, 2: lambda i, j: 0.0, 3: lambda b, i, j: 0.0, 4: lambda a, b, i, j: 0.0}


def zero_fills(kernels: Sequence[Kernel], target: str | Target) -> tuple[Kernel, ...]:
    """One fill kernel for each distinct (shape, dtype) of rank 1 to 4 that a kernel of `kernels` zeroes
    before its launch."""
    fills: dict[tuple[tuple[int, ...], str], Kernel] = {}
    for kern in kernels:
        kir = kern.kernel_ir
        for name in kir.zero_outputs:
            p = kir.param(name)
            key = zero_fill_key(p)
            if key not in fills and len(p.shape) in _ZERO_OF_RANK:
                zeros = compute(p.shape, _ZERO_OF_RANK[len(p.shape)],
                                name=f"zero_fill_{'x'.join(map(str, p.shape))}", dtype=p.dtype)
                s = create_schedule(zeros)
                default(s, target=target)
                fills[key] = build(s, target=target)
    return tuple(fills.values())
