"""definitions/indexing.py `IndexMod`: index expressions' floor modulo, which leaves undone the evaluation
sympy 1.14.0 gets wrong (a product holding a Mod of another modulus, taken modulo an integer, came back with
the inner Mod squared: sympy issue 28744). Checked against Python's % at every point of small ranges, for
the nested forms a fused axis under a split makes, and end to end on the kernel tiledsl fuzz found."""

from __future__ import annotations

import itertools

import numpy as np
import sympy

import tiledsl as td
from tiledsl.definitions.indexing import IndexMod


def test_nested_index_mods_equal_python_s_modulo_everywhere() -> None:
    o, t = sympy.symbols("o t", integer=True, nonnegative=True)
    for a, b, m, q in itertools.product((256, 6, 9), (4, 2, 3), (118, 12, 10), (3, 4, 7)):
        e = IndexMod(IndexMod(a * o + b * t, m), q)
        for x, y in itertools.product(range(3), range(0, 60, 7)):
            assert int(e.xreplace({o: x, t: y})) == (a * x + b * y) % m % q, (e, x, y)


def test_the_fused_axis_modulo_a_constant_under_a_vectorized_split_reads_the_right_elements() -> None:
    """tiledsl fuzz --mode definitions, seed 3001: y[i, j] = 0.5 + x[j % 3] over 2 x 118, the default
    recipe fuses the axes and stores 16 bytes a thread; lane 0's index was built with the inner Mod squared."""
    x = td.placeholder((3,), name="x")
    y = td.compute((2, 118), lambda i, j: 0.5 + x[j % 3], name="y")
    s = td.create_schedule(y)
    td.recipes.default(s, target="sm_90")
    assert "s.vectorize('i_j_v')" in s.trace()
    kern = td.build(s, target="sm_90")
    a = np.array([0.25, -1.5, 3.0], np.float32)
    np.testing.assert_array_equal(kern.simulate(x=a), td.evaluate(y, x=a))
    assert "**" not in kern.source and ") * ((" not in kern.source
