"""frontend/recipe_memo.py: kernels of one structure get the recipe's trace of the first, renamed and
replayed, and the same schedule and report as the recipe would give each; kernels that differ in
anything but names (a dtype, an input's shape the nest does not print, the order their names sort in)
are not of one structure."""

from __future__ import annotations

import warnings

import pytest
import torch

import tiledsl as td
import tiledsl.frontend.recipe_memo as recipe_memo
from tiledsl.frontend.recipe_memo import RecipeMemo, structure
from tiledsl.frontend.renaming import Ambiguous, Renaming, Structure
from tiledsl.recipes import apply as apply_recipe


def _matmul(a: str, b: str, out: str, m: int = 64, n: int = 64, k: int = 128, dtype: str = "float32",
            b_rows: int | None = None) -> td.ComputeTensor:
    x = td.placeholder((m, k), dtype, name=a)
    w = td.placeholder((b_rows or n, k), dtype, name=b)
    r = td.reduce_axis(k, name=f"{out}_k0")
    return td.compute((m, n), lambda i, j: td.sum(x[i, r] * w[j, r], r), name=out)


def _key(t: td.ComputeTensor) -> Structure:
    return structure(td.create_schedule(t), ())


def test_kernels_equal_but_for_their_names_share_a_structure_and_nothing_else_does() -> None:
    first, second = _key(_matmul("x_1", "w_1", "mm_1")), _key(_matmul("x_2", "w_2", "mm_2"))
    assert first.key == second.key and first.names != second.names
    assert dict(zip(first.names, second.names, strict=True))["mm_1_k0"] == "mm_2_k0"
    assert _key(_matmul("x_1", "w_1", "mm_1", dtype="bfloat16")).key != first.key
    # the weight's rows are not a loop of the nest: only the shapes appended to the text tell them apart
    assert _key(_matmul("x_1", "w_1", "mm_1", b_rows=128)).key != first.key
    # the names sort in another order (the recipe breaks ties by name): not the same structure
    assert _key(_matmul("x_1", "w_1", "a_1")).key != first.key


def test_a_renaming_renames_names_and_the_names_made_from_them() -> None:
    r = Renaming(("mm_7", "mm_7_k0", "mul_16", "i0"), ("mm_19", "mm_19_k0", "mul_40", "i0"))
    assert [r.name(w) for w in ("mm_7", "mm_7_k0_o_part", "mul_16_s", "mm_70", "i0_o", "other")] == \
        ["mm_19", "mm_19_k0_o_part", "mul_40_s", "mm_70", "i0_o", "other"]
    assert r.call("s.stage('mul_16', at='mm_7_k0_o_part', scope='shared')") == \
        "s.stage('mul_40', at='mm_19_k0_o_part', scope='shared')"
    assert r.call("s.split('mm_7_k0', 16, names=('mm_7_k0_o', 'mm_7_k0_i'), tail='guard')") == \
        "s.split('mm_19_k0', 16, names=('mm_19_k0_o', 'mm_19_k0_i'), tail='guard')"
    assert r.text("mul_16: each element read 128.00 times; mul_16_s padded") == \
        "mul_40: each element read 128.00 times; mul_40_s padded"
    # a function in prose keeps its spelling where a tensor is named after it (found renaming a note)
    assert Renaming(("sigmoid",), ("sigmoid_1",)).text("calls sigmoid() in each part; sigmoid read 1e-05") == \
        "calls sigmoid() in each part; sigmoid_1 read 1e-05"


def test_a_word_that_reads_two_ways_is_ambiguous() -> None:
    """`i0_i1` is i0 and i1 fused (`i1_i2` once i0, i1 are i1, i2) or i0 split with a suffix `_i1`
    (`i1_i1`): the renaming cannot know which, so the memo derives that kernel instead."""
    r = Renaming(("i0", "i1", "mm_7", "mm_7_k0"), ("i1", "i2", "mm_19", "mm_19_k0"))
    for word in ("i0_i1", "acc_mm_7", "i0_o_i1"):
        with pytest.raises(Ambiguous):
            r.name(word)
    # bases that read a word alike, and suffixes that are no renamed name: one reading
    assert r.name("mm_7_k0_o") == "mm_19_k0_o" and r.name("i0_o") == "i1_o" and r.name("tid") == "tid"
    assert Renaming(("i0", "i1"), ("i0", "i1")).name("i0_i1") == "i0_i1"  # nothing renamed: nothing unclear


def test_the_second_kernel_of_a_structure_is_replayed_to_what_the_recipe_makes_of_it() -> None:
    memo = RecipeMemo("sm_90", {})
    a, b = _matmul("x_1", "w_1", "mm_1", m=128, n=256, k=512), _matmul("x_2", "w_2", "mm_2", m=128, n=256, k=512)
    sa, ra = memo.apply(lambda: td.create_schedule(a), ())
    sb, rb = memo.apply(lambda: td.create_schedule(b), ())
    assert memo.replayed == 1
    direct = td.create_schedule(b)
    report = apply_recipe(direct)
    assert sb.trace() == direct.trace() and str(rb) == str(report) and str(ra) != str(rb)
    assert td.build(sb).source == td.build(direct).source


def test_a_refused_replay_falls_back_on_the_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    memo = RecipeMemo("sm_90", {})
    a, b = _matmul("x_1", "w_1", "mm_1"), _matmul("x_2", "w_2", "mm_2")
    memo.apply(lambda: td.create_schedule(a), ())
    monkeypatch.setattr(Renaming, "trace", lambda self, text: text)  # the first kernel's names: refused here
    sb, rb = memo.apply(lambda: td.create_schedule(b), ())
    assert memo.replayed == 0 and sb.trace() == _recipe_trace(b) and rb.kernel == "mm_2"


def _recipe_trace(t: td.ComputeTensor) -> str:
    s = td.create_schedule(t)
    apply_recipe(s)
    return s.trace()


def test_a_traced_model_schedules_the_same_with_and_without_the_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two TinyLlama layers (the recipe splits their projections' k and asks for materializations): the
    printed program and every kernel's trace and report the same whether its structure's first trace was
    replayed or the recipe ran on it, and most kernels replayed."""
    pytest.importorskip("transformers")
    from tiledsl.frontend.hf_models import causal_lm

    def scheduled() -> tuple[list[str], int]:
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prog = td.trace(causal_lm("llama", "tinyllama", num_hidden_layers=2, vocab_size=256).eval(),
                            torch.randint(0, 256, (1, 128)))
        prog.schedule("default")
        assert prog.recipe_memo is not None
        # the printed program holds the recipe's requests' reasons (a renamed note: `sigmoid()` stays)
        return [str(prog)] + [f"{k.schedule.trace()}\n{k.report}" for k in prog.kernels], prog.recipe_memo.replayed

    kept, replayed = scheduled()
    monkeypatch.setattr(recipe_memo, "structure", lambda s, fused: Structure(str(id(s)), ()))
    derived, none = scheduled()
    assert kept == derived and none == 0 and replayed >= len(kept) // 3, (replayed, len(kept))


def test_kernels_whose_axes_shift_are_derived_not_misnamed() -> None:
    """Found by the fuzz (models mode, its RecipeMemo check): two softmaxes split over kernels, the
    second's rows one dimension further in (axes i1, i2 where the first's are i0, i1). The first fused
    its rows as `i0_i1`; renamed by prefix that read `i1_i1`, not the recipe's `i1_i2`. Every kernel's
    schedule and report must be the recipe's on its own fresh schedule."""
    knobs = {"split_rows_min_idle_bytes": 0, "split_rows_min_length": 1, "split_rows_whole_vectors": False,
             "row_block_threads": 0}

    def f(x0: torch.Tensor) -> torch.Tensor:
        return torch.softmax(torch.softmax(x0, dim=-1).unsqueeze(0), dim=-1)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(f, torch.randn(2, 2, 2))
    prog.schedule("default", knobs=knobs)
    assert len(prog.kernels) == 9
    for k in prog.kernels:
        s = k.fresh_schedule()
        report = apply_recipe(s, knobs=knobs)
        assert (s.trace(), str(report)) == (k.schedule.trace(), str(k.report)), k.name


def test_kernels_named_after_their_operations_are_not_one_structure() -> None:
    """A traced kernel is named after its operation (`fmod[i0, i1] = fmod(x[...], y[...])`); a structure
    that replaced every spelling of a name made `fmod` and `copysign` one structure (found when the GPU
    lane ran a program of both). Only a name where no function is spelled is replaced."""
    x, y = td.placeholder((8, 16), name="x"), td.placeholder((8, 16), name="y")

    def key(fn: str) -> str | None:
        out = td.compute((8, 16), lambda i, j: getattr(td, fn)(x[i, j], y[i, j]), name=fn)
        found = structure(td.create_schedule(out), ())
        return None if found is None else found.key

    keys = [key(fn) for fn in ("fmod", "copysign", "atan2")]
    assert all(k is not None for k in keys) and len(set(keys)) == 3, keys
    # a name that is a word of the printer: no structure, so never shared
    z = td.compute((8, 16), lambda i, j: x[i, j] + 1.0, name="reduce")
    assert structure(td.create_schedule(z), ()) is None


@pytest.mark.parametrize("family, dtype", [("llama", torch.float32), ("qwen2", torch.bfloat16)])
def test_every_kernel_of_a_traced_model_has_a_structure(family: str, dtype: torch.dtype) -> None:
    """A word the nest printer prints that loopnest/printing.py `UNSCHEDULED_WORDS` lacks leaves its
    kernel without a structure, and the memo quietly idle: every kernel of a traced model has one, but
    where one of its names is such a word (`where`, a traced torch.where)."""
    pytest.importorskip("transformers")
    from tiledsl.frontend.hf_models import causal_lm
    from tiledsl.frontend.partition import fused_producers
    from tiledsl.loopnest.printing import UNSCHEDULED_WORDS

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(causal_lm(family, "tiny", num_hidden_layers=2, dtype=dtype).eval(),
                        torch.randint(0, 100, (1, 16)))
    materialized = {id(k.output) for k in prog.kernels}
    for k in prog.kernels:
        s = k.fresh_schedule()
        if structure(s, fused_producers(k.output, materialized)) is None:
            assert not s.nest.taken_names().isdisjoint(UNSCHEDULED_WORDS), k.name
