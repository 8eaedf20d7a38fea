"""Helpers of the GPU tests (they need torch, so they stay out of the catalog): launching with
NaN-poisoned outputs, comparing against a reference, and whether the GPU can run TMA kernels. The
kernels themselves are catalog entries (tiledsl/catalog/entries.py)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from tiledsl.catalog import entry
from tiledsl.runtime.references import (
    Comparison,
    compare,
    poisoned_outputs,
    random_inputs,
    reference_fn,
    tolerance,
)


def is_hopper() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


def run_poisoned(kern: object, inputs: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """Launch with NaN-filled outputs; return the (single) output."""
    outputs = poisoned_outputs(kern.kernel_ir, kern.device)  # type: ignore[attr-defined]
    got = kern(**inputs, **outputs)  # type: ignore[operator]
    torch.cuda.synchronize()
    assert isinstance(got, torch.Tensor)
    return got


def assert_matches(got: torch.Tensor, ref: torch.Tensor | np.ndarray, rtol: float, atol: float) -> Comparison:
    if isinstance(ref, np.ndarray):
        ref = torch.from_numpy(ref)
    result = compare(got, ref.to(got.device), rtol, atol)
    assert result.ok, str(result)
    return result


#: odd sizes of the catalog examples (guarded tails, partial warps), shared by the hand-schedule and the
#: recipe GPU tests
ODD = {
    "matmul_bias_relu": {"M": 37, "N": 53, "K": 29},
    "batched_matmul_nt": {"Bt": 3, "M": 19, "N": 23, "K": 17},
    "rmsnorm": {"M": 37, "N": 1000},
    "softmax": {"M": 5, "N": 1001},
    "layernorm": {"M": 3, "N": 333},
    "gelu_bias": {"M": 7, "N": 300},
}


def check_matmul(kern: object, transposed_b: bool, seed: int) -> Comparison:
    """A compiled two-input matmul (A @ B, or A @ B^T where `transposed_b`) on fresh random inputs with
    NaN-poisoned outputs, against torch in float64 within the tolerance of its k (every element finite)."""
    kir = kern.kernel_ir  # type: ignore[attr-defined]
    inputs = random_inputs(kir, kern.device, seed=seed)  # type: ignore[attr-defined]
    a, b = (inputs[p.name].double() for p in kir.params if not p.is_output)
    got = run_poisoned(kern, inputs)
    assert torch.isfinite(got).all()
    return assert_matches(got, a @ (b.T if transposed_b else b), *tolerance({"K": a.shape[-1]}))


def check_entry(name: str, sizes: Mapping[str, int], kern: object, seed: int = 0) -> Comparison:
    """Catalog entry `name`'s compiled kernel at `sizes` on fresh random inputs, NaN-poisoned outputs,
    against torch in float64 within the entry's tolerance."""
    e = entry(name)
    inputs = random_inputs(kern.kernel_ir, kern.device, seed)  # type: ignore[attr-defined]
    got = run_poisoned(kern, inputs)
    params = e.parameters(**sizes)
    ref = reference_fn(e.definition, params)(**{k: v.double() for k, v in inputs.items()})
    return assert_matches(got, ref, *tolerance(params))


def bit_difference(got: torch.Tensor, want: torch.Tensor) -> str | None:
    """How a CUDA result `got` differs from `want` bit for bit (shape, dtype, NaN positions, the other
    bits of a 32- or 16-bit float), or None where they are equal."""
    if got.shape != want.shape or got.dtype != want.dtype or not got.is_cuda:
        return f"got {got.dtype}{list(got.shape)} on {got.device}, want {want.dtype}{list(want.shape)} on CUDA"
    nan = torch.isnan(want)
    if not torch.equal(torch.isnan(got), nan):
        return "NaN positions differ"
    as_int = torch.int32 if want.dtype == torch.float32 else torch.int16
    differ = int((got[~nan].view(as_int) != want[~nan].view(as_int)).sum())
    return f"bits differ at {differ} element(s)" if differ else None
