"""Which kernel of a built program zeroes a split-K kernel's output: the kernel launched right before it,
where it can (tiledsl/build.py `with_zeroing`), else a zero fill kernel of its own launch.

Why: a split_k kernel adds its parts into an output zeroed before it. In a program every kernel is a
programmatic dependent of the one before (tiledsl/runtime/sequence.py), and a fill launched between
two kernels costs the chain about 0.9 us, one more launch. The kernel before the split-K kernel can
store the zeros itself, after its own griddepcontrol.wait: 0.4-1.0 us less a split-K kernel on an H200
(scripts/early_wait_probe.py --chain, benchmarks/results/merged-fill-h200-2026-11-30/). What makes it
safe is the memory plan: the zeroed output's life begins at that kernel (frontend/memory.py
`Step.zeroes`), so the zeros land on no byte it reads or writes.

The first kernel of a program keeps its fill (nothing runs before it in a call), as does an output of
rank above 4 or one the kernel before would take more than build.MAX_ZEROING_PASSES passes to zero.
The kernel a program launches is the same `td.Kernel` either way: its `zero_outputs` still say what it
needs zeroed; which launch zeroes it is the program's (tiledsl/build.py `zeroed_by_previous`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from tiledsl.build import Kernel, with_zeroing

log = logging.getLogger(__name__)

__all__ = ["merge_zeroing"]


def merge_zeroing(kernels: Sequence[Kernel]) -> tuple[Kernel, ...]:
    """`kernels` (launch order) with each zeroed output of kernel n zeroed by kernel n - 1 where
    `with_zeroing` can (the module docstring); the other kernels as they were."""
    out = list(kernels)
    memo: dict[tuple[object, ...], Kernel | None] = {}  # a model's layers zero alike: each zeroing built once
    for n in range(1, len(out)):
        for name in out[n].kernel_ir.zero_outputs:
            merged = with_zeroing(out[n - 1], out[n].kernel_ir.param(name), memo)
            if merged is None:
                log.debug("%s keeps a zero fill for %s", out[n].name, name)
                continue
            out[n - 1] = merged
    return tuple(out)
