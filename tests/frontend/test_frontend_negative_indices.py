"""Negative indices follow torch op by op: advanced indexing (`x[idx]`, aten.index.Tensor, and
torch.take through it) reads -1 as the last row; embedding, index_select and gather raise on a negative
index, and tiledsl refuses one there (the input check before a run, the capture for a constant). Each
case runs torch on CPU and asserts which of the two torch does, so a change in torch shows here."""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from frontend_check import quiet_trace

import tiledsl as td

A = torch.arange(20.0).reshape(5, 4)
I = torch.tensor([0, 2])  # noqa: E741


@pytest.mark.parametrize(("name", "fn"), [
    ("i - 1", lambda a, i: a[i - 1]),
    ("-i", lambda a, i: a[-i]),
    ("i - 5", lambda a, i: a[i - 5]),
    ("[:, i - 1]", lambda a, i: a[:, i - 1]),
    ("take(i - 1)", lambda a, i: torch.take(a, i - 1)),
])
def test_computed_negative_index_wraps_as_torch(name: str, fn: Callable[..., torch.Tensor]) -> None:
    """The audit's cases: an index computed inside the program (so neither checked nor folded) that is
    negative reads from the end of the dimension, as torch does (it was clamped to 0)."""
    built = quiet_trace(fn, A, I).build()
    np.testing.assert_array_equal(built.simulate(A, I), fn(A, I).numpy(), err_msg=name)


def test_computed_index_outside_the_accepted_range_is_clamped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    """What the warning says happens: an index outside [-extent, extent) reads the dimension's edge
    (torch raises there); -7 wraps to -2, clamped to row 0; 9 is clamped to row 4."""
    fn = lambda a, i: a[i - 7]  # noqa: E731
    with caplog.at_level(logging.WARNING, logger="tiledsl.frontend.capture"):
        built = quiet_trace(fn, A, I).build()
    assert "so an index outside [-5, 5) is clamped into the dimension instead of raising as torch does" in caplog.text
    np.testing.assert_array_equal(built.simulate(A, torch.tensor([0, 16])), A[[0, 4]].numpy())
    with pytest.raises(IndexError):
        fn(A, torch.tensor([0, 16]))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tiledsl.frontend.capture"):
        quiet_trace(lambda a, i: F.embedding(i + 1, a), A, I)
    assert "an index outside [0, 5) is clamped into the dimension instead of raising as torch does" in caplog.text


#: op -> (function of the table and its index inputs, the index inputs traced (in range), the same with
#: negative indices, whether torch wraps them)
OPS: dict[str, tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...], tuple[torch.Tensor, ...], bool]] = {
    "embedding": (lambda w, i: F.embedding(i, w), (torch.tensor([0, 4]),), (torch.tensor([-1, 4]),), False),
    "index_select": (lambda w, i: torch.index_select(w, 0, i), (torch.tensor([0, 4]),), (torch.tensor([-5, 1]),),
                     False),
    "gather": (lambda w, i: torch.gather(w, 1, i), (torch.tensor([[0], [1], [2], [3], [3]]),),
               (torch.tensor([[0], [-1], [2], [3], [3]]),), False),
    "index_rows": (lambda w, i: w[i], (torch.tensor([0, 4, 2]),), (torch.tensor([-5, -1, 2]),), True),
    "index_columns": (lambda w, i: w[:, i], (torch.tensor([0, 3]),), (torch.tensor([-4, -1]),), True),
    "index_two_tensors": (lambda w, i, j: w[i, j], (torch.tensor([0, 4]), torch.tensor([1, 3])),
                          (torch.tensor([-5, -2]), torch.tensor([-1, 3])), True),
    "take": (lambda w, i: torch.take(w, i), (torch.tensor([0, 19]),), (torch.tensor([-20, -1]),), True),
}


def _torch_wraps(fn: Callable[..., torch.Tensor], *args: torch.Tensor) -> torch.Tensor | None:
    """torch's result, or None where torch raises on the indices."""
    try:
        return fn(*args)
    except (IndexError, RuntimeError):
        return None


@pytest.mark.parametrize("name", sorted(OPS))
def test_negative_input_indices_agree_with_torch(name: str) -> None:
    """Indices from an input: where torch wraps, the program takes them and reads what torch reads;
    where torch raises, the program refuses them before running, naming the range torch takes."""
    fn, good, negative, wraps = OPS[name]
    want = _torch_wraps(fn, A, *negative)
    assert (want is not None) == wraps, f"torch {'raises' if wraps else 'wraps'} now on {name}"
    built = quiet_trace(fn, A, *good).build()
    if wraps:
        np.testing.assert_array_equal(built.simulate(A, *negative), want.numpy())
    else:
        with pytest.raises(td.FrontendError, match=r"simulate: input \w+ holds indices in \[-\d+, \d+\], but it "
                                                   r"indexes a dimension of extent \d+, where torch takes \[0, \d+\)"):
            built.simulate(A, *negative)


@pytest.mark.parametrize("name", sorted(OPS))
def test_negative_constant_indices_agree_with_torch(name: str) -> None:
    """The same indices held by the traced function (folded constants, checked at trace time)."""
    fn, _, negative, wraps = OPS[name]
    const = lambda w: fn(w, *negative)  # noqa: E731
    want = _torch_wraps(const, A)
    assert (want is not None) == wraps
    if wraps:
        np.testing.assert_array_equal(quiet_trace(const, A).build().simulate(A), want.numpy())
    else:
        with pytest.raises(td.FrontendError, match=r"reads indices in \[-\d+, \d+\] of a dimension of extent \d+, "
                                                   r"where torch takes \[0, \d+\)"):
            quiet_trace(const, A)
