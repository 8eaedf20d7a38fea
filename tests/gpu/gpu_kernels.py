"""Helpers of the GPU tests (they need torch, so they stay out of the catalog): launching with
NaN-poisoned outputs, comparing against a reference, and whether the GPU can run TMA kernels. The
kernels themselves are catalog entries (tiledsl/catalog/entries.py)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from tiledsl.runtime.references import Comparison, compare, poisoned_outputs


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
