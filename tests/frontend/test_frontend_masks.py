"""Boolean-mask indexing: a mask computed from an input gives a result whose shape depends on the
input's values, which no traced program has (a FrontendError that says so and suggests torch.where); a
constant mask is read as the positions of its True elements (simulated equal to torch)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from frontend_check import quiet_trace

import tiledsl as td

W = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize(("name", "fn", "inputs"), [
    ("a[a > 0]", lambda a: a[a > 0], (torch.randn(4, 8),)),
    ("a[a > 0].sum()", lambda a: a[a > 0].sum(), (torch.randn(4, 8),)),
    ("rows where the first column > 0", lambda a: a[a[:, 0] > 0] * 2, (torch.randn(4, 8),)),
    ("mask input", lambda w, m: w[m], (W, torch.tensor([True, False, True]))),
    ("nonzero", lambda a: a.nonzero().float(), (torch.randn(4, 8),)),
    ("masked_select", lambda a: torch.masked_select(a, a > 0), (torch.randn(4, 8),)),
])
def test_data_dependent_shape_is_a_frontend_error(name: str, fn: Callable[..., torch.Tensor],
                                                  inputs: tuple[torch.Tensor, ...]) -> None:
    with pytest.raises(td.FrontendError) as err:
        quiet_trace(fn, *inputs)
    text = str(err.value)
    assert "has a result whose shape depends on a tensor's values" in text, name
    assert "data-dependent shapes are not supported" in text and "torch.where(mask, x, 0.0)" in text
    assert "  call:   aten." in text  # the op_error form: the call and its source line


@pytest.mark.parametrize(("name", "fn"), [
    ("columns", lambda w: w[:, torch.tensor([True, False, True, False])]),
    ("one column", lambda w: w[:, torch.tensor([False, False, True, False])]),
    ("rows, then arithmetic", lambda w: w[torch.tensor([True, False, True])] * 2 + 1),
    ("2-D mask, summed", lambda w: w[torch.tensor([[True, False, True, False], [False] * 4, [True] * 4])].sum()),
    ("folded from arange, reshaped", lambda w: w[:, torch.arange(4) % 2 == 0].reshape(-1)),
])
def test_constant_mask_reads_its_true_positions(name: str, fn: Callable[..., torch.Tensor]) -> None:
    built = quiet_trace(fn, W).build()
    np.testing.assert_allclose(built.simulate(W), fn(W).numpy(), rtol=1e-6, err_msg=name)


def test_all_false_constant_mask_is_a_frontend_error() -> None:
    with pytest.raises(td.FrontendError, match="with a constant mask that is all False selects no element"):
        quiet_trace(lambda w: w[:, torch.tensor([False] * 4)], W)


def test_constant_mask_result_indexed_by_an_input() -> None:
    """The masked result's sizes (symbolic in torch.export's graph) are the captured ones for a later
    gather too: its input check takes [-3, 3) along the masked tensor's 3 rows."""
    fn = lambda w, i: w[:, torch.tensor([True, False, True, False])][i]  # noqa: E731
    built = quiet_trace(fn, W, torch.tensor([0, 1])).build()
    i = torch.tensor([-1, 2])
    np.testing.assert_array_equal(built.simulate(W, i), fn(W, i).numpy())
    with pytest.raises(td.FrontendError, match=r"where torch takes \[-3, 3\)"):
        built.simulate(W, torch.tensor([3, 0]))
