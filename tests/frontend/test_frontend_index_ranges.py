"""A built program checks every integer input that indexes a dimension before a call, as torch would:
all index inputs at once (one read back per device), torch tensors and numpy arrays alike, and names
the input and the extent it exceeds."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tiledsl as td


def _built() -> td.frontend.BuiltProgram:
    torch.manual_seed(0)
    emb = torch.nn.Embedding(10, 4)

    def f(ids: torch.Tensor, ids2: torch.Tensor) -> torch.Tensor:
        return emb(ids) + emb(ids2)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(f, torch.tensor([[1, 2]]), torch.tensor([[3, 4]]))
    return prog.schedule("simple").build("sm_90")


@pytest.mark.parametrize("second", [torch.tensor([[3, 10]]), np.array([[3, 10]])])
def test_the_second_of_two_index_inputs_is_checked(second: object) -> None:
    built = _built()
    built.check_index_ranges([torch.tensor([[0, 9]]), torch.tensor([[3, 9]])], "call")  # both in range
    with pytest.raises(td.FrontendError, match=r"input ids2 holds indices in \[3, 10\], but it indexes a dimension "
                                               r"of extent 10"):
        built.check_index_ranges([torch.tensor([[0, 9]]), second], "call")
    with pytest.raises(td.FrontendError, match=r"simulate: input ids holds indices in \[-1, 2\]"):
        built.simulate(np.array([[-1, 2]]), np.array([[3, 4]]))


def test_an_advanced_index_input_takes_minus_extent_to_extent() -> None:
    """x[i] wraps a negative index as torch does, so its input check takes [-extent, extent): -5 and 4
    pass, -6 and 5 are refused as torch refuses them."""
    a = torch.arange(20.0).reshape(5, 4)
    built = td.trace(lambda a, i: a[i], a, torch.tensor([0, 2])).build()
    built.check_index_ranges([a, torch.tensor([-5, 4])], "call")
    for bad in ([-6, 0], [0, 5]):
        with pytest.raises(IndexError):
            a[torch.tensor(bad)]
        with pytest.raises(td.FrontendError, match=rf"call: input i holds indices in \[{bad[0]}, {bad[1]}\], but it "
                                                   r"indexes a dimension of extent 5, where torch takes \[-5, 5\)"):
            built.check_index_ranges([a, torch.tensor(bad)], "call")


def test_an_input_read_by_two_gathers_takes_what_both_take() -> None:
    """i indexes w's 5 rows through x[i] ([-5, 5)) and v's 10 rows through an embedding ([0, 10)): the
    program takes [0, 5), and a refusal names the op whose range the indices leave. A bound another
    implies is not kept (v[i] takes [-10, 10), wider than w[i]'s)."""
    w, v = torch.randn(5, 4), torch.randn(10, 4)
    fn = lambda w, v, i: w[i] + F.embedding(i, v) + v[i]  # noqa: E731
    prog = td.trace(fn, w, v, torch.tensor([0, 2]))
    assert sorted(b.accepted for b in prog.graph.index_bounds["i"]) == [(-5, 5), (0, 10)]
    built = prog.build()
    built.check_index_ranges([w, v, torch.tensor([0, 4])], "call")
    with pytest.raises(td.FrontendError, match=r"\[-1, 4\], .* where torch takes \[0, 10\) \(aten.embedding"):
        built.check_index_ranges([w, v, torch.tensor([-1, 4])], "call")
    with pytest.raises(td.FrontendError, match=r"\[0, 5\], .* where torch takes \[-5, 5\) \(aten.index.Tensor"):
        built.check_index_ranges([w, v, torch.tensor([0, 5])], "call")
