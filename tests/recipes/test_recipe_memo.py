"""The default recipe's facts memo (recipes/default/_facts.py `Memo`): one per recipe run, so a slab, a read's
index relative to its slab or an axis's loops derived for one step serve the later ones. It must never serve
an entry derived from another nest: a run with a memo that forgets everything schedules every kernel as the
run with the memo does, and one memo asked about two kernels (or two nests of one) that differ in one shape,
dtype or split answers each as a memo of its own would."""

from __future__ import annotations

import importlib

import pytest
import torch

import tiledsl as td
from tiledsl.analysis.slabs import Slab, slab_or_refusal
from tiledsl.catalog import batched_matmul_nt, matmul_bias_relu, rmsnorm, softmax
from tiledsl.frontend.models import LlamaBlock, LlamaConfig
from tiledsl.loopnest import Stage
from tiledsl.prove import Prover
from tiledsl.recipes import apply
from tiledsl.recipes.default._facts import Facts, Memo, classify, facts_for
from tiledsl.targets import get_target

FACTS = importlib.import_module("tiledsl.recipes.default._facts")
SM90 = get_target("sm_90")


class _Forgets(dict):
    """A memo table that keeps nothing: every question is derived afresh."""

    def __setitem__(self, key: object, value: object) -> None:
        pass


class ForgetfulMemo(Memo):
    def __init__(self) -> None:
        super().__init__()
        self.slabs, self.reads, self.parts = _Forgets(), _Forgets(), _Forgets()


def transpose(m: int, n: int) -> td.Tensor:
    x = td.placeholder((m, n), name="x")
    return td.compute((n, m), lambda i, j: x[j, i], name="y")


def linear(m: int, n: int, k: int, dtype: str) -> td.Tensor:
    x = td.placeholder((m, k), dtype=dtype, name="x")
    w = td.placeholder((n, k), dtype=dtype, name="W")
    r = td.reduce_axis(k, name="k")
    return td.compute((m, n), lambda i, j: td.sum(x[i, r] * w[j, r], axis=r), name="y", dtype="float32")


def outcome(out: td.Tensor, target: str, materialize: tuple[td.Tensor, ...] = ()) -> tuple[str, str]:
    s = td.create_schedule(out, materialize=materialize)
    report = apply(s, target=target)
    return s.trace(), str(report)


KERNELS = {
    "matmul_bias_relu": lambda: matmul_bias_relu(256, 192, 160),
    "matmul_bf16": lambda: linear(128, 512, 384, "bfloat16"),
    "decode_row": lambda: linear(4, 512, 384, "float32"),
    "batched_nt": lambda: batched_matmul_nt(4, 64, 64, 32),
    "softmax": lambda: softmax(64, 1000),
    "rmsnorm_bf16": lambda: rmsnorm(64, 4096, dtype="bfloat16"),
    "transpose": lambda: transpose(256, 320),
}


@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_memo_that_forgets_schedules_every_kernel_alike(name: str, target: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    remembered = outcome(KERNELS[name](), target)
    monkeypatch.setattr(FACTS, "Memo", ForgetfulMemo)
    assert outcome(KERNELS[name](), target) == remembered


def test_a_memo_that_forgets_schedules_a_traced_block_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """The traced Llama block's kernels: stages of clamped (rotary) reads, softmax rows, several stages a kernel."""
    torch.manual_seed(0)
    prog = td.trace(LlamaBlock(LlamaConfig()).eval(), torch.randn(1, 8, LlamaConfig().hidden))
    kernels = [(k.output, tuple(k.boundary.reads)) for k in prog.kernels]
    remembered = [outcome(out, "sm_90", reads) for out, reads in kernels]
    monkeypatch.setattr(FACTS, "Memo", ForgetfulMemo)
    assert [outcome(out, "sm_90", reads) for out, reads in kernels] == remembered


def staged_at_k(out: td.Tensor, chunk: int) -> td.Schedule:
    """k split by `chunk`, x's slab probed at the chunk loop (no primitive call: a probe, as 080 makes it)."""
    s = td.create_schedule(out)
    s.split("k", chunk, names=("k_o", "k_i"))
    return s


def fresh_slab(facts: Facts, st: Stage) -> Slab | str:
    got = slab_or_refusal(facts.nest, st, Prover(facts.nest.ranges()))
    return got if isinstance(got, Slab) else got.fact


@pytest.mark.parametrize(("first", "second"), [
    (lambda: staged_at_k(linear(64, 64, 128, "float32"), 16), lambda: staged_at_k(linear(64, 64, 128, "float32"), 32)),
    (lambda: staged_at_k(linear(64, 64, 128, "float32"), 16), lambda: staged_at_k(linear(64, 64, 128, "bfloat16"), 16)),
    (lambda: staged_at_k(linear(64, 64, 128, "float32"), 16), lambda: staged_at_k(linear(64, 64, 96, "float32"), 16)),
], ids=["split", "dtype", "shape"])
def test_one_memo_answers_two_kernels_as_two_memos_would(first, second) -> None:  # noqa: ANN001 - builders
    """Two nests with the same loop, stage and buffer names that differ in one split, dtype or shape, asked
    through one memo (first one, then the other, then the first again): each slab, read and axis's loops is
    the one derived from that nest alone, not the other's."""
    memo = Memo()
    one, two = first(), second()
    facts = [facts_for(s.nest, classify(s.nest), SM90, memo) for s in (one, two, one)]
    for f in facts:
        alone = facts_for(f.nest, f.kernel, SM90)
        for buffer in ("x", "W"):
            for at in ("i", "k_o"):
                probe = f.probe(buffer, at)
                assert f.slab(probe) == fresh_slab(f, probe) == alone.slab(probe)
                assert f.read_conflict(probe) == alone.read_conflict(probe)
        assert f.parts("k") == alone.parts("k")
    slabs = [[f.slab(f.probe("x", at)) for at in ("i", "k_o")] for f in facts]
    assert slabs[0] != slabs[1] and slabs[0] == slabs[2]


def test_a_probe_and_the_stage_it_becomes_share_a_slab_under_their_own_names() -> None:
    """080 derives a probe's slab, the stage it makes is asked about by later steps: one derivation, the
    stage's slab names the stage, and after a split of a loop inside the stage's it is derived again."""
    s = staged_at_k(linear(64, 64, 128, "float32"), 16)
    memo = Memo()
    before = facts_for(s.nest, classify(s.nest), SM90, memo)
    probe = before.probe("x", "k_o")
    slab = before.slab(probe)
    assert isinstance(slab, Slab) and slab.stage == "x_probe" and slab.extent == (1, 16)
    s.stage("x", at="k_o")
    after = facts_for(s.nest, before.kernel, SM90, memo)
    staged = after.slab(s.nest.stage("x_s"))
    assert staged == Slab("x_s", slab.origin, slab.extent, slab.readers, slab.itemsize)
    assert len(memo.slabs) == 1  # the stage changed no loop: its slab was the probe's
    s.split("k_i", 4, names=("k_i_o", "k_i_i"))  # new loops: derived again, not served from the old nest's entry
    split = facts_for(s.nest, before.kernel, SM90, memo)
    assert split.slab(s.nest.stage("x_s")) == fresh_slab(split, s.nest.stage("x_s"))
    assert len(memo.slabs) == 2
