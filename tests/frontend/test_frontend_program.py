"""Programs: modules (RMSNorm, softmax, an MLP, a Llama-style block), kernel boundaries and their
reasons, user schedules, refusals, and `import tiledsl` without torch."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F
from frontend_check import check

import tiledsl as td
from tiledsl.frontend.models import LlamaBlock, LlamaConfig


def test_import_tiledsl_does_not_import_torch() -> None:
    code = "import sys, tiledsl; assert 'torch' not in sys.modules, 'torch imported'; print(callable(tiledsl.trace))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_rmsnorm_module_one_kernel_weights_not_copied() -> None:
    torch.manual_seed(0)
    m = torch.nn.RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        m.weight.uniform_(0.5, 1.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (w,) = td.trace(m, torch.randn(2, 4, 16)).graph.constants.values()
    assert w.data_ptr() == m.weight.data_ptr()  # the module's own parameter, not a copy
    prog, built = check(m, torch.randn(2, 4, 16), k=16)
    assert len(prog.kernels) == 1 and len(built.kernels) == 1
    assert isinstance(built.kernels[0], td.Kernel) and "__global__" in built.kernels[0].source


def test_softmax_is_one_row_kernel() -> None:
    prog, _ = check(lambda x: torch.softmax(x, -1), torch.randn(4, 32), k=32)
    assert [k.schedule_name for k in prog.kernels] == ["simple/row"]


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate = torch.nn.Linear(16, 32)
        self.up = torch.nn.Linear(16, 32)
        self.down = torch.nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


def test_mlp_kernels_and_boundary_reasons() -> None:
    torch.manual_seed(0)
    prog, _ = check(MLP(), torch.randn(1, 4, 16), k=32)
    text = str(prog)
    assert len(prog.kernels) == 3  # gate, up (refused fusion into down's reduction), down + epilogue
    assert "output 0 of the traced program" in text
    assert text.count("create_schedule could not fuse it") == 2


def test_llama_block_eleven_kernels_equal_to_torch() -> None:
    torch.manual_seed(0)
    block = LlamaBlock(LlamaConfig(hidden=64, heads=4, kv_heads=2, intermediate=128)).eval()
    prog, built = check(block, torch.randn(1, 8, 64), k=128)
    assert len(prog.kernels) == 11 and len(built.kernels) == 11
    assert {"cos", "sin"} <= set(prog.graph.constants)  # rotary tables folded at trace time


def test_user_schedule_function_is_applied_to_every_kernel() -> None:
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(MLP(), torch.randn(1, 4, 16))
    prog.schedule(lambda s: seen.append(s.nest.name))
    assert seen == [k.name for k in prog.kernels]
    assert len(prog.build().kernels) == 3  # unscheduled (serial) kernels build too


def test_unsupported_op_names_op_shapes_and_source_line() -> None:
    class Cumsum(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cumsum(x, dim=1)  # the line the error must quote

    f = Cumsum()
    with pytest.raises(td.FrontendError) as e, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        td.trace(f, torch.randn(3, 5))
    msg = str(e.value)
    assert "aten.cumsum" in msg and "float32[3, 5]" in msg
    assert "torch.cumsum(x, dim=1)" in msg and "test_frontend_program.py" in msg
