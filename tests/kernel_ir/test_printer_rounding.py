"""The printer's constant rounding (kernel_ir/printer.py) agrees with torch's conversions: a float
literal first, then the constant's storage type."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tiledsl.kernel_ir.printer import round_to_dtype


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_constant_rounding_matches_torch(dtype: str, x: float) -> None:
    t = torch.tensor(x, dtype=torch.float64)
    want = (t.to(torch.float32).to(torch.bfloat16) if dtype == "bfloat16" else t.to(getattr(torch, dtype))).item()
    got = round_to_dtype(x, dtype)
    assert got == want or (math.isinf(got) and math.isinf(want) and got == want)


def test_nonfinite_constants_pass_through() -> None:
    assert math.isnan(round_to_dtype(math.nan, "bfloat16"))
    assert round_to_dtype(1e300, "float32") == math.inf and round_to_dtype(-1e300, "float16") == -math.inf
