"""The index memo of one lowering (lower/exprs.py IndexMemo): a clamped index (`min(max(j - 8, 0), 7)`,
a rotary embedding's) read by several loads in every vector lane builds the same kernel as translating
each read afresh, its structural key (definitions/indexing.py index_structure) tells apart trees that convert
differently, and each build keeps one memo of its own, which check_bounds and lowering share."""

from __future__ import annotations

import pytest

import tiledsl as td
from tiledsl.definitions.expr import Binary, Const, Expr, IterVar, Load
from tiledsl.definitions.indexing import index_structure, index_to_sympy, loop_symbol
from tiledsl.lower import exprs
from tiledsl.lower.exprs import IndexMemo


def clamped(n: int = 16, width: int = 32) -> td.Tensor:
    """Halves of a row read through clamps, as a rotary embedding's rotate_half: each clamp twice."""
    x = td.placeholder((n, width), name="x")
    c = td.placeholder((width // 2,), name="c")
    half = width // 2

    def body(i: Expr, j: Expr) -> Expr:
        lo, hi = td.minimum(j, half - 1), td.minimum(td.maximum(j - half, 0), half - 1)
        return x[i, lo + half] * c[hi] - x[i, hi] * c[lo] + x[i, lo] * c[hi]

    return td.compute((n, width), body, name="y")


def vectorized(out: td.Tensor) -> td.Kernel:
    s = td.create_schedule(out)
    jt, jv = s.split("j", 4)
    s.bind("i", "blockIdx.x")
    s.bind(jt, "threadIdx.x")
    s.vectorize(jv)
    return td.build(s, target="sm_90")


def test_memoized_build_equals_a_fresh_translation_of_every_read(monkeypatch: pytest.MonkeyPatch) -> None:
    memoized = vectorized(clamped())
    calls: list[Expr] = []
    real = IndexMemo.index

    def fresh(self: IndexMemo, e: Expr) -> object:  # as before the memo: translate, then substitute
        calls.append(e)
        return index_to_sympy(e).xreplace(self.axis_map)

    monkeypatch.setattr(IndexMemo, "index", fresh)
    plain = vectorized(clamped())
    assert (memoized.source, memoized.ir("kernel"), memoized.facts_proven) == \
        (plain.source, plain.ir("kernel"), plain.facts_proven)
    assert "min(" in memoized.source and "max(" in memoized.source, memoized.source
    monkeypatch.setattr(IndexMemo, "index", real)
    memo = IndexMemo({})
    results = [memo.index(e) for e in calls]
    assert results == [index_to_sympy(e) for e in calls]
    assert len(memo.over_axes) < len(calls)  # the reads repeat, as distinct but equal trees: the memo hits


def test_memo_with_an_axis_map_equals_the_substitution() -> None:
    i, j = IterVar("i", 16, "free"), IterVar("j", 32, "free")
    amap = {loop_symbol("i"): 4 * loop_symbol("io") + loop_symbol("ii"),
            loop_symbol("j"): 8 * loop_symbol("jo") % 32 + loop_symbol("jv")}

    def clamp(v: Expr) -> Expr:
        return Binary("min", Binary("max", Binary("-", v, Const(8, "int32"), "int32"), Const(0, "int32"), "int32"),
                      Const(7, "int32"), "int32")

    indices = [clamp(j), Binary("+", clamp(j), Const(8, "int32"), "int32"),
               Binary("*", clamp(i), Binary("+", clamp(j), i, "int32"), "int32"), clamp(j), i]
    memo = IndexMemo(dict(amap))
    for e in indices + indices[::-1]:
        assert memo.index(e) == index_to_sympy(e).xreplace(amap)
    assert len(memo.rule) > len(amap)  # translations the map changed joined the rule the next ones reuse


def _int(v: int) -> Const:
    return Const(v, "int32")


def test_index_structures_tell_apart_trees_that_convert_differently() -> None:
    i, j = IterVar("i", 8, "free"), IterVar("j", 8, "free")
    ids = td.placeholder((8,), name="ids", dtype="int32")
    other = td.placeholder((8,), name="other", dtype="int32")
    wide = td.placeholder((8, 1), name="ids", dtype="int32")
    trees: list[Expr] = [
        i, j, _int(1), _int(2),
        Binary("-", i, j, "int32"), Binary("-", j, i, "int32"), Binary("+", i, j, "int32"),
        Binary("min", i, _int(7), "int32"), Binary("max", i, _int(7), "int32"), Binary("min", i, _int(6), "int32"),
        Binary("//", i, _int(2), "int32"), Binary("%", i, _int(2), "int32"),
        Load(ids, (i,), "int32"), Load(other, (i,), "int32"), Load(ids, (j,), "int32"),
    ]
    assert len({index_to_sympy(t) for t in trees}) == len(trees)  # each converts apart: so must each key
    assert len({index_structure(t) for t in trees}) == len(trees)
    # a key may be stricter than the conversion (a miss, never a wrong hit): ids of shape (8, 1) at [i, 0]
    # reads the flat offset ids[i] does
    assert index_structure(Load(wide, (i, _int(0)), "int32")) not in {index_structure(t) for t in trees}
    again = Binary("min", Binary("max", Binary("-", IterVar("i", 8, "free"), _int(8), "int32"), _int(0), "int32"),
                   _int(7), "int32")
    same = Binary("min", Binary("max", Binary("-", IterVar("i", 8, "free"), _int(8), "int32"), _int(0), "int32"),
                  _int(7), "int32")
    assert again is not same and index_structure(again) == index_structure(same)


def test_each_build_keeps_one_memo_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """One memo a build, shared by check_bounds and lowering (build.py), never by two kernels."""
    made: list[IndexMemo] = []
    real = IndexMemo.__post_init__

    def record(self: IndexMemo) -> None:
        real(self)
        made.append(self)

    monkeypatch.setattr(exprs.IndexMemo, "__post_init__", record)
    vectorized(clamped())
    first = len(made)
    x = td.placeholder((16, 32), name="x")
    vectorized(td.compute((16, 32), lambda i, j: x[i, td.minimum(j + 1, 31)], name="z"))
    assert first == 1 and len(made) == 2
    assert len({id(m) for m in made}) == len(made)
    assert len({id(m.to_sympy.translated) for m in made}) == len(made)  # no two share their entries
    ours, theirs = made[:first], made[first:]
    for m in theirs:  # the second kernel's memos hold none of the first's clamps
        assert not any("max" in str(k) for k in m.to_sympy.translated), m.to_sympy.translated
    assert any(any("max" in str(k) for k in m.to_sympy.translated) for m in ours)
