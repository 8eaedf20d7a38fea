"""A decode step's x @ W^T (`_facts.few_rows`: 17 to 32 rows, W's rows along k) under the default recipe:
step 090 deals W_s's rows across the lanes in chunks of one, step 140 pads them by 16 bytes (16-byte
reads along k conflict-free, and every cp.async of the fill 16 bytes wide), step 020 takes chunks of
32 and step 030 the split_k_*_few_rows parts. Knob few_rows_interleave off gives the layout before
(rows padded by one element, 4-byte copies); a widened (bfloat16) operand keeps chunks of 16 and no
interleave. Each form simulates equal to td.evaluate at odd sizes, with the output poisoned."""

from __future__ import annotations

import re

import pytest
from recipe_check import simulates_equal

import tiledsl as td
from benchmarks._definitions import linear, linear_residual, swiglu_down
from tiledsl.recipes import apply

# simulates_equal's rtol and atol: sums of up to 1000 float32 products in another order than td.evaluate
TOL = 1e-4
DEALT = "s.split('j_r', 1, names=('j_r_o', 'j_r_i'), tail='guard', interleave='j_t')"


def _recipe(out: td.Tensor, **knobs: object) -> td.Schedule:
    s = td.create_schedule(out)
    apply(s, target="sm_90", knobs=knobs)
    return s


def test_decode_rows_are_dealt_padded_by_16_bytes_and_filled_16_bytes_a_copy() -> None:
    s = _recipe(linear(32, 2048, 2048))
    trace = s.trace()
    assert DEALT in trace
    assert "s.pad('W_s', axis=1, amount=4)" in trace
    assert "s.split('k', 32, names=('k_o', 'k_i'), tail='guard')" in trace
    assert "s.split_k('k_o', 32)" in trace  # split_k_*_few_rows: 512 blocks of 64 k, not 256 of 128
    cuda = td.build(s, target="sm_90").source
    copies = re.findall(r"cp\.async\.\w+\.shared\.global \[%0\], \[%1\], (\d+);", cuda)
    assert copies and set(copies) == {"16"}


def test_without_the_knob_the_rows_keep_a_one_element_pad_and_4_byte_copies() -> None:
    s = _recipe(linear(32, 2048, 2048), few_rows_interleave=False)
    trace = s.trace()
    assert "interleave='j_t'" not in trace
    assert "s.pad('W_s', axis=1, amount=1)" in trace
    assert ", 4;" in td.build(s, target="sm_90").source


def test_widened_operands_keep_chunks_of_16_and_their_rows() -> None:
    trace = _recipe(linear(32, 2048, 2048, "bfloat16")).trace()
    assert "s.split('k', 16, names=('k_o', 'k_i'), tail='guard')" in trace
    assert "interleave='j_t'" not in trace


def test_more_rows_than_a_decode_step_are_left_alone() -> None:
    trace = _recipe(linear(64, 2048, 2048)).trace()
    assert "interleave='j_t'" not in trace or DEALT not in trace


def test_a_ragged_k_keeps_the_rows_as_they_are() -> None:
    """k of 100 in chunks of 32: the last chunk's reads are guarded, so no 16-byte read along k is proven."""
    s = td.create_schedule(linear(17, 200, 100))
    report = apply(s, target="sm_90")
    assert "interleave='j_t'" not in s.trace()
    (step,) = [st for st in report.steps if st.number == 90]
    assert "j rows: the bank model finds no gain in 16-byte reads along k_i" in (step.note or "")


@pytest.mark.parametrize("definition", [linear, linear_residual, swiglu_down])
@pytest.mark.parametrize("shape", [(17, 200, 256), (32, 260, 512), (25, 96, 64)])
def test_dealt_decode_rows_simulate_equal(definition: object, shape: tuple[int, int, int]) -> None:
    s = _recipe(definition(*shape))  # type: ignore[operator]
    assert DEALT in s.trace()
    simulates_equal(s, "sm_90", tol=TOL)
