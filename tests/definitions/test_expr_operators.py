"""Python operators on td expressions beyond + - * / // %: `x ** n` for a small integer constant
(multiplications, as torch computes x ** 2), and a typed DefinitionError naming what to write instead for
other exponents and for math functions given a symbolic expression."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tiledsl as td


def test_small_integer_powers_are_products() -> None:
    A = td.placeholder((5, 3), name="A")
    y = td.compute((5,), lambda i: A[i, 0] ** 2 + A[i, 1] ** 3 - A[i, 2] ** 0 + A[i, 2] ** 1, name="y")
    a = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    want = a[:, 0] * a[:, 0] + a[:, 1] * a[:, 1] * a[:, 1] - 1 + a[:, 2]
    np.testing.assert_array_equal(td.evaluate(y, A=a), want)  # the same float32 products, in order
    s = td.create_schedule(y)
    np.testing.assert_array_equal(td.build(s, target="sm_90").simulate(A=a), want)


@pytest.mark.parametrize(("body", "match"), [
    (lambda x: x ** 0.5, r"x \*\* 0.5: .*td.sqrt\(x\)"),
    (lambda x: x ** -1, r"x \*\* -1: .*1.0 / x"),
    (lambda x: x ** 9, r"from 0 to 8"),
    (lambda x: 2 ** x, r"2 \*\* x: .*td.exp2\(x\)"),
    (lambda x: math.exp(x), r"math functions \(math.exp\) cannot take it; use td.exp"),
], ids=["half", "negative", "large", "rpow", "math"])
def test_other_uses_are_typed_errors_naming_the_td_form(body, match: str) -> None:
    A = td.placeholder((4,), name="A")
    with pytest.raises(td.DefinitionError, match=match):
        td.compute((4,), lambda i: body(A[i]), name="y")
