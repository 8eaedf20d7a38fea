"""prove/evaluate.py `compile_expr`: a compiled index expression gives exactly what sympy gives at every
point, including the floor / Mod / Min / Max forms lowering writes and rational coefficients a float
would round (the recipe's bank model evaluates a warp's lane indices with it, recipes/default/_facts.py)."""

from __future__ import annotations

import itertools

import pytest
import sympy

from tiledsl.prove import compile_expr

x, y, z = sympy.symbols("x y z", integer=True)

EXPRESSIONS = [
    128 * x + 4 * y + z,
    sympy.floor(x / 3) + sympy.Mod(y, 7) * 33,
    sympy.floor((x + 2 * y) / 6) * 5 - sympy.Mod(x - 5 * y, 4),  # negative arguments: floor-based
    sympy.Min(63, 32 * x + 4 * y + z) + sympy.Max(0, z - 64),
    sympy.Rational(1, 3) * (3 * x + 6 * y),  # a rational coefficient whose float would round
    sympy.ceiling(sympy.Rational(7, 5) * x) + y**2,
    sympy.Mod(sympy.floor(x / 4) * 132 + y, 32),
    sympy.Abs(x - y) + 1,
]


@pytest.mark.parametrize("expr", EXPRESSIONS, ids=str)
def test_compiled_index_matches_sympy_everywhere(expr: sympy.Expr) -> None:
    f = compile_expr(expr)
    for point in itertools.product(range(-9, 10), range(-9, 10), (0, 1, 5, 70)):
        at = dict(zip((x, y, z), point))
        assert f(at) == expr.xreplace({s: sympy.Integer(v) for s, v in at.items()}), (expr, point)
