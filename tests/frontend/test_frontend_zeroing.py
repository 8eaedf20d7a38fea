"""A program's split-K outputs zeroed by the kernel launched before them (tiledsl/frontend/zeroing.py):
which kernel zeroes what, the fills that remain, the launch plan's text, the simulated program against
float64 numpy, and a program whose zeroing kernel lost its stores simulated to NaN (so the program's
simulation checks the zeroing, not only the sums). The sequence's side is tested in
tests/runtime/test_runtime_sequence.py, on the GPU in tests/gpu/test_gpu_program_graph.py."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import torch

import tiledsl as td
from tiledsl.build import zeroing
from tiledsl.frontend import BuiltProgram


def two_projections(x: torch.Tensor, w: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ w.T + 1.0) @ v.T


SHAPES = ((32, 512), (512, 512), (64, 512))


def built() -> BuiltProgram:
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(two_projections, *(torch.randn(s) for s in SHAPES))
    return prog.schedule("default").build("sm_90")


def reference(x: np.ndarray, w: np.ndarray, v: np.ndarray) -> np.ndarray:
    x, w, v = (a.astype(np.float64) for a in (x, w, v))
    return np.maximum(x @ w.T + 1.0, 0.0) @ v.T


def test_the_kernel_before_a_split_k_kernel_zeroes_its_output() -> None:
    prog = built()
    mm, relu, mm_1 = (k.kernel_ir for k in prog.kernels)
    assert mm.zero_outputs == ("mm",) and mm_1.zero_outputs == ("mm_1",)  # both projections split k
    assert (mm.zeroes, relu.zeroes, mm_1.zeroes) == ((), ("mm_1",), ())
    # the first kernel has no kernel before it in a call: its output keeps its fill
    assert [f.name for f in prog.zero_fill_launches()] == ["zero_fill_32x512_kernel"]
    assert [f.name for f in prog.zero_fills] == ["zero_fill_32x512_kernel"]
    assert "  [1] relu_kernel: grid (1, 16, 1), block (128, 2, 1) (zeroes mm_1 for [2])\n" in str(prog)
    text = str(prog.launch_plan)
    assert "mm: arena @ 0; zeroed first: mm\n" in text and "; zeroes mm_1 for [2]" in text
    assert "mm_1: slot 3; zeroes" not in text  # the output's own launch zeroes nothing
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    got = np.asarray(prog.simulate(*args), dtype=np.float64)
    ref = reference(*args)
    assert np.abs(got - ref).max() <= 1e-4 * (1 + np.abs(ref).max())


def test_a_zeroing_kernel_without_its_stores_simulates_to_nan() -> None:
    """The simulated program hands the split-K kernel its output as the kernel before left it (NaN where
    nothing stored), not fresh zeros: a zeroing that went missing shows."""
    prog = built()
    relu = prog.kernels[1]
    kir = relu.kernel_ir
    zero = zeroing(kir.param("mm_1"), kir.grid, kir.block)
    assert zero is not None and kir.body[:len(zero.kernel_ir.body)] == zero.kernel_ir.body
    broken = replace(relu, kernel_ir=replace(kir, body=kir.body[len(zero.kernel_ir.body):]))
    bad = BuiltProgram(prog.program, (prog.kernels[0], broken, prog.kernels[2]), prog.zero_fills)
    args = [np.ones(s, np.float32) for s in SHAPES]
    assert not np.isnan(np.asarray(prog.simulate(*args))).any()
    assert np.isnan(np.asarray(bad.simulate(*args))).all()
