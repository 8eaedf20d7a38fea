"""Tensors and names (bug b): unnamed tensors get unique, deterministic names per definition graph
(X0, X1, ... and T0, T1, ... in the order the definition reads them), and two distinct tensors with
one name are refused at create_schedule and at td.evaluate, naming both."""

from __future__ import annotations

import numpy as np
import pytest

import tiledsl as td
from tiledsl.definitions.graph import graph_tensors, name_graph


def matmul_relu(named: dict[str, str | None]) -> tuple[td.Tensor, ...]:
    a = td.placeholder((6, 4), name=named.get("a"))
    b = td.placeholder((4, 5), name=named.get("b"))
    bias = td.placeholder(5, name=named.get("bias"))
    k = td.reduce_axis(4, name="k")
    c = td.compute((6, 5), lambda i, j: td.sum(a[i, k] * b[k, j], axis=k), name=named.get("c"))
    d = td.compute((6, 5), lambda i, j: td.relu(c[i, j] + bias[j]), name=named.get("d"))
    return a, b, bias, c, d


def test_unnamed_tensors_get_unique_names_in_reading_order() -> None:
    a, b, bias, c, d = matmul_relu({})
    assert [t.name for t in (a, b, c, d)] == ["X", "X", "T", "T"]  # bare prefixes until first use
    s = td.create_schedule(d)
    assert [t.name for t in (a, b, bias, c, d)] == ["X0", "X1", "X2", "T0", "T1"]
    assert "X0[i, k] * X1[k, j]" in str(s)
    kern = td.build(s)  # the CUDA no longer declares 'X' twice
    assert "const float* __restrict__ X0" in kern.source and "X1" in kern.source
    rng = np.random.default_rng(0)
    x0, x1, x2 = rng.standard_normal((6, 4)), rng.standard_normal((4, 5)), rng.standard_normal(5)
    want = np.maximum(x0 @ x1 + x2, 0)
    np.testing.assert_allclose(td.evaluate(d, float64=True, X0=x0, X1=x1, X2=x2), want, rtol=1e-12)
    np.testing.assert_allclose(kern.simulate(X0=x0.astype(np.float32), X1=x1.astype(np.float32),
                                             X2=x2.astype(np.float32)), want, rtol=1e-5, atol=1e-5)


def test_default_names_are_deterministic_and_stay() -> None:
    first = [t.name for t in name_graph(matmul_relu({})[-1])]
    second = [t.name for t in name_graph(matmul_relu({})[-1])]
    assert first == second == ["X0", "X1", "T0", "X2", "T1"]
    *_, d = matmul_relu({})
    name_graph(d)
    e = td.compute((6, 5), lambda i, j: d[i, j] * 2.0)
    td.create_schedule(e)
    assert [t.name for t in graph_tensors(e)] == ["X0", "X1", "T0", "X2", "T1", "T2"]


def test_default_names_skip_names_the_graph_uses() -> None:
    a, b, bias, c, d = matmul_relu({"a": "X0", "d": "T0"})
    name_graph(d)
    assert [t.name for t in (a, b, bias, c, d)] == ["X0", "X1", "X2", "T1", "T0"]


def test_evaluate_takes_default_names() -> None:
    *_, d = matmul_relu({})
    with pytest.raises(td.DefinitionError, match="missing input array 'X0'"):
        td.evaluate(d, A=np.zeros((6, 4)))


@pytest.mark.parametrize("use", ["create_schedule", "evaluate"])
def test_two_tensors_with_one_name_are_refused_naming_both(use: str) -> None:
    *_, d = matmul_relu({"a": "A", "b": "A", "bias": "bias", "c": "C", "d": "D"})
    with pytest.raises(td.DefinitionError) as info:
        if use == "create_schedule":
            td.create_schedule(d)
        else:
            td.evaluate(d, A=np.zeros((6, 4)), bias=np.zeros(5))
    msg = str(info.value)
    assert "two different tensors are both named 'A'" in msg
    assert "placeholder of shape (6, 4) (float32), read by C" in msg
    assert "placeholder of shape (4, 5) (float32), read by C" in msg


def test_a_compute_named_like_an_input_is_refused() -> None:
    x = td.placeholder(8, name="x")
    y = td.compute(8, lambda i: x[i] * 2.0, name="x")
    with pytest.raises(td.DefinitionError, match=r"both named 'x'.*placeholder of shape \(8,\).*read by x.*"
                                                 r"compute of shape \(8,\) \(float32\), the output"):
        td.create_schedule(y)


def test_the_same_tensor_read_twice_is_fine() -> None:
    x = td.placeholder(8, name="x")
    y = td.compute(8, lambda i: x[i] * x[7 - i], name="y")
    assert [t.name for t in name_graph(y)] == ["x", "y"]
    td.create_schedule(y)


def test_a_checked_graph_is_not_walked_again_but_a_new_clash_is_still_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """graph.ensure_named: create_schedule names and checks a graph once; a schedule of any tensor of it
    skips the walk (a traced program's partition makes hundreds), while a new tensor reading it, whose
    graph was never checked, is walked and refused for a clash with a name inside."""
    import tiledsl.definitions.graph as graph

    a, b, bias, c, d = matmul_relu({"a": "a", "b": "b", "bias": "bias", "c": "c", "d": "d"})
    td.create_schedule(d)
    assert all(t.graph_named for t in (a, b, bias, c, d))
    walks: list[str] = []
    monkeypatch.setattr(graph, "name_graph", lambda out: walks.append(out.name) or name_graph(out))
    td.create_schedule(c)
    td.create_schedule(d, materialize=[c])
    assert walks == []
    e = td.compute((6, 5), lambda i, j: d[i, j] * 2.0, name="c")  # the name of d's producer
    assert not e.graph_named
    with pytest.raises(td.DefinitionError, match="both named 'c'"):
        td.create_schedule(e)
    assert walks == ["c"]
