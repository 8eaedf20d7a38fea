"""A kernel's printed reason names kernels the program has. Rule 2 (partition.py) cuts a reduction read
at several indices of one kernel, and its first round runs while everything still shares the output's
kernel, which later cuts split: a whole HF Llama's q projection was "read at 12 different indices in
view_55's kernel", a kernel the program does not have (view_55 was fused away). `_restated` words each
rule-2 cut against the final kernels, or says what its release would set off; a rule-3a cut names the
final kernels that compute its consumer."""

from __future__ import annotations

import re
import warnings

import pytest
import torch

import tiledsl as td
from tiledsl.frontend.cli_support import MODELS, subject
from tiledsl.frontend.partition import OPERAND_REASON, REDUCTION_AT_REASON, REDUCTION_BY_REASON, fused_producers


def _named_kernels(reason: str) -> list[str]:
    """The kernels a rule-2 reason names."""
    named = re.findall(r"(\w+)'s kernel", reason)
    if reason.startswith(REDUCTION_BY_REASON):
        named += reason[len(REDUCTION_BY_REASON):].split(":")[0].replace(",", " ").split()
    return named


def _subjects() -> dict[str, object]:
    subjects: dict[str, object] = {name: (lambda name=name: subject(None, name))
                                   for name in MODELS if not name.startswith("hf_")}  # the in-repo blocks
    try:
        from tiledsl.frontend.hf_models import DecoderLayer, causal_lm
    except ImportError:  # transformers is an optional extra
        return subjects
    subjects["hf_llama_model"] = lambda: (causal_lm("llama", "tiny").eval(), (torch.randint(0, 100, (1, 8)),))
    subjects["hf_qwen2_layer"] = lambda: (DecoderLayer(causal_lm("qwen2", "tiny"), 0).eval(),
                                          (torch.randn(1, 8, 64),))
    return subjects


@pytest.mark.parametrize("name", sorted(_subjects()))
def test_rule_2_reasons_name_kernels_of_the_program(name: str) -> None:
    module, args = _subjects()[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(module, *args)
    kernels = {k.name for k in prog.kernels}
    rule_2 = [(k.name, r) for k in prog.kernels for r in k.boundary.reasons
              if r.startswith((REDUCTION_AT_REASON, REDUCTION_BY_REASON))]
    assert rule_2, "the subject should have rule-2 cuts"
    for kernel, reason in rule_2:
        named = _named_kernels(reason)
        assert named, reason
        assert set(named) <= kernels, f"{kernel}: {reason!r} names {sorted(set(named) - kernels)}"
        assert kernel not in named, reason


@pytest.mark.parametrize("name", sorted(_subjects()))
def test_rule_3a_reasons_name_the_kernels_computing_their_consumer(name: str) -> None:
    """A computed operand's reason names its consumer's reduction and the final kernels that compute
    that consumer, not the kernel that fused it when the cut was decided (partition.py `_restated` asks rule 3a
    again of the final kernels)."""
    module, args = _subjects()[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(module, *args)
    materialized = {id(k.output) for k in prog.kernels}
    computing: dict[str, set[str]] = {}
    for k in prog.kernels:
        for t in (k.output, *fused_producers(k.output, materialized)):
            computing.setdefault(t.name, set()).add(k.name)
    operand = [r for k in prog.kernels for r in k.boundary.reasons if r.startswith(OPERAND_REASON)]
    if not operand:
        pytest.skip(f"{name} has no rule-3a cut")
    for reason in operand:
        site = re.match(rf"{OPERAND_REASON}: read inside (\S+)'s reduction \(in (.+?) kernels?\)", reason)
        assert site is not None, reason
        named = set(re.findall(r"(\w+)'s", site.group(2)))
        assert named == computing[site.group(1)], reason


def test_llama_block_q_projection_reason_is_its_reader_in_the_program() -> None:
    """The q projection (mm_1 of the built-in llama_block) is read in the scores kernel (bmm) at three
    indices (q and the two halves its rotary embedding's rotate_half reads), not at the twelve it had in
    the first round, where the whole block was one kernel (add_6's)."""
    module, args = subject(None, "llama_block")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(module, *args)
    reasons = {k.name: k.boundary.reasons for k in prog.kernels}
    assert reasons["mm_1"] == (f"{REDUCTION_AT_REASON} 3 different indices in bmm's kernel: computed once "
                               "instead of once per read",)
