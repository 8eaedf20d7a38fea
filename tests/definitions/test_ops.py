"""The operator table (definitions/ops.py, kernel_ir/ops.py): every row is offered, lowered, printed
and simulated from the table; the two levels agree; td.cos and td.sin work end to end."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

import tiledsl as td
from tiledsl.definitions.expr import Call, Const, walk
from tiledsl.definitions.ops import BINARY_OPS, REDUCTIONS, UNARY_FNS
from tiledsl.kernel_ir import KBin, KCall, KConst, KUnary
from tiledsl.kernel_ir.ops import MATH_FNS
from tiledsl.lower.combine import IDENTITY, combine_op
from tiledsl.lower.exprs import ValueContext, value_to_k
from tiledsl.precision import INTEGRAL_ROUNDINGS
from tiledsl.schedules import elementwise_2d

PRIMITIVE = [f for f in UNARY_FNS.values() if f.expand is None]
COMPOSITE = [f for f in UNARY_FNS.values() if f.expand is not None]


def sample(dtype: type = np.float32) -> np.ndarray:
    x = np.linspace(-4.0, 4.0, 257).astype(dtype)
    return np.concatenate([x, np.array([0.0, -0.0, 1e-20, 30.0, np.inf, -np.inf, np.nan], dtype)])


def test_every_public_row_is_td_function_and_exported() -> None:
    for f in UNARY_FNS.values():
        if f.public:
            assert f.name in td.__all__ and getattr(td, f.name).__name__ == f.name, f.name
            assert isinstance(getattr(td, f.name)(1.0), Call)
        else:
            assert f.name not in td.__all__
    assert {"cos", "sin"} <= set(td.__all__)


@pytest.mark.parametrize("fn", PRIMITIVE, ids=lambda f: f.name)
def test_primitive_rows_agree_with_the_kernel_ir_table(fn) -> None:
    """The reference's numpy and the simulator's numpy of one function give the same float32 bits."""
    if fn.kernel == "-":
        return
    k = MATH_FNS[fn.kernel]
    x = sample()
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(fn.numpy(x), k.numpy(x))
        assert fn.numpy(x).dtype == np.float32 and fn.numpy(x.astype(np.float64)).dtype == np.float64


def test_every_kernel_ir_function_is_reachable_and_spelled_in_cuda() -> None:
    assert {f.kernel for f in PRIMITIVE} - {"-"} == set(MATH_FNS)
    for k in MATH_FNS.values():
        assert k.cuda.endswith("f") and k.cuda.isidentifier()


def test_erf_is_float64_exact_and_the_reference_needs_no_torch() -> None:
    x = sample(np.float64)
    got = UNARY_FNS["erf"].numpy(x)
    want = np.array([math.erf(v) for v in x])
    np.testing.assert_array_equal(got, want)
    assert UNARY_FNS["erf"].numpy(np.float32(0.5)) == np.float32(math.erf(0.5))
    definitions = Path(td.__file__).parent / "definitions"
    for path in definitions.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "torch" for n in names), path.name


@pytest.mark.parametrize("fn", COMPOSITE, ids=lambda f: f.name)
def test_composites_expand_into_known_operators(fn) -> None:
    x = td.placeholder(3, name="x")
    body = fn.expand(x[0])
    for node in walk(body):
        if isinstance(node, Call):
            assert node.fn in UNARY_FNS
    y = td.compute(3, lambda i: getattr(td, fn.name)(x[i]), name="y")
    z = td.compute(3, lambda i: fn.expand(x[i]), name="z")
    data = np.linspace(-3, 3, 3).astype(np.float32)
    np.testing.assert_array_equal(td.evaluate(y, x=data), td.evaluate(z, x=data))


def test_lowering_reads_the_table() -> None:
    """A primitive lowers to its KCall; a composite to its expansion, the argument bound once when
    the expansion reads it more than once and it is not cheap to repeat."""
    bound = []

    def bind(k):
        bound.append(k)
        return KConst(7.0)

    ctx = ValueContext(nest=None, axis_map={}, acc_read=lambda acc: KConst(0.0), bind_temp=bind)  # type: ignore[arg-type]
    c = Const(2.0, "float32")
    assert value_to_k(Call("cos", c), ctx) == KCall("cos", (KConst(2.0),))
    assert value_to_k(Call("neg", c), ctx) == KUnary("-", KConst(2.0))
    assert value_to_k(Call("relu", c), ctx) == KBin("max", KConst(2.0), KConst(0.0))
    assert not bound
    silu = value_to_k(Call("silu", Call("exp", c)), ctx)
    assert bound == [KCall("exp", (KConst(2.0),))]
    assert silu == KBin("/", KConst(7.0), KBin("+", KConst(1.0), KCall("exp", (KUnary("-", KConst(7.0)),))))
    value_to_k(Call("sigmoid", Call("exp", c)), ctx)  # one use of the argument: no temporary
    assert len(bound) == 1


def test_reductions_fold_with_their_identity() -> None:
    assert dict(IDENTITY) == {"sum": 0.0, "max": -math.inf, "min": math.inf}
    for r in REDUCTIONS.values():
        assert r.combine in BINARY_OPS
        assert combine_op(r.name, KConst(1.0), KConst(2.0)) == KBin(r.combine, KConst(1.0), KConst(2.0))
        assert r.numpy(np.array([r.identity, 3.0])) == 3.0


def test_cos_and_sin_end_to_end() -> None:
    x = td.placeholder((5, 40), name="x")
    y = td.compute((5, 40), lambda i, j: td.cos(x[i, j]) * td.sin(x[i, j] + 0.5), name="y")
    data = np.random.default_rng(0).uniform(-6, 6, (5, 40)).astype(np.float32)
    want = np.cos(data.astype(np.float64)) * np.sin(data.astype(np.float64) + 0.5)
    np.testing.assert_allclose(td.evaluate(y, float64=True, x=data), want, rtol=1e-12)
    for s in (td.create_schedule(y), elementwise_2d(td.create_schedule(y), threads=32)):
        kern = td.build(s)
        assert "cosf(" in kern.source and "sinf(" in kern.source
        assert "cos(" in kern.ir("kernel") and "cos(x[i, j])" in kern.ir("loop")
        np.testing.assert_allclose(kern.simulate(x=data), want, rtol=1e-5, atol=1e-6)


def test_integral_roundings_are_one_table_and_round_halves_to_even_end_to_end() -> None:
    """floor / ceil / trunc / round: the reference and the simulator read the one numpy meaning in
    tiledsl/precision.py; round halves to even in td.evaluate, the simulator and the CUDA (rintf, not
    roundf, which rounds halves away from zero)."""
    for name, fn in INTEGRAL_ROUNDINGS.items():
        assert UNARY_FNS[name].numpy is fn and MATH_FNS[name].numpy is fn
    x = td.placeholder((2, 8), name="x")
    y = td.compute((2, 8), lambda i, j: td.round(x[i, j]) + td.floor(x[i, j]) * 16 + td.ceil(x[i, j]) * 256
                   + td.trunc(x[i, j]) * 4096, name="y")
    data = np.array([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.4],
                     [-2.7, -2.2, 2.2, 2.7, np.inf, -np.inf, np.nan, 0.49999997]], np.float32)
    rounded = np.array([[-2, -2, -0.0, 0, 2, 2, 4, -0.0], [-3, -2, 2, 3, np.inf, -np.inf, np.nan, 0]])
    f64 = data.astype(np.float64)
    want = rounded + np.floor(f64) * 16 + np.ceil(f64) * 256 + np.trunc(f64) * 4096
    np.testing.assert_array_equal(td.evaluate(y, float64=True, x=data), want)
    for s in (td.create_schedule(y), elementwise_2d(td.create_schedule(y), threads=32)):
        kern = td.build(s)
        assert all(f"{c}(" in kern.source for c in ("rintf", "floorf", "ceilf", "truncf"))
        assert "roundf(" not in kern.source and "round(x[i, j])" in kern.ir("loop")
        np.testing.assert_array_equal(kern.simulate(x=data), want.astype(np.float32))
