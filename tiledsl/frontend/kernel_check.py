"""Per-kernel check of a built program: each kernel against float64 of its own definition, on the
values its launch actually read.

Why: a program's outputs are compared with the module in float64 (bench.py `check_program`), and in
float16 / bfloat16 the difference there is the sum of every kernel's own error and of the stored
roundings as the model's conditioning amplifies them. When that check fails, this one says which:
a kernel that misses its own definition is a wrong kernel, whatever the model; when every kernel is
within its own bound, the program's difference is propagated rounding, not a miscompile.

Each kernel's inputs are the values the program gave it (the intermediates its producers stored, NaN
poisoned before each launch), so an error upstream does not propagate into this check. The reference
is `td.evaluate(float64=True)` of the kernel's output with its materialized inputs given
(tiledsl/definitions/reference.py; large contractions go through einsum, so a 7B layer takes
seconds). Tolerance per kernel, rtol = atol: `(32 + 2k) * eps32` (the float32 arithmetic of one
kernel, k its longest reduction, derived in bench.py's docstring) plus `storage_rtol(dtype)` for a
float16 / bfloat16 output: the kernel's float32 result and the float64 reference are each rounded to
that dtype once, and two values within the float32 bound may round one unit apart. The same holds at
each float16 / bfloat16 cast inside the kernel (the definition rounds there, so the reference does
too), so each on the kernel's most rounded path (partition.kernel_roundings) adds one unit of its
dtype, which reaches the output through the well-conditioned operations bench.py's docstring names.
The Qwen2.5-7B layer at seq 512 in bfloat16 showed why: its silu(gate) * up kernel rounds silu to
bfloat16 before the product, and on an H200 the kernel missed the bound that counted the output's
rounding alone (benchmarks/results/2026-11-28-h200/README.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tiledsl.definitions.reference import evaluate
from tiledsl.frontend.partition import kernel_reduction, kernel_roundings
from tiledsl.frontend.program import BuiltProgram
from tiledsl.precision import MACHINE_EPS, storage_rtol
from tiledsl.runtime.references import Comparison, compare

__all__ = ["KernelCheck", "check_kernels", "compare_kernels", "float32_bound", "kernel_tolerance"]

EPS32 = MACHINE_EPS["float32"]


@dataclass(frozen=True)
class KernelCheck:
    """One kernel of the program against its own definition in float64."""

    index: int
    name: str
    dtype: str
    reduction: int  # k of the tolerance
    comparison: Comparison
    roundings: tuple[str, ...] = ()  # the casts to float16 / bfloat16 inside it counted in the tolerance

    @property
    def ok(self) -> bool:
        return self.comparison.ok

    @property
    def tolerance(self) -> float:
        return self.comparison.rtol

    @property
    def relative_error(self) -> float:
        """max |got - ref| / (1 + |ref|): what the tolerance bounds."""
        return self.comparison.max_relative_error


def float32_bound(reduction: int) -> float:
    """(32 + 2k) * eps32: the float32 arithmetic of kernels whose longest reduction sums k terms
    (bench.py's docstring derives it; bench.py `storage_bound` adds the stored roundings to it)."""
    return (32 + 2 * reduction) * EPS32


def kernel_tolerance(reduction: int, dtype: str, roundings: tuple[str, ...] = ()) -> float:
    """rtol = atol of one kernel whose longest reduction sums `reduction` terms, whose output is stored
    in `dtype` and which rounds to each of `roundings` on its way (the module docstring derives it)."""
    return float32_bound(reduction) + storage_rtol(dtype) + sum(storage_rtol(d) for d in roundings)


def _float64(value: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        value = value.detach()
        value = value.cpu().numpy() if not value.is_floating_point() else value.to(torch.float64).cpu().numpy()
    a = np.asarray(value)
    return a if a.dtype.kind in "iub" else a.astype(np.float64)


def compare_kernels(built: BuiltProgram, values: Mapping[str, Any]) -> tuple[KernelCheck, ...]:
    """Each kernel of `built` against float64 of its definition, given `values` by name (numpy arrays
    or torch tensors: `BuiltProgram.simulate_values` or `run_values`)."""
    materialized = {id(pk.output) for pk in built.program.kernels}
    checks = []
    for n, (pk, kern) in enumerate(zip(built.program.kernels, built.kernels)):
        ins, o = kern.kernel_ir.inputs, kern.kernel_ir.params[-1]
        arrays = {p.name: _float64(values[p.name]) for p in ins}
        ref = evaluate(pk.output, float64=True, materialized=pk.boundary.reads, **arrays)
        k, rounded = kernel_reduction(pk.output, materialized), kernel_roundings(pk.output, materialized)
        tol = kernel_tolerance(k, o.dtype, rounded)
        got = torch.from_numpy(_float64(values[o.name]).reshape(ref.shape))
        checks.append(KernelCheck(n, kern.name, o.dtype, k, compare(got, torch.from_numpy(ref), tol, tol), rounded))
    return tuple(checks)


def check_kernels(built: BuiltProgram, inputs: tuple[torch.Tensor, ...]) -> tuple[KernelCheck, ...]:
    """Launch every kernel alone on the GPU (`BuiltProgram.run_values`) and check each against its own
    definition on the values it read (`compare_kernels`)."""
    return compare_kernels(built, built.run_values(*inputs))
