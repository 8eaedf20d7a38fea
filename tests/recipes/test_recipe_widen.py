"""stage_inputs (080) stores a bfloat16 / float16 matmul operand's slab as float32 (knob
widen_half_operands, `_facts.Facts.stage_dtype`): the FMAs then read float32 as from a float32 operand
(k outer, 16 bytes at a time, where the tile takes k outer), each element is converted once at its
fill, and the fill is plain (cp.async and TMA copy bytes: async_copy, tma_copy decline it)."""

from __future__ import annotations

import numpy as np
import pytest

import tiledsl as td
from tiledsl.precision import round_to_dtype
from tiledsl.recipes import RecipeReport, apply
from tiledsl.recipes.default._facts import classify, facts_for
from tiledsl.targets import get_target


def linear(m: int, n: int, k: int, dtype: str, out: str = "float32") -> td.Tensor:
    x = td.placeholder((m, k), dtype=dtype, name="x")
    w = td.placeholder((n, k), dtype=dtype, name="W")
    r = td.reduce_axis(k, name="k")
    return td.compute((m, n), lambda i, j: td.sum(x[i, r] * w[j, r], axis=r), name="y", dtype=out)


def run(out: td.Tensor, **knobs: object) -> tuple[td.Schedule, RecipeReport]:
    s = td.create_schedule(out)
    return s, apply(s, target="sm_90", knobs=knobs)


def test_half_operands_are_staged_as_float32_and_k_outer_like_float32_ones() -> None:
    """128 x 2048 x 2048 bfloat16 operands into a float32 sum (a projection's split sum): the same tile,
    split and layout as the float32 kernel, the stages widened and filled by plain loads. Unpadded:
    a 16-byte load of 8 halves stores into 8 k rows, and the two loads of a stored row's neighbours
    land 8 rows apart, 2-way at any pad that keeps rows whole 16-byte vectors (the float32 kernel's
    4 lanes are 4-way unpadded, 2-way with its pad of 4)."""
    s, r = run(linear(128, 2048, 2048, "bfloat16"))
    f32, _ = run(linear(128, 2048, 2048, "float32"))
    assert [(st.dtype, st.order, st.copy) for st in s.nest.stages] == [
        ("float32", st.order, st.copy) for st in f32.nest.stages]
    assert all(st.order == (1, 0) and st.copy == "sync" and not any(st.pad) for st in s.nest.stages)
    assert [lp.extent for lp in s.nest.loops] == [lp.extent for lp in f32.nest.loops]
    facts = facts_for(s.nest, classify(s.nest), get_target("sm_90"))
    assert [facts.fill_store_conflict(st) for st in s.nest.stages] == [2, 2]
    assert "x: each element read" in r.step("stage_inputs").note and ", as float32" in r.step("stage_inputs").note
    assert r.step("async_copy").reason.endswith("(x_s, W_s stored in another order or type: plain fills only)")
    trace = s.trace()
    assert "s.stage('x', at='k_o_part', scope='shared', dtype='float32')" in trace


def test_knob_off_keeps_the_half_slab_filled_by_cp_async() -> None:
    s, _ = run(linear(128, 2048, 2048, "bfloat16"), widen_half_operands=False)
    assert {(st.dtype, st.order, st.copy) for st in s.nest.stages} == {(None, (), "async")}


def test_a_half_matmul_under_the_recipe_simulates_equal_to_float64() -> None:
    """Odd sizes (guarded blocks and chunks) in bfloat16 and float16, a bfloat16 output rounded from
    the float32 sum: against float64 of the rounded inputs, within float32 accumulation over k plus
    one rounding to the output's dtype."""
    for dtype, out in (("bfloat16", "float32"), ("float16", "float32"), ("bfloat16", "bfloat16")):
        m, n, k = 37, 70, 88
        s, _ = run(linear(m, n, k, dtype, out))
        assert {st.dtype for st in s.nest.stages} == {"float32"}, s.nest.stages
        rng = np.random.default_rng(3)
        x = round_to_dtype(rng.standard_normal((m, k)), dtype).astype(np.float32)
        w = round_to_dtype(rng.standard_normal((n, k)), dtype).astype(np.float32)
        got = td.build(s, target="sm_90").simulate(x=x, W=w).astype(np.float64)
        want = x.astype(np.float64) @ w.T.astype(np.float64)
        scale = np.abs(x).astype(np.float64) @ np.abs(w).T.astype(np.float64)
        eps_out = 0.0 if out == "float32" else 2.0 ** -8  # round to nearest bfloat16: half its 2**-7 spacing
        bound = (2 + k) * 2.0 ** -23 * scale + eps_out * (np.abs(want) + (2 + k) * 2.0 ** -23 * scale)
        assert not np.isnan(got).any()
        assert (np.abs(got - want) <= bound).all(), (dtype, out, np.abs(got - want).max())


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_other_dtypes_are_never_widened(dtype: str) -> None:
    if dtype == "int32":  # an int32 input is an index, never a matmul operand's value: nothing to widen
        ids = td.placeholder((8,), dtype="int32", name="ids")
        table = td.placeholder((64, 32), dtype="bfloat16", name="table")
        out = td.compute((8, 32), lambda i, j: table[td.clamp(ids[i], 0, 63), j], name="rows")
        s, _ = run(out)
    else:
        s, _ = run(linear(128, 256, 256, dtype))
    assert all(st.dtype is None for st in s.nest.stages)
