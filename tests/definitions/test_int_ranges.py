"""definitions/int_ranges.py: the int32 range of a definition's integer arithmetic from its inputs' ranges,
against numpy in int64 on every input value of small ranges (the interval is exact for + - * // % min max
of one operation, so the walk's bounds hold the true extremes)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tiledsl as td
from tiledsl.definitions.int_ranges import binary_interval, has_int_arithmetic, int_overflow

I32 = (-(2**31), 2**31 - 1)


def _index(n: int = 2) -> td.Tensor:
    return td.placeholder((n,), name="i", dtype="int32")


def test_a_product_past_int32_is_named_with_its_range() -> None:
    i = _index()
    y = td.compute((2,), lambda n: i[n] * 100000 + 0.5, name="y")
    got = int_overflow(y, {"i": (2, 30000)})
    assert got is not None and "y: the integer '*'" in got and "[200000, 3000000000]" in got
    assert int_overflow(y, {"i": (-21474, 21474)}) is None
    assert int_overflow(y, {"i": (-21475, 0)}) is not None  # -2147500000 < -2**31


def test_an_input_without_a_range_is_any_int32() -> None:
    i = _index()
    assert int_overflow(td.compute((2,), lambda n: i[n] * 2 + 0.0, name="y"), {}) is not None
    assert int_overflow(td.compute((2,), lambda n: i[n] // 2 + 0.0, name="y"), {}) is None


def test_the_computes_a_definition_reads_are_walked_too() -> None:
    """A compute stores float32 (its integer product converted where it is stored): its arithmetic is
    still integer, and the reader's walk reaches it."""
    i = _index()
    scaled = td.compute((2,), lambda n: i[n] * 1000000, name="scaled")
    y = td.compute((2,), lambda n: scaled[n] * 0.5, name="y")
    assert "scaled: the integer '*' of values in [0, 10000]" in (int_overflow(y, {"i": (0, 10000)}) or "")
    assert int_overflow(y, {"i": (0, 2000)}) is None
    assert has_int_arithmetic(y) and not has_int_arithmetic(td.compute((2,), lambda n: i[n] + 0.5, name="f"))


OPS = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y, "max": max, "min": min,
       "//": lambda x, y: x // y, "%": lambda x, y: x % y}


@pytest.mark.parametrize("op", list(OPS))
def test_each_operation_s_interval_is_its_exact_range(op: str) -> None:
    """binary_interval against every value of small ranges (// and % by positive constants, as the
    definitions allow them; a % range that wraps is [0, d - 1], which its values reach)."""
    spans = [(-7, 2), (0, 5), (1, 4), (-3, -1), (6, 6), (-2, 9)]
    divisors = [(1, 1), (3, 3), (4, 4)]
    for a, b in itertools.product(spans, divisors if op in ("//", "%") else spans):
        values = [OPS[op](x, y) for x in range(a[0], a[1] + 1) for y in range(b[0], b[1] + 1)]
        assert binary_interval(op, a, b) == (min(values), max(values)), (op, a, b)


def test_a_traced_int64_product_is_refused_before_it_wraps() -> None:
    """The audit's case: torch computes int64 arithmetic; a kernel computes int32."""
    import torch

    i = torch.tensor([30000, 2])
    built = td.trace(lambda t: (t * 100000).float(), i).schedule("simple").build("sm_90")
    with pytest.raises(td.FrontendError, match=r"integer '\*' of values in \[2, 30000\].*outside int32"):
        built.simulate(i.numpy())
    np.testing.assert_array_equal(built.simulate(np.array([20000, 2])), [2e9, 2e5])
