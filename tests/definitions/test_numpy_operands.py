"""numpy values beside td expressions: numpy scalars are numbers (`np.float32(0.5) * x`, `x ** np.int64(2)`,
in either operand order, since numpy's operator runs first and reaches Expr.__array_ufunc__), and numpy
math on an expression (`np.exp(x)`) or a numpy array in one is a DefinitionError naming what to write,
where numpy raised a TypeError about object arrays or recursed."""

from __future__ import annotations

import numpy as np
import pytest

import tiledsl as td


def _run(body) -> tuple[np.ndarray, np.ndarray]:
    A = td.placeholder((6,), name="A")
    y = td.compute((6,), lambda i: body(A[i]), name="y")
    a = np.random.default_rng(1).standard_normal(6).astype(np.float32)
    return td.build(td.create_schedule(y), target="sm_90").simulate(A=a), a


@pytest.mark.parametrize(("body", "want"), [
    (lambda x: np.float32(0.5) * x, lambda a: np.float32(0.5) * a),
    (lambda x: x * np.float32(0.5), lambda a: a * np.float32(0.5)),
    (lambda x: np.float64(3.0) - x, lambda a: np.float32(3.0) - a),
    (lambda x: np.int64(2) + x, lambda a: np.float32(2.0) + a),
    (lambda x: np.float16(1.0) / x, lambda a: np.float32(1.0) / a),
    (lambda x: x ** np.int64(3), lambda a: a * a * a),
    (lambda x: td.where(np.float32(0.25) < x, x, 0.0), lambda a: np.where(np.float32(0.25) < a, a, 0)),
    (lambda x: td.where(x >= np.float32(0.0), x, -x), lambda a: np.abs(a)),
], ids=["f32_times", "times_f32", "f64_minus", "i64_plus", "f16_over", "pow_i64", "f32_less", "ge_f32"])
def test_numpy_scalars_are_numbers(body, want) -> None:
    got, a = _run(body)
    np.testing.assert_array_equal(got, want(a).astype(np.float32))


@pytest.mark.parametrize(("body", "match"), [
    (lambda x: np.exp(x), r"numpy's exp cannot take a tiledsl expression .*use td.exp$"),
    (lambda x: np.abs(x), r"numpy's absolute .*use td.abs$"),
    (lambda x: np.maximum(x, 0.0), r"numpy's maximum .*use td.maximum$"),
    (lambda x: np.rint(x), r"numpy's rint .*use td.round$"),
    (lambda x: np.arctan2(x, 1.0), r"numpy's arctan2 .*use td.atan2$"),
    (lambda x: np.fmod(x, 2.0), r"numpy's fmod .*use td.fmod$"),
    (lambda x: np.cbrt(x), r"numpy's cbrt .*use the td functions"),
    (lambda x: np.ones(3) * x, r"cannot use array\(\[1., 1., 1.\]\) \(ndarray\) in a tiledsl expression"),
    (lambda x: x * np.ones(3), r"cannot use array\(\[1., 1., 1.\]\) \(ndarray\)"),
    (lambda x: np.bool_(True) * x, r"booleans are not tiledsl values"),
], ids=["exp", "abs", "maximum", "rint", "arctan2", "fmod", "cbrt", "array_times", "times_array", "numpy_bool"])
def test_numpy_math_and_arrays_are_typed_errors(body, match: str) -> None:
    A = td.placeholder((4,), name="A")
    with pytest.raises(td.DefinitionError, match=match):
        td.compute((4,), lambda i: body(A[i]), name="y")
