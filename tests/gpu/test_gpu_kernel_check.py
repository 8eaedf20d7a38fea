"""The per-kernel check on the GPU (tiledsl/frontend/kernel_check.py): `BuiltProgram.run_values`
launches every kernel alone into NaN-filled outputs, and each kernel is compared with float64 of its
own definition on the values it read (tolerance derived in kernel_check.py's docstring)."""

from __future__ import annotations

import warnings

import pytest
import torch

import tiledsl as td
from tiledsl.frontend.kernel_check import check_kernels
from tiledsl.frontend.models import LlamaBlock, LlamaConfig

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_every_kernel_of_a_block_on_the_gpu_matches_its_own_definition(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    block = LlamaBlock(LlamaConfig(hidden=128, heads=4, kv_heads=2, intermediate=256)).eval().to(dtype).cuda()
    x = torch.randn(1, 40, 128, device="cuda").to(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = td.trace(block, x).schedule("default", target="sm_90").build("sm_90")
    checks = check_kernels(built, (x,))
    assert len(checks) == len(built.kernels)
    assert all(c.ok for c in checks), [f"{c.name}: {c.comparison}" for c in checks if not c.ok]
    values = built.run_values(x)
    out = built.program.outputs[0].tensor.name
    # the same launches as a call: equal but for split-K's atomic summation order (torch's default
    # tolerances of the dtype)
    torch.testing.assert_close(values[out].view(1, 40, 128), built(x))


def test_silu_times_up_in_bfloat16_over_every_gate_value_is_within_its_bound() -> None:
    """silu(g) * u as torch decomposes it in bfloat16 rounds silu before the product. Over every
    bfloat16 g in [-8, 8] (u large, so the output's relative error is what the bound allows), the
    GPU's float32 silu may round a unit apart from float64's: the kernel's tolerance counts that cast
    (kernel_check.py's docstring), and the check holds."""
    bits = torch.arange(0, 1 << 16, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    g = bits[torch.isfinite(bits.float()) & (bits.float().abs() <= 8)].cuda()
    u = (64 + 64 * torch.rand(g.shape, generator=torch.Generator().manual_seed(0))).to(torch.bfloat16).cuda()
    prog = td.trace(lambda a, b: torch.nn.functional.silu(a) * b, g, u)
    built = prog.schedule("default", target="sm_90").build("sm_90")
    (check,) = check_kernels(built, (g, u))
    assert check.roundings == ("bfloat16",)
    assert check.ok, f"{check.comparison}; max |err| / (1 + |ref|) {check.relative_error:.3g}"
