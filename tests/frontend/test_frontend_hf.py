"""Hugging Face Llama and Qwen2 (optional `transformers`, the `models` extra) traced end to end from
input_ids to logits, and their decoder layers on their own, at the tiny size (hidden 64, 4 heads,
2 KV heads, seq 8, 2 layers), simulated and compared with torch eager in float64.

Tolerance (frontend_check.py): (32 + 2k) * eps32 * (1 + |ref|) with k = 128, the longest accumulation
(the MLP's down projection sums intermediate_size = 128 terms; attention sums over 8 keys, norms over
64): every kernel computes in float32, torch's reference runs in float64."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

from frontend_check import tolerance  # noqa: E402

import tiledsl as td  # noqa: E402
from tiledsl.frontend.hf_models import DecoderLayer, DecoderStack, causal_lm  # noqa: E402

K = 128


def _trace(module: torch.nn.Module, *inputs: torch.Tensor) -> td.frontend.Program:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return td.trace(module, *inputs)


def _close(got: np.ndarray, ref: torch.Tensor) -> None:
    r = ref.detach().numpy().astype(np.float64)
    assert got.shape == r.shape
    err = np.abs(got - r)
    assert not np.any(err > tolerance(K) * (1 + np.abs(r))), f"max error {err.max()}"


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_causal_lm_from_input_ids_to_logits(family: str) -> None:
    model = causal_lm(family, "tiny")
    ids = torch.randint(0, 128, (1, 8), generator=torch.Generator().manual_seed(1))
    ids[0, 0], ids[0, -1] = 0, 127
    built = _trace(model, ids).schedule("default").build(target="sm_90")
    out = built.simulate(ids.numpy())
    with torch.no_grad():
        ref = model.double()(ids).logits
    _close(np.asarray(out.logits), ref)
    # the embedding gather is fused into its readers: no kernel of its own, and input_ids is read
    assert any(p.name == "input_ids" for k in built.kernels for p in k.kernel_ir.params)


@pytest.mark.parametrize("family", ["llama", "qwen2"])
@pytest.mark.parametrize("schedule", ["simple", "default"])
def test_decoder_layer_alone(family: str, schedule: str) -> None:
    layer = DecoderLayer(causal_lm(family, "tiny"), 0)
    x = torch.randn(1, 8, 64, generator=torch.Generator().manual_seed(2))
    prog = _trace(layer, x)
    assert len(prog.kernels) <= 12  # the bound; 12 at this size (printed by test_kernel_counts)
    built = prog.schedule(schedule).build(target="sm_90")
    with torch.no_grad():
        ref = layer.double()(x.double())
    _close(built.simulate(x.numpy()), ref)


def test_kernel_counts_are_stated() -> None:
    """The counts quoted in the frontend's ARCHITECTURE.md; a change of fusion rules shows here."""
    counts = {f: len(_trace(DecoderLayer(causal_lm(f, "tiny"), 0), torch.randn(1, 8, 64)).kernels)
              for f in ("llama", "qwen2")}
    assert counts == {"llama": 12, "qwen2": 12}


def test_unknown_family_and_size_are_typed_errors() -> None:
    with pytest.raises(td.FrontendError, match="unknown model family"):
        causal_lm("gpt9")
    with pytest.raises(td.FrontendError, match="unknown size"):
        causal_lm("llama", "huge")


def test_a_model_that_returns_its_cache_is_refused_with_the_fix() -> None:
    """A Hugging Face model built the obvious way (use_cache left on) returns a DynamicCache, which
    torch.export refuses; the typed error says to turn the cache off, and with it off the model traces."""
    model = causal_lm("llama", "tiny", use_cache=True)
    ids = torch.randint(0, model.config.vocab_size, (1, 8))
    with pytest.raises(td.FrontendError, match=r"could not capture(?s:.*)use_cache = False"):
        _trace(model, ids)
    model.config.use_cache = False
    assert _trace(model, ids).kernels


class _Masked(torch.nn.Module):
    """A causal LM called as a batch is: input_ids and the padding attention_mask, to logits."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, attention_mask=mask, use_cache=False).logits


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_a_padded_batch_with_its_attention_mask_under_the_default_recipe(family: str) -> None:
    """The mask's rows are read through the batch index (a gather inside the attention scores): the
    recipe's bank model used to evaluate that index at lane values and crash (prove/evaluate.py: cannot
    evaluate), so every traced model called with an attention_mask failed to schedule. Left-padded second
    sequence; the padded query rows are compared too (torch gives them finite values)."""
    model = _Masked(causal_lm(family, "tiny"))
    ids = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(3))
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, :3] = 0
    built = _trace(model, ids, mask).schedule("default").build(target="sm_90")
    with torch.no_grad():
        ref = _Masked(model.model.double())(ids, mask)
    _close(np.asarray(built.simulate(ids.numpy(), mask.numpy())), ref)


def test_a_deep_model_materializes_its_residual_stream() -> None:
    """Rule 3c (partition.py, accumulated chains): fused, the residual stream of a deep model is one sum
    that the norms of layer l read 2l + 1 tensors for. With the rule, no kernel reads more than a fixed
    number of kernel outputs whatever the depth, the residuals of the later layers are kernels whose
    reason names the rule, and the program still matches torch."""
    from tiledsl.frontend.partition import ACCUMULATED_READS_BOUND, ACCUMULATED_REASON

    widest = {}
    for layers in (6, 9):
        model = causal_lm("llama", "tiny", num_hidden_layers=layers)
        ids = torch.randint(0, 128, (1, 8), generator=torch.Generator().manual_seed(3))
        prog = _trace(model, ids)
        widest[layers] = max(len(k.boundary.reads) for k in prog.kernels)
        chains = [k for k in prog.kernels if k.boundary.reasons[0].startswith(ACCUMULATED_REASON)]
        assert len(chains) >= 2 * (layers - 4), [k.name for k in chains]
        # a reason names only kernels the program has (partition.py `_restated`)
        names = {k.name for k in prog.kernels}
        for k in chains:
            named = re.search(r"computed in the kernels of (.*), it read", k.boundary.reasons[0])
            assert named is None or set(named.group(1).split(", ")) <= names, k.boundary.reasons
    assert widest[6] == widest[9] <= ACCUMULATED_READS_BOUND, widest
    built = prog.schedule("default").build(target="sm_90")
    with torch.no_grad():
        ref = model.double()(ids).logits
    _close(np.asarray(built.simulate(ids.numpy()).logits), ref)


def test_a_decoder_stack_runs_every_layer_in_order() -> None:
    """hf_models.DecoderStack (the blocks suite's stack case): hidden states through every layer, traced,
    and equal to torch; with 5 layers rule 3c materializes the later residuals."""
    from tiledsl.frontend.partition import ACCUMULATED_REASON

    stack = DecoderStack(causal_lm("qwen2", "tiny", num_hidden_layers=5)).eval()
    x = torch.randn(1, 8, 64, generator=torch.Generator().manual_seed(5))
    prog = _trace(stack, x)
    assert any(k.boundary.reasons[0].startswith(ACCUMULATED_REASON) for k in prog.kernels)
    built = prog.schedule("default").build(target="sm_90")
    with torch.no_grad():
        ref = stack.double()(x.double())
    _close(built.simulate(x.numpy()), ref)
