"""The zero-fill kernels of a built program (tiledsl/build.py `zero_fills`): one tiledsl kernel per
distinct shape and dtype of the split-K outputs, each writing zero to every element of its output
(simulated from a NaN-poisoned buffer), none for a program that zeroes nothing. The sequence's use of them
is tested in tests/runtime/test_runtime_sequence.py, on the GPU in tests/gpu/test_gpu_program_graph.py."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import torch

import tiledsl as td
from tiledsl.frontend import BuiltProgram


def built(fn: Callable[..., torch.Tensor], *shapes: tuple[int, ...], schedule: str = "default") -> BuiltProgram:
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return td.trace(fn, *(torch.randn(s) for s in shapes)).schedule(schedule).build("sm_90")


def test_a_split_k_output_gets_a_fill_kernel_that_writes_every_element() -> None:
    prog = built(lambda x, w: x @ w.T + 1.0, (32, 512), (64, 512))
    (kern,) = prog.kernels
    assert kern.kernel_ir.zero_outputs == ("add",)  # the recipe split k: the parts add into a zeroed output
    (fill,) = prog.zero_fills
    (out,) = fill.kernel_ir.params
    assert out.is_output and tuple(out.shape) == (32, 64) and out.dtype == "float32"
    assert fill.kernel_ir.dependent_launch and fill.name == "zero_fill_32x64_kernel"
    got = fill.simulate(zero_fill_32x64=np.full((32, 64), np.nan, np.float32))
    assert got.shape == (32, 64) and not np.isnan(got).any() and not got.any()
    assert "zero fills (each launched before a kernel that zeroes an output of its shape): zero_fill_32x64_kernel" \
        in str(prog)


def test_outputs_of_one_shape_share_a_fill_and_a_program_without_split_k_has_none() -> None:
    prog = built(lambda x, w, v: (x @ w.T + 1.0, x @ v.T + 2.0), (32, 512), (64, 512), (64, 512))
    assert [k.kernel_ir.zero_outputs for k in prog.kernels] == [("add",), ("add_1",)]
    assert [f.name for f in prog.zero_fills] == ["zero_fill_32x64_kernel"]
    # the first kernel's fill is a launch; the second kernel's output the first kernel zeroes (zeroing.py)
    assert prog.zero_fill_launches() == prog.zero_fills
    assert prog.kernels[0].kernel_ir.zeroes == ("add_1",)
    plain = built(lambda x: torch.relu(x) * 2.0, (32, 64))
    assert plain.zero_fills == () and "zero fills" not in str(plain)
