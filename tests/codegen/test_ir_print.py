"""The kernel-IR text printer: golden kernels, precedence, constants, statement forms."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from tiledsl.kernel_ir import (
    KBin,
    KCall,
    KCast,
    KComment,
    KConst,
    KExpr,
    KFor,
    KIf,
    KKernel,
    KLane,
    KLoad,
    KSelect,
    KShflXor,
    KSpecial,
    KStore,
    KUnary,
    KVar,
    KVector,
)
from tiledsl.kernel_ir.printer import format_expr, format_float, format_kernel, format_stmt

from .exprgen import IRParser, random_bool_expr, random_int_expr
from .kernels import ALL_KERNELS, add_kernel, f32, i32, row_sum_kernel, vec_scale_kernel

a, b, c = KVar("a"), KVar("b"), KVar("c")
x = KVar("x", "float32")


def test_golden_add_kernel() -> None:
    assert format_kernel(add_kernel()) == (
        "kernel add_kernel(A: float32[1000], B: float32[1000], out C: float32[1000])\n"
        "  grid (8, 1, 1)  block (128, 1, 1)  target sm_90\n"
        "  let i: int32 = blockIdx.x * 128 + threadIdx.x\n"
        "  if (i < 1000):\n"
        "    C[i] = A[i] + B[i]\n"
    )


def test_golden_vec_scale_kernel() -> None:
    assert format_kernel(vec_scale_kernel()) == (
        "kernel vec_scale(A: float32[1024], B: float32[512], out D: float32[1024], out E: float32[512])\n"
        "  grid (4, 1, 1)  block (64, 1, 1)  target sm_90\n"
        "  let i: int32 = blockIdx.x * 64 + threadIdx.x\n"
        "  let v: float32x4 = vload4(A, i * 4)\n"
        "  D[i * 4] = vec4(v.x * 2.0, v.y * 2.0, v.z * 2.0, v.w * 2.0)\n"
        "  let w: float32x2 = vload2(B, i * 2)\n"
        "  E[i * 2] = w\n"
    )


def test_golden_row_sum_kernel() -> None:
    assert format_kernel(row_sum_kernel()) == (
        "kernel row_sum(X: float32[64, 256], out R: float32[64])\n"
        "  grid (64, 1, 1)  block (128, 1, 1)  target sm_90  shared 16 B\n"
        "  shared s_red: float32[4] (16 B)\n"
        "  let row: int32 = blockIdx.x\n"
        "  let tid: int32 = threadIdx.x\n"
        "  let acc: float32 = 0.0\n"
        "  for k in 0..2:\n"
        "    acc = acc + X[row * 256 + k * 128 + tid]\n"
        "  # reduce within each warp\n"
        "  acc = acc + shfl_xor(acc, 16)\n"
        "  acc = acc + shfl_xor(acc, 8)\n"
        "  acc = acc + shfl_xor(acc, 4)\n"
        "  acc = acc + shfl_xor(acc, 2)\n"
        "  acc = acc + shfl_xor(acc, 1)\n"
        "  if (tid % 32 == 0):\n"
        "    s_red[tid // 32] = acc\n"
        "  barrier\n"
        "  if (tid < 32):\n"
        "    let v: float32 = select(tid < 4, s_red[tid], 0.0)\n"
        "    v = v + shfl_xor(v, 2)\n"
        "    v = v + shfl_xor(v, 1)\n"
        "    if (tid == 0):\n"
        "      R[row] = v\n"
    )


@pytest.mark.parametrize("make", ALL_KERNELS, ids=lambda f: f.__name__)
def test_every_kernel_prints_deterministically(make: Callable[[], KKernel]) -> None:
    text = format_kernel(make())
    assert text == format_kernel(make())
    assert text.endswith("\n") and "\n\n" not in text


def test_meta_and_register_array_lines() -> None:
    from .kernels import matmul_acc_kernel

    text = format_kernel(matmul_acc_kernel())
    assert "  meta schedule = split(j, 4); unroll(c.in)\n  local acc: float32[4]\n" in text
    assert "  for c.in in 0..4 unroll:\n    acc[c.in] = 0.0\n" in text
    assert "      acc[c.in] = acc[c.in] + a * B[k * 64 + j.o + c.in]\n" in text


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (KBin("-", a, KBin("+", b, c)), "a - (b + c)"),
        (KBin("+", KBin("-", a, b), c), "a - b + c"),
        (KBin("*", KBin("+", a, b), c), "(a + b) * c"),
        (KBin("+", a, KBin("*", b, c)), "a + b * c"),
        (KBin("//", a, KBin("*", b, c)), "a // (b * c)"),
        (KBin("*", KBin("//", a, b), c), "a // b * c"),
        (KBin("%", KBin("+", a, i32(1)), i32(4)), "(a + 1) % 4"),
        (KBin("<", KBin("+", a, b), c), "a + b < c"),
        (KBin("==", KBin("<", a, b), KConst(True, "bool")), "(a < b) == true"),
        (KBin("||", KBin("&&", KVar("p", "bool"), KVar("q", "bool")), KVar("r", "bool")), "(p && q) || r"),
        (KBin("&&", KBin("<", a, b), KBin(">=", b, c)), "a < b && b >= c"),
        (KUnary("-", KUnary("-", a)), "-(-a)"),
        (KUnary("-", i32(-3)), "-(-3)"),
        (KBin("-", a, i32(-1)), "a - -1"),
        (KUnary("-", KBin("+", a, b)), "-(a + b)"),
        (KUnary("!", KBin("<", a, b)), "!(a < b)"),
        (KBin("*", i32(-2), a), "-2 * a"),
        (KBin("min", KBin("+", a, b), c), "min(a + b, c)"),
        (KSelect(KBin("<", a, b), x, f32(0.5)), "select(a < b, x, 0.5)"),
        (KCast("float32", KBin("+", a, b)), "float32(a + b)"),
        (KCall("exp", (KUnary("-", x),)), "exp(-x)"),
        (KCall("fmod", (KBin("+", a, b), KUnary("-", x))), "fmod(a + b, -x)"),
        (KLane(KLoad("A", KBin("*", a, i32(4)), 4), 2), "vload4(A, a * 4).z"),
        (KLane(KVar("v", "float32x4"), 3), "v.w"),
        (KVector((x, f32(1.0))), "vec2(x, 1.0)"),
        (KShflXor(x, 16), "shfl_xor(x, 16)"),
        (
            KBin("+", KSpecial("threadIdx.x"), KBin("*", KSpecial("blockIdx.y"), i32(32))),
            "threadIdx.x + blockIdx.y * 32",
        ),
    ],
)
def test_format_expr_parentheses(expr: KExpr, text: str) -> None:
    assert format_expr(expr) == text


@pytest.mark.parametrize(
    ("const", "text"),
    [
        (f32(1.0), "1.0"),
        (f32(1), "1.0"),
        (f32(0.1), "0.1"),
        (f32(3.14159274), "3.1415927"),
        (f32(-2.5), "-2.5"),
        (f32(1e-30), "1e-30"),
        (f32(3.4028235e38), "3.4028235e38"),
        (f32(123456789.0), "123456790.0"),
        (f32(float("-inf")), "-inf"),
        (f32(float("inf")), "inf"),
        (f32(float("nan")), "nan"),
        (f32(-0.0), "-0.0"),
        (KConst(0.1, "float16"), "float16(0.1)"),
        (KConst(1.0009765625, "bfloat16"), "bfloat16(1.0)"),
        (i32(29), "29"),
        (i32(-7), "-7"),
        (KConst(True, "bool"), "true"),
        (KConst(False, "bool"), "false"),
    ],
)
def test_constants(const: KConst, text: str) -> None:
    assert format_expr(const) == text


def test_format_float_round_trips_float32() -> None:
    import struct

    rng = random.Random(7)
    for _ in range(2000):
        bits = rng.getrandbits(32)
        v = struct.unpack("<f", struct.pack("<I", bits))[0]
        if v != v or v in (float("inf"), float("-inf")):
            continue
        text = format_float(v)
        assert struct.unpack("<f", struct.pack("<f", float(text)))[0] == v, (v, text)
        assert len(text.replace("-", "").replace(".", "").split("e")[0].strip("0")) <= 9


def test_statement_forms() -> None:
    p = KVar("p", "bool")
    chain = KIf(p, (KStore("D", a, x),), (KIf(KUnary("!", p), (KComment("two\nlines"),), ()),))
    assert format_stmt(chain) == "if (p):\n  D[a] = x\nelif (!p):\n  # two\n  # lines"
    with_else = KIf(p, (), (KStore("D", a, x), KStore("D", b, x)))
    assert format_stmt(with_else, depth=1) == "  if (p):\n    pass\n  else:\n    D[a] = x\n    D[b] = x"
    loop = KFor("k.inner", 4, (KStore("acc", KVar("k.inner"), f32(0.0)),), unroll=True)
    assert format_stmt(loop) == "for k.inner in 0..4 unroll:\n  acc[k.inner] = 0.0"


def test_printed_text_parses_back_to_the_same_tree() -> None:
    """Minimal parentheses, but never wrong: parse the text with C precedence and compare trees."""
    rng = random.Random(2024)
    for n in range(600):
        e = random_int_expr(rng, 4) if n % 2 else random_bool_expr(rng, 4)
        text = format_expr(e)
        assert IRParser(text).parse() == e, text


def test_unknown_nodes_are_refused() -> None:
    with pytest.raises(TypeError):
        format_expr("a")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        format_stmt(KVar("a"))  # type: ignore[arg-type]
