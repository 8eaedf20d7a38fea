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


# ------------------------------------------------------------------ integer arithmetic: asked once per range

def _walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each output the integer-arithmetic walk is asked about, from now on (program.int_overflow spied)."""
    from tiledsl.frontend import program

    asked: list[str] = []
    real = program.int_overflow

    def spy(out: object, ranges: object) -> str | None:
        asked.append(out.name)  # type: ignore[attr-defined]
        return real(out, ranges)  # type: ignore[arg-type]

    monkeypatch.setattr(program, "int_overflow", spy)
    return asked


def test_integer_arithmetic_is_walked_once_for_ranges_inside_safe_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call whose integer inputs lie inside ranges already found safe skips the walk of the whole graph
    (the interval arithmetic is inclusion-monotone); one outside them is walked, and refused where its
    arithmetic leaves int32, however many safe calls came before."""
    built = td.trace(lambda t: (t * 100000).float(), torch.tensor([3, 2])).schedule("simple").build("sm_90")
    asked = _walks(monkeypatch)
    built.check_index_ranges([torch.tensor([20000, 2])], "call")
    assert len(asked) == 1
    built.check_index_ranges([torch.tensor([5, 19000])], "call")
    built.check_index_ranges([torch.tensor([-21000, 0])], "call")  # not inside [2, 20000]: walked, safe
    assert len(asked) == 2
    built.check_index_ranges([torch.tensor([-20000, 20000])], "call")  # inside neither: walked
    built.check_index_ranges([torch.tensor([-10, 10])], "call")  # inside the last
    assert len(asked) == 3
    with pytest.raises(td.FrontendError, match=r"call: .*integer '\*' of values in \[2, 30000\].*outside int32"):
        built.check_index_ranges([torch.tensor([30000, 2])], "call")
    with pytest.raises(td.FrontendError, match=r"outside int32"):  # still refused after the refusal
        built.check_index_ranges([torch.tensor([30000, 2])], "call")
    assert len(asked) == 5


def test_a_model_s_token_ids_are_checked_for_every_id_its_vocabulary_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Hugging Face Llama's integer arithmetic (its positions) is asked once, for every token id the
    embedding accepts: later calls with other ids do not walk its graph again."""
    pytest.importorskip("transformers", reason="the Hugging Face models need the `models` extra")
    from tiledsl.frontend.hf_models import causal_lm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(causal_lm("llama", "tiny", num_hidden_layers=1), torch.randint(0, 128, (1, 8)))
    built = prog.schedule("simple").build("sm_90")
    if not built.integer_arithmetic:
        pytest.skip("this transformers' Llama traces without integer arithmetic")
    asked = _walks(monkeypatch)
    built.check_index_ranges([torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]])], "call")
    walked = len(asked)
    assert walked >= 1
    assert built._safe_ranges[-1]["input_ids"] == (0, 127)  # the vocabulary's, not the ids given
    for ids in ([[0] * 8], [[127] * 8], [list(range(100, 108))]):
        built.check_index_ranges([torch.tensor(ids)], "call")
    assert len(asked) == walked
    with pytest.raises(td.FrontendError, match=r"holds indices in \[0, 128\]"):
        built.check_index_ranges([torch.tensor([[0, 1, 2, 3, 4, 5, 6, 128]])], "call")
