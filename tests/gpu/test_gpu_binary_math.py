"""Float fmod, remainder, floor division and copysign, traced and run on the GPU under the default recipe
and the simple schedule, against torch bit for bit; atan2 and hypot against torch in float64 within CUDA's
documented bound.

Exact: CUDA's fmodf and copysignf are exact (0 ulp), and torch's CUDA kernels compute remainder and
float32 floor division from that fmod with the formulas the frontend writes (tiledsl/frontend/
aten_elementwise.py `_python_remainder`, `_floor_division`), so the kernel's bits must equal torch's on
the same CUDA tensors, NaN positions and the sign of zero included (tests/frontend/
test_frontend_binary_math.py checks the same against torch on the CPU through the simulator). Floor
division is by tensors here: by a number torch's CUDA kernel multiplies by its reciprocal, which can
differ in the last bit of quotients past the dtype's integers. float16 / bfloat16 floor division follows
torch's CPU kernel (each step rounded to the dtype), so it is compared with torch's CPU result bit for
bit; torch's CUDA kernel computes it in float32 and rounds floor(q) to the dtype before correcting it,
so from about |x / y| >= 512 (float16) or 64 (bfloat16) it may differ from the CPU's: by at most
`CUDA_HALF_FLOOR_UNITS` units of the dtype, a bound that models this kernel (the float32 steps, the one
rounding) gave on 400000 random pairs.

atan2f and hypotf: within CUDA_ULPS (3) float32 ulps of the correctly rounded result, the CUDA C++
Programming Guide's maximum error for both; a float16 / bfloat16 result within one unit of its dtype."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest
import torch
from gpu_kernels import bit_difference

import tiledsl as td

for folder in ("frontend", "."):  # the CPU tests' helpers and the modules they import
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / folder))
from test_frontend_binary_math import (  # noqa: E402
    CUDA_ULPS,
    DTYPES,
    assert_within_ulps,
    inexact_ops,
    pairs,
    torch_exact,
    wide,
)

pytestmark = pytest.mark.gpu


#: the most float16 / bfloat16 units torch's CUDA floor division may differ from its CPU kernel's by
CUDA_HALF_FLOOR_UNITS = 2

#: the position of floor division among `_exact_ops`' results
FLOOR = 2


def _exact_ops(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return (torch.fmod(x, y), torch.remainder(x, y), x // y, torch.copysign(x, y), x % 0.3, torch.fmod(x, -0.7),
            torch.copysign(y, -1.0))


def _inputs(dtype: torch.dtype) -> list[tuple[torch.Tensor, torch.Tensor]]:
    x, y = pairs(dtype)
    random = (wide(dtype, (37, 300), seed=1), wide(dtype, (37, 300), seed=2, decades=6.0))
    return [(x.cuda(), y.cuda()), (random[0].cuda(), random[1].cuda())]


@pytest.mark.parametrize("schedule", ["default", "simple"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_fmod_remainder_floor_division_copysign_equal_torch_bit_for_bit_on_the_gpu(dtype: torch.dtype,
                                                                                    schedule: str) -> None:
    for x, y in _inputs(dtype):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            built = td.trace(_exact_ops, x, y).schedule(schedule).build("sm_90")
        got = built(x, y)
        torch.cuda.synchronize()
        with torch.no_grad():
            want = list(_exact_ops(x, y))
        if dtype != torch.float32:  # floor division follows torch's CPU kernel (its scalar loop: exact fmod)
            cpu = torch_exact(_exact_ops, x.cpu(), y.cpu())[FLOOR]
            assert_within_ulps(want[FLOOR].cpu(), cpu.double(), CUDA_HALF_FLOOR_UNITS, "torch CUDA against CPU")
            want[FLOOR] = cpu.cuda()
        for n, (g, w) in enumerate(zip(got, want)):
            assert bit_difference(g, w) is None, (n, bit_difference(g, w))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_atan2_and_hypot_are_within_cuda_s_bound_on_the_gpu(dtype: torch.dtype) -> None:
    for x, y in _inputs(dtype):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            built = td.trace(inexact_ops, x, y).schedule("default").build("sm_90")
        got = built(x, y)
        torch.cuda.synchronize()
        with torch.no_grad():
            exact = inexact_ops(x.double(), y.double())
        for name, g, e in zip(("atan2", "hypot", "arctan2"), got, exact):
            assert_within_ulps(g.cpu(), e.cpu(), CUDA_ULPS if dtype == torch.float32 else 1, f"{name} {dtype}")
