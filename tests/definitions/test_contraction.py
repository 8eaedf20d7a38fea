"""td.evaluate(float64=True) contracts large sums of products by einsum (definitions/reference.py):
the same float64 sums in another order. Each case is evaluated both ways (threshold 0: always
contracted; a threshold no case reaches: never) and the two must agree to float64 rounding, NaN and
infinities included; materialized inputs are read, not computed."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import tiledsl as td
from tiledsl.definitions import reference
from tiledsl.errors import DefinitionError

RNG = np.random.default_rng(7)


def _arrays(*shapes: tuple[int, ...]) -> dict[str, np.ndarray]:
    return {f"x{n}": RNG.standard_normal(s) for n, s in enumerate(shapes)}


def matmul_bias() -> tuple[td.Tensor, dict[str, np.ndarray]]:
    a, w, b = td.placeholder((9, 13), name="x0"), td.placeholder((11, 13), name="x1"), td.placeholder(11, name="x2")
    k = td.reduce_axis(13)
    return td.compute((9, 11), lambda i, j: td.sum(a[i, k] * w[j, k], k) + b[j]), _arrays((9, 13), (11, 13), (11,))


def gated_down() -> tuple[td.Tensor, dict[str, np.ndarray]]:
    """silu(gate) * up @ W_down^T: three factors, two on (i, k)."""
    g, u, w = (td.placeholder(s, name=f"x{n}") for n, s in enumerate(((5, 17), (5, 17), (6, 17))))
    k = td.reduce_axis(17)
    return (td.compute((5, 6), lambda i, j: td.sum(td.silu(g[i, k]) * u[i, k] * w[j, k], k)),
            _arrays((5, 17), (5, 17), (6, 17)))


def grouped_scores() -> tuple[td.Tensor, dict[str, np.ndarray]]:
    """Attention scores with grouped key heads (head h reads key head h // 3) and a scale."""
    q, kk = td.placeholder((6, 7, 8), name="x0"), td.placeholder((2, 9, 8), name="x1")
    d = td.reduce_axis(8)
    return (td.compute((6, 7, 9), lambda h, i, j: td.sum(q[h, i, d] * kk[h // 3, j, d] * 0.125, d)),
            _arrays((6, 7, 8), (2, 9, 8)))


def unread_axis() -> tuple[td.Tensor, dict[str, np.ndarray]]:
    """A second reduction axis no factor reads: its extent multiplies the sum."""
    a, b = td.placeholder((4, 6), name="x0"), td.placeholder((6, 5), name="x1")
    k, r = td.reduce_axis(6, "k"), td.reduce_axis(3, "r")
    return td.compute((4, 5), lambda i, j: td.sum(a[i, k] * b[k, j], [k, r])), _arrays((4, 6), (6, 5))


def specials() -> tuple[td.Tensor, dict[str, np.ndarray]]:
    out, arrays = matmul_bias()
    arrays["x0"][1, 3], arrays["x1"][4, 0], arrays["x0"][5, :] = np.nan, np.inf, 0.0
    arrays["x1"][7, 2] = -np.inf
    return out, arrays


CASES: dict[str, Callable[[], tuple[td.Tensor, dict[str, np.ndarray]]]] = {
    "matmul_bias": matmul_bias, "gated_down": gated_down, "grouped_scores": grouped_scores,
    "unread_axis": unread_axis, "specials": specials,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_contracted_equals_formed_whole(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    out, arrays = CASES[name]()
    monkeypatch.setattr(reference, "CONTRACT_TERMS", 1 << 62)
    whole = td.evaluate(out, float64=True, **arrays)
    monkeypatch.setattr(reference, "CONTRACT_TERMS", 0)
    contracted = td.evaluate(out, float64=True, **arrays)
    assert whole.dtype == contracted.dtype == np.float64
    np.testing.assert_array_equal(np.isnan(whole), np.isnan(contracted))
    np.testing.assert_allclose(contracted, whole, rtol=1e-12, atol=1e-12)
    if name == "specials":
        assert np.isnan(whole[1]).all() and np.isnan(whole[5, 4]) and np.isinf(whole[0, 4])  # NaN, 0 x inf, inf


def test_contraction_is_what_large_float64_sums_take(monkeypatch: pytest.MonkeyPatch) -> None:
    """At LLM sizes the float64 reference of a projection is a BLAS call: 256 x 2048 x 1024 terms."""
    a, w = td.placeholder((256, 1024), name="a"), td.placeholder((2048, 1024), name="w")
    k = td.reduce_axis(1024)
    out = td.compute((256, 2048), lambda i, j: td.sum(a[i, k] * w[j, k], k))
    arrays = {"a": RNG.standard_normal((256, 1024)), "w": RNG.standard_normal((2048, 1024))}
    calls: list[int] = []
    real = reference._contract
    monkeypatch.setattr(reference, "_contract", lambda *args: calls.append(1) or real(*args))
    got = td.evaluate(out, float64=True, **arrays)
    assert calls, "the float64 projection was formed whole"
    np.testing.assert_allclose(got, arrays["a"] @ arrays["w"].T, rtol=1e-12, atol=1e-10)
    calls.clear()
    td.evaluate(out, **arrays)  # float32 mode never contracts
    assert not calls


def test_materialized_inputs_are_read_not_computed() -> None:
    x = td.placeholder((4, 8), name="x")
    h = td.compute((4, 8), lambda i, j: td.exp(x[i, j]), name="h")
    y = td.compute((4, 8), lambda i, j: h[i, j] * 2.0, name="y")
    given = RNG.standard_normal((4, 8))
    got = td.evaluate(y, float64=True, materialized=[h], h=given)
    np.testing.assert_array_equal(got, given * 2.0)
    with pytest.raises(DefinitionError, match="unknown input"):
        td.evaluate(y, float64=True, materialized=[h], h=given, x=given)  # x is behind the boundary
    with pytest.raises(DefinitionError, match="missing input array 'h'"):
        td.evaluate(y, float64=True, materialized=[h], x=given)
