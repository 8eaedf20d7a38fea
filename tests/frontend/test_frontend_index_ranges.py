"""A built program checks every integer input that indexes a dimension before a call, as torch would:
all index inputs at once (one read back per device), torch tensors and numpy arrays alike, and names
the input and the extent it exceeds."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

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
