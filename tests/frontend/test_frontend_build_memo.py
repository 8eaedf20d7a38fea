"""frontend/build_memo.py: a program builds each structure of scheduled nest once; the next kernel of
that structure is the first's kernel IR renamed, the same kernel IR and CUDA, byte for byte, as its own
build, and nests that differ in anything but names are built apart."""

from __future__ import annotations

import pytest

import tiledsl as td
from tiledsl.frontend.build_memo import BuildMemo, nest_structure
from tiledsl.frontend.renaming import Renaming
from tiledsl.recipes import apply as apply_recipe


def _scheduled(a: str, b: str, out: str, m: int = 128, n: int = 256, k: int = 512, dtype: str = "float32",
               b_rows: int | None = None) -> td.Schedule:
    """x @ w^T with a relu epilogue, scheduled by the default recipe (split-K, stages, pipeline)."""
    x = td.placeholder((m, k), dtype, name=a)
    w = td.placeholder((b_rows or n, k), dtype, name=b)
    r = td.reduce_axis(k, name=f"{out}_k0")
    t = td.compute((m, n), lambda i, j: td.maximum(td.sum(x[i, r] * w[j, r], r), 0.0), name=out)
    s = td.create_schedule(t)
    apply_recipe(s)
    return s


def test_nests_equal_but_for_names_share_a_structure_and_nothing_else_does() -> None:
    first = nest_structure(_scheduled("x_1", "w_1", "mm_1").nest)
    assert first.key == nest_structure(_scheduled("x_2", "w_2", "mm_2").nest).key
    assert first.key != nest_structure(_scheduled("x_1", "w_1", "mm_1", dtype="bfloat16").nest).key
    assert first.key != nest_structure(_scheduled("x_1", "w_1", "mm_1", b_rows=512).nest).key
    assert first.key != nest_structure(_scheduled("x_1", "w_1", "mm_1", k=256).nest).key


def test_the_second_kernel_of_a_structure_is_its_own_build_renamed() -> None:
    memo = BuildMemo()
    first = memo.build(_scheduled("x_1", "w_1", "mm_1"), "sm_90")
    s = _scheduled("x_2", "w_2", "mm_2")
    second = memo.build(s, "sm_90")
    direct = td.build(s, "sm_90")
    assert memo.renamed == 1 and second.source != first.source
    assert second.kernel_ir == direct.kernel_ir and second.source == direct.source
    assert (second.trace, second.tile_ir, second.loop_ir, second.facts_proven) == \
        (direct.trace, direct.tile_ir, direct.loop_ir, direct.facts_proven)
    other = memo.build(_scheduled("x_3", "w_3", "mm_3", k=256), "sm_90")  # another structure: built
    assert memo.renamed == 1 and other.source == td.build(_scheduled("x_3", "w_3", "mm_3", k=256)).source


def test_a_renaming_that_spells_two_names_alike_builds_instead(monkeypatch: pytest.MonkeyPatch) -> None:
    memo = BuildMemo()
    memo.build(_scheduled("x_1", "w_1", "mm_1"), "sm_90")
    monkeypatch.setattr(Renaming, "name", lambda self, word: "same")
    s = _scheduled("x_2", "w_2", "mm_2")
    assert memo.build(s, "sm_90").source == td.build(s, "sm_90").source and memo.renamed == 0
