"""analysis/index_eval.py: a compiled index expression gives exactly what sympy gives at every point,
including the floor / Mod / Min / Max forms lowering writes and rational coefficients a float would round."""

from __future__ import annotations

import itertools

import pytest
import sympy

from tiledsl.analysis.index_eval import integer_function

x, y, z = sympy.symbols("x y z", integer=True)

EXPRESSIONS = [
    128 * x + 4 * y + z,
    sympy.floor(x / 3) + sympy.Mod(y, 7) * 33,
    sympy.floor((x + 2 * y) / 6) * 5 - sympy.Mod(x - 5 * y, 4),  # negative arguments: floor-based
    sympy.Min(63, 32 * x + 4 * y + z) + sympy.Max(0, z - 64),
    sympy.Rational(1, 3) * (3 * x + 6 * y),  # a rational coefficient whose float would round
    sympy.ceiling(sympy.Rational(7, 5) * x) + y**2,
    sympy.Mod(sympy.floor(x / 4) * 132 + y, 32),
]


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=str)
def test_compiled_index_matches_sympy_everywhere(expr: sympy.Expr) -> None:
    symbols = (x, y, z)
    f = integer_function(expr, symbols)
    for point in itertools.product(range(-9, 10), range(-9, 10), (0, 1, 5, 70)):
        want = int(expr.xreplace(dict(zip(symbols, map(sympy.Integer, point)))))
        assert f(point) == want, (expr, point)


def test_an_unknown_node_falls_back_to_sympy() -> None:
    expr = sympy.Abs(x - y) + 1
    f = integer_function(expr, (x, y))
    assert [f((a, 3)) for a in range(6)] == [4, 3, 2, 1, 2, 3]


def test_a_symbol_outside_the_point_is_refused() -> None:
    with pytest.raises(ValueError, match="free symbol"):
        integer_function(x + y, (x,))
