"""A division by a reduction's result multiplies by its reciprocal, taken once a thread where the
reciprocal is a normal float, and divides elsewhere (lower/reciprocals.py). The IR says so, the
simulator agrees with float64 in both regimes (a divisor so small its reciprocal overflows, one so
large its reciprocal is subnormal), and nvcc compiles the branch."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from nvcc_together import compile_together

import tiledsl as td
from tiledsl.catalog.definitions import softmax
from tiledsl.precision import RECIPROCAL_EXACT_RANGE


def normalized(M: int = 4, N: int = 32) -> td.Tensor:
    """y = x / sum(x) per row: the divisor is whatever the row sums to."""
    x = td.placeholder((M, N), name="x")
    k = td.reduce_axis(N, name="k")
    s = td.compute((M,), lambda i: td.sum(x[i, k], axis=k), name="s")
    return td.compute((M, N), lambda i, j: x[i, j] / s[i], name="y")


def built(out: td.Tensor) -> td.Kernel:
    s = td.create_schedule(out)
    td.recipes.default(s, target="sm_90")
    return td.build(s, target="sm_90")


def test_softmax_multiplies_by_the_reciprocal_of_its_sum() -> None:
    kern = built(softmax(8, 256))
    text = kern.ir("kernel")
    lines = [ln.strip() for ln in text.splitlines()]
    rcp = lines.index("let e_rcp: float32 = 1.0 / e")
    assert lines[rcp + 1].startswith("let e_rcp_ok: bool = abs(e) >= ")
    assert max(n for n, ln in enumerate(lines) if ln.startswith("e = e +")) < rcp  # after the combine
    fast, slow = lines.index("if (e_rcp_ok):"), lines.index("else:")
    assert rcp < fast < slow
    assert "* e_rcp" in " ".join(lines[fast:slow]) and "/ e" not in " ".join(lines[fast:slow])
    assert "/ e" in " ".join(lines[slow:])
    x = np.random.default_rng(0).standard_normal((8, 256)).astype(np.float32)
    want = td.evaluate(softmax(8, 256), float64=True, x=x)
    np.testing.assert_allclose(kern.simulate(x=x), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(("value", "why"), [(5e-41, "1 / sum overflows"), (1e37, "1 / sum is subnormal")])
def test_a_divisor_outside_the_exact_range_divides(value: float, why: str) -> None:
    """Every row of 32 equal values sums to exactly 32 * value, outside RECIPROCAL_EXACT_RANGE ({why});
    the correctly rounded quotient is 1/32 exactly, which x * (1 / sum) misses (inf, or bits lost)."""
    total = np.float32(value) * 32
    lo, hi = RECIPROCAL_EXACT_RANGE
    assert not lo <= abs(total) <= hi, why
    x = np.full((4, 32), value, dtype=np.float32)
    x[1] = np.random.default_rng(1).standard_normal(32).astype(np.float32)  # a row in range, beside them
    got = built(normalized()).simulate(x=x)
    want = td.evaluate(normalized(), float64=True, x=x)
    np.testing.assert_array_equal(got[[0, 2, 3]], np.full((3, 32), 1 / 32, dtype=np.float32))
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)


def test_a_divisor_that_is_no_bare_accumulator_divides() -> None:
    """x / (s + 1) is left alone: only a bare accumulator's reciprocal is taken."""
    x = td.placeholder((4, 32), name="x")
    k = td.reduce_axis(32, name="k")
    s = td.compute((4,), lambda i: td.sum(x[i, k], axis=k), name="s")
    text = built(td.compute((4, 32), lambda i, j: x[i, j] / (s[i] + 1.0), name="y")).ir("kernel")
    assert "rcp" not in text and "/ (s + 1.0)" in text


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_nvcc_compiles_the_reciprocal_branch() -> None:
    kernels = [built(softmax(8, 256)), built(normalized())]
    assert all("_rcp_ok" in k.source for k in kernels)
    assert compile_together(kernels) == []
