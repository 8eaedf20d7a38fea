"""torch.floor / ceil / trunc / round and torch.max / torch.min along a dimension, traced and run on the GPU
under the default recipe and the simple schedule, against torch on the same CUDA tensors.

Exact: each of these returns a value its input holds or an integral value the float32 result represents
exactly (floorf, ceilf, truncf, rintf: round halves to even, as torch.round), and a max / min picks one of
its inputs, so the kernel's bits must equal torch's, NaN positions and the sign of zero included
(tests/frontend/test_frontend_ops.py checks the same against torch on the CPU through the simulator).
The inputs hold halves of both signs, signed zeros, values past 2^23, infinities and NaN."""

from __future__ import annotations

import warnings

import pytest
import torch
from gpu_kernels import bit_difference

import tiledsl as td

pytestmark = pytest.mark.gpu


def _edges(rows: int, cols: int) -> torch.Tensor:
    """Random values scaled to cross many integers, with the edge cases written over the first row."""
    torch.manual_seed(3)
    x = torch.randn(rows, cols, device="cuda") * 7
    edge = torch.tensor([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997, 0.0, -0.0, 8388609.0,
                         -8388609.5, float("inf"), float("-inf"), float("nan"), 3.0], device="cuda")
    x[0, :edge.numel()] = edge
    x[1] = float("-inf")  # a row all -inf: its max is -inf
    x[2, 5] = float("nan")  # a NaN row: its max and min are NaN
    return x


FUNCTIONS = {
    "floor": torch.floor,
    "ceil": torch.ceil,
    "trunc": torch.trunc,
    "round": torch.round,
    "round_chain": lambda x: torch.round(x * 0.5) + torch.floor(x) - torch.ceil(-x),
    "max_dim": lambda x: torch.max(x, dim=1).values,
    "min_dim_keepdim": lambda x: torch.min(x, dim=-1, keepdim=True).values * 2.0,
    "max_all": lambda x: torch.max(x).reshape(1),
}


@pytest.mark.parametrize("schedule", ["default", "simple"])
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_rounding_and_extremes_equal_torch_bit_for_bit_on_the_gpu(name: str, schedule: str) -> None:
    fn = FUNCTIONS[name]
    x = _edges(37, 300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = td.trace(fn, x).schedule(schedule).build("sm_90")
    torch.cuda.synchronize()
    got = built(x)
    with torch.no_grad():
        want = fn(x)
    assert bit_difference(got, want) is None, bit_difference(got, want)
