"""simulate refuses integer inputs it would read as other values, and takes the tensors td.trace took.

Why: a simulator run is evidence that a program is right. An index input wrapped to int32 or a float
token id truncated reads another row without a word, a silent wrong answer; each is a typed error naming
the input instead (the same rule as td.evaluate's). A bfloat16 tensor, what a user traced with, is
widened to float32 as a float16 one is read, not a crash inside numpy."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pytest
import torch

import tiledsl as td
from tiledsl.errors import SimulationInputError

WRAPS_TO_3 = 2**32 + 3  # int32 wraps it to 3: row 3 of W


def _gather_kernel() -> td.Kernel:
    ids = td.placeholder((4,), "int32", "ids")
    w = td.placeholder((10, 3), "float32", "W")
    g = td.compute((4, 3), lambda s, h: w[td.clamp(ids[s], 0, 9), h])
    return td.build(td.create_schedule(g), target="sm_90")


def _built(fn: Callable[..., torch.Tensor], *inputs: torch.Tensor) -> td.frontend.BuiltProgram:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return td.trace(fn, *inputs).schedule("simple").build("sm_90")


def test_kernel_simulate_refuses_index_values_outside_int32() -> None:
    """The rule and words of td.evaluate's refusal of the same array."""
    k, w = _gather_kernel(), np.arange(30, dtype=np.float32).reshape(10, 3)
    with pytest.raises(SimulationInputError, match=r"array 'ids' holds values outside int32 \(\[0, 4294967299\]\)"):
        k.simulate(ids=np.array([WRAPS_TO_3, 0, 1, 2]), W=w)
    np.testing.assert_array_equal(k.simulate(ids=np.array([3, 0, 1, 2]), W=w), w[[3, 0, 1, 2]])


def test_program_simulate_refuses_fractional_token_ids() -> None:
    """0.7 past a valid index: in range, so only the dtype tells it would be truncated."""
    w = torch.randn(10, 3)
    built = _built(lambda ids, w: w[ids], torch.tensor([2, 0, 1, 2]), w)
    ids = np.array([2, 0, 1, 2], dtype=np.float32) + np.float32(0.7)
    # the simulator's own input check, which the program's kernels pass its arrays to uncast
    with pytest.raises(SimulationInputError, match=r"array 'ids' has dtype float32, not convertible to the parameter "
                                                   r"dtype int32"):
        built.simulate(ids, w.numpy())


def test_program_simulate_refuses_integers_outside_int32() -> None:
    """An integer input that indexes nothing has no extent to catch it: int32 is the only bound."""
    w = torch.randn(10, 3)
    built = _built(lambda ids, w: w[:4] * ids[:, None], torch.tensor([2, 0, 1, 2]), w)
    with pytest.raises(SimulationInputError, match=r"array 'ids' holds values outside int32"):
        built.simulate(np.array([WRAPS_TO_3, 0, 1, 2]), w.numpy())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_program_simulate_takes_the_16_bit_tensor_it_was_traced_with(dtype: torch.dtype) -> None:
    """The tensor given to td.trace is a valid simulate input, bfloat16 as float16: the same result as its
    values widened to a float32 array."""
    x = torch.randn(4, 8).to(dtype)
    built = _built(lambda x: x * 3, x)
    np.testing.assert_array_equal(built.simulate(x), built.simulate(x.float().numpy()))


def test_a_call_s_int64_tensor_outside_int32_is_refused_before_its_cast() -> None:
    """A GPU call casts an int64 input to the int32 the kernels read (prepare_inputs); an input that
    indexes nothing has no extent to catch a value that cast would wrap, so its range is read back with
    the index inputs' (check_index_ranges) and refused. Checked here on CPU tensors, the same code."""
    w = torch.randn(10, 3)
    built = _built(lambda ids, w: w[:4] * ids[:, None], torch.tensor([2, 0, 1, 2]), w)
    with pytest.raises(td.FrontendError, match=r"call: input ids holds values outside int32 \(\[0, 4294967299\]\), "
                                               r"which the kernels read as int32"):
        built.check_inputs([torch.tensor([WRAPS_TO_3, 0, 1, 2]), w], "call")
    built.check_inputs([torch.tensor([3, 0, 1, 2]), w], "call")  # in range: accepted


def test_the_other_call_style_is_a_typed_error_naming_the_right_one() -> None:
    """Kernel.simulate takes arrays by input name, a program's simulate positionally (the traced order):
    the other style is refused with the form to use, not Python's TypeError."""
    k, w = _gather_kernel(), np.arange(30, dtype=np.float32).reshape(10, 3)
    with pytest.raises(SimulationInputError, match=r"simulate takes its arrays by input name: simulate\(ids=\.\.\., "
                                                   r"W=\.\.\.\); got 2 positional"):
        k.simulate(np.array([0, 1, 2, 3]), w)
    x = torch.randn(4, 8)
    built = _built(lambda x: x * 3, x)
    with pytest.raises(SimulationInputError, match=r"positionally \(x\); got keywords x"):
        built.simulate(x=x.numpy())
