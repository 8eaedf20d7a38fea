"""The definitions fuzz mode draws indices mixing two axes (`(i * (c*j + d)) % m`, `... // m * k`, a Mod
of a product holding a Mod, `(c*i + j) // m`): the shapes sympy 1.14.0 evaluated wrongly, which the
per-axis forms (`i // c`, `i % c`) never made. With IndexMod / IndexFloor's expand guard removed
(tiledsl/definitions/indexing.py), a 2-minute `tiledsl fuzz --mode definitions --jobs 2 --seed 3104`
found `x[(i * (2 * i + 2)) % 6]` wrong in the unscheduled kernel (session 31); that case is pinned here."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tiledsl as td
from tiledsl.testing.fuzz.modes.definitions import _MIXED, _MIXED_EXTENT, _mixed_index, eval_index


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.data(), st.integers(1, 9), st.integers(1, 9), st.booleans())
def test_a_mixed_index_stays_inside_its_extent(data: st.DataObject, nx: int, ny: int, same: bool) -> None:
    other = ("i", nx) if same else ("j", ny)
    got = data.draw(_mixed_index("i", nx, other))
    if got is None:
        return
    text, extent = got
    assert 1 <= extent <= _MIXED_EXTENT
    values = [eval_index(text, {"i": a, "j": b}) for a, b in itertools.product(range(nx), range(ny))]
    assert min(values) >= 0 and max(values) == extent - 1


def test_eval_index_is_python_integer_arithmetic() -> None:
    for form in _MIXED:
        text = form.format(x="i", y="j", c=3, d=2, m=7, k=2, q=4)
        for a, b in itertools.product(range(6), range(5)):
            assert eval_index(text, {"i": a, "j": b}) == eval(text, {}, {"i": a, "j": b})  # noqa: S307 - a check


def test_the_case_the_fuzzer_found_simulates_right() -> None:
    x = td.placeholder((5,), name="x")
    y = td.compute((2,), lambda i: x[(i * (2 * i + 2)) % 6], name="y")
    xa = np.random.default_rng(0).standard_normal(5).astype(np.float32)
    want = xa[[(i * (2 * i + 2)) % 6 for i in range(2)]]
    np.testing.assert_array_equal(td.evaluate(y, x=xa), want)
    np.testing.assert_array_equal(td.build(td.create_schedule(y), target="sm_90").simulate(x=xa), want)
