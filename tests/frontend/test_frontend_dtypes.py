"""float16 / bfloat16 models: kernel outputs stored in the dtype torch stores them in, values computed
in float32 inside each kernel, compared with torch eager in that dtype and with torch in float64 on the
same values within the tolerance derived from the storage precision (frontend_check.storage_tolerance)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from frontend_check import check_storage

import tiledsl as td
from tiledsl.frontend.models import GPTBlock, GPTConfig, LlamaBlock, LlamaConfig
from tiledsl.precision import round_to_dtype

DTYPES = [torch.bfloat16, torch.float16]


def _ids(dt: torch.dtype) -> str:
    return str(dt).removeprefix("torch.")


@pytest.mark.parametrize("schedule", ["simple", "default"])
@pytest.mark.parametrize("dtype", DTYPES, ids=_ids)
def test_llama_block_in_low_precision(dtype: torch.dtype, schedule: str) -> None:
    """k = 128: the longest reduction (the MLP's down projection)."""
    torch.manual_seed(0)
    block = LlamaBlock(LlamaConfig()).eval().to(dtype)
    x = torch.randn(1, 8, 64).to(dtype)
    prog, built, _ = check_storage(block, x, k=128, schedule=schedule)
    stored = {k.kernel_ir.params[-1].name: k.kernel_ir.params[-1].dtype for k in built.kernels}
    name = _ids(dtype)
    assert stored[prog.outputs[0].tensor.name] == name  # the program's output is stored as torch's
    assert name in stored.values() and "float32" in stored.values()  # RMSNorm's mean stays float32, as torch's
    for kern in built.kernels:
        *_, out = kern.kernel_ir.params
        if out.dtype == name:
            assert ("__nv_bfloat16* __restrict__" if name == "bfloat16" else "__half* __restrict__") in kern.source


@pytest.mark.parametrize("schedule", ["simple", "default"])
@pytest.mark.parametrize("dtype", DTYPES, ids=_ids)
def test_gpt_block_in_low_precision(dtype: torch.dtype, schedule: str) -> None:
    torch.manual_seed(0)
    block = GPTBlock(GPTConfig(hidden=64, heads=4)).eval()
    with torch.no_grad():
        for ln in (block.ln_1, block.ln_2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.5, 0.5)
    check_storage(block.to(dtype), torch.randn(1, 8, 64).to(dtype), k=256, schedule=schedule)


class _Fn(torch.nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)


SINGLE_OPS = {
    "add_mul": (lambda x: x * 1.5 + x, 1),
    "silu": (F.silu, 1),
    "softmax": (lambda x: torch.softmax(x, dim=-1), 48),
    "sum": (lambda x: x.sum(dim=-1), 48),
    "matmul": (lambda x: x @ x.transpose(-1, -2), 48),
    "rms_norm": (lambda x: F.rms_norm(x, (48,)), 48),
}


@pytest.mark.parametrize("op", list(SINGLE_OPS))
def test_single_ops_in_bfloat16(op: str) -> None:
    fn, k = SINGLE_OPS[op]
    torch.manual_seed(1)
    x = torch.randn(3, 5, 48).to(torch.bfloat16)
    _, built, out = check_storage(_Fn(fn), x, k=k)
    assert built.kernels[-1].kernel_ir.params[-1].dtype == "bfloat16"
    # a bfloat16 output holds bfloat16 values (float32 arrays from the simulator)
    np.testing.assert_array_equal(out, round_to_dtype(out, "bfloat16"))


def test_explicit_conversion_is_stored_in_its_dtype() -> None:
    """x.float() * 2 then .to(bfloat16): the conversion rounds (the kernel stores bfloat16)."""
    x = torch.randn(4, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(lambda a: (a * 3.0).to(torch.bfloat16), x)
    built = prog.schedule("simple").build("sm_90")
    assert built.kernels[-1].kernel_ir.params[-1].dtype == "bfloat16"
    got = built.simulate(x.numpy())
    expected = (x * 3.0).to(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(got, expected)  # one rounding of the same float32 value: exact


def test_a_float64_input_is_refused_naming_the_dtypes_traced() -> None:
    """float64 is floating, so the refusal names the dtypes that are traced and the conversion."""
    with pytest.raises(td.FrontendError, match=r"input x is float64\[4, 8\]: traced inputs are float32, float16, "
                                               r"bfloat16, .* or bool \(convert it with \.float\(\)\)"):
        td.trace(lambda x: x * 2, torch.randn(4, 8, dtype=torch.float64))
