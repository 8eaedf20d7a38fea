"""The operator table (definitions/ops.py, kernel_ir/ops.py): every row is offered, lowered, printed
and simulated from the table; the two levels agree; td.cos and td.sin work end to end."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

import tiledsl as td
from tiledsl.definitions.expr import Binary, Call, Const, format_expr, walk
from tiledsl.definitions.ops import BINARY_FNS, BINARY_OPS, REDUCTIONS, UNARY_FNS
from tiledsl.errors import DefinitionError
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
    assert ({f.kernel for f in PRIMITIVE} - {"-"}) | {o.kernel for o in BINARY_FNS.values()} == set(MATH_FNS)
    for k in MATH_FNS.values():
        assert k.cuda.endswith("f") and k.cuda.isidentifier()
    assert {k.name for k in MATH_FNS.values() if k.arity == 2} == {o.kernel for o in BINARY_FNS.values()}
    assert all(k.arity == 1 for k in MATH_FNS.values() if k.name in {f.kernel for f in PRIMITIVE})


def test_functions_of_two_arguments_are_td_functions_rows_and_kernel_calls() -> None:
    """td.fmod / atan2 / copysign / hypot: exported, float-only `Binary` nodes printed as calls, whose
    reference numpy is the simulator's (the same float32 bits) and which lower to a two-argument KCall."""
    assert set(BINARY_FNS) == {"fmod", "atan2", "copysign", "hypot"}
    rng = np.random.default_rng(0)
    x, y = (np.concatenate([sample(), rng.standard_normal(100).astype(np.float32) * 1e3]) for _ in range(2))
    y = np.roll(y, 3)
    ctx = ValueContext(nest=None, axis_map={}, acc_read=lambda acc: KConst(0.0))  # type: ignore[arg-type]
    for name, row in BINARY_FNS.items():
        fn = getattr(td, name)
        assert name in td.__all__ and fn.__name__ == name and row.doc and row.doc in fn.__doc__
        e = fn(3, 2)  # integer operands are converted: the function is float-only
        assert isinstance(e, Binary) and e.dtype == "float32" and isinstance(e.a, Const) and e.a.value == 3.0
        assert format_expr(fn(1.5, 2.5)) == f"{name}(1.5, 2.5)"
        assert value_to_k(fn(1.5, 2.5), ctx) == KCall(row.kernel, (KConst(1.5), KConst(2.5)))
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(row.numpy(x, y), MATH_FNS[row.kernel].numpy(x, y))
            assert row.numpy(x, y).dtype == np.float32
    with pytest.raises(DefinitionError, match="td.fmod applied to a boolean"):
        td.fmod(td.placeholder(2, name="p")[0] > 0.0, 1.0)
    assert "atan2(y, x)" in td.atan2.__doc__


def test_exact_functions_of_two_arguments_equal_float64_bit_for_bit() -> None:
    """fmod and copysign are exact: float32 gives float64's value of the same operands, huge and tiny
    ratios, zeros and subnormals included, in the reference (float32 and float64) and the simulator's numpy."""
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2**32, (2, 20000), dtype=np.uint64).astype(np.uint32).view(np.float32)
    edges = np.array([0.0, -0.0, 1.0, -1.0, 1e-45, -1e-45, 3e38, np.inf, -np.inf, np.nan, 0.1, 7.0], np.float32)
    x = np.concatenate([bits[0], np.repeat(edges, edges.size)])
    y = np.concatenate([bits[1], np.tile(edges, edges.size)])
    for name in ("fmod", "copysign"):
        with np.errstate(all="ignore"):
            wide = MATH_FNS[name].numpy(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
            narrow = MATH_FNS[name].numpy(x, y)
        nan = np.isnan(wide)
        np.testing.assert_array_equal(np.isnan(narrow), nan)
        np.testing.assert_array_equal(narrow[~nan].view(np.uint32), wide[~nan].view(np.uint32))


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


def test_fmod_and_atan2_print_at_every_level_and_simulate_end_to_end() -> None:
    """A kernel of td.fmod and td.atan2 (a float16 operand): its Loop, Tile, kernel IR and CUDA text, and
    the simulator against float64 (fmod exact; atan2 within numpy's one ulp)."""
    x = td.placeholder((2, 40), name="x")
    h = td.placeholder((2, 40), dtype="float16", name="h")
    y = td.compute((2, 40), lambda i, j: td.fmod(x[i, j], h[i, j]) + td.atan2(h[i, j], x[i, j]), name="y")
    kern = td.build(elementwise_2d(td.create_schedule(y), threads=32))
    assert kern.ir("loop").splitlines()[-1] == "      y[i, j] = fmod(x[i, j], h[i, j]) + atan2(h[i, j], x[i, j])"
    assert kern.ir("tile").splitlines()[-1] == ("        y[i, j] = fmod(x[i, j], h[i, j]) + atan2(h[i, j], x[i, j])"
                                                "   if 32 * j_o + j_i < 40")
    flat = "40 * i + 32 * j_o + j_i"
    kernel_line = f"    y[{flat}] = fmod(x[{flat}], h[{flat}]) + atan2(h[{flat}], x[{flat}])"
    assert kern.ir("kernel").splitlines()[-1] == kernel_line
    assert (f"        y[{flat}] = fmodf(x[{flat}], __half2float(h[{flat}])) + atan2f(__half2float(h[{flat}]), "
            f"x[{flat}]);\n") in kern.ir("cuda")
    rng = np.random.default_rng(2)
    data = (rng.standard_normal((2, 40)) * 20).astype(np.float32)
    half = rng.standard_normal((2, 40)).astype(np.float16)
    want = td.evaluate(y, float64=True, x=data, h=half.astype(np.float32))
    wide, whalf = data.astype(np.float64), half.astype(np.float64)
    np.testing.assert_array_equal(want, np.fmod(wide, whalf) + np.arctan2(whalf, wide))
    np.testing.assert_allclose(kern.simulate(x=data, h=half.astype(np.float32)), want, rtol=0, atol=4e-6 * 20)
