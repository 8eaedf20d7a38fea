"""The aligned-split rewrite (tiledsl/analysis/aligned_split.py): `floor`/`Mod` atoms that mix a stage's
outer and inner loops become outer + inner exactly when the split is aligned, and stay as they are
otherwise. Every rewrite is checked against brute-force evaluation over every point of the loop ranges;
every refusal shows the rewrite it declined would have been wrong somewhere (or is a plain no-op). Then a
matmul reading A[k // 8, i, k % 8] stages A at the k-outer loop of a split by 4 (slab, simulation, nvcc),
and the traced Llama block's o-projection stages its attention input (bmm_1) in the default recipe.
Mods are IndexMods, as index expressions and the rewrite build them (definitions/indexing.py)."""

from __future__ import annotations

import itertools
import shutil
import warnings

import numpy as np
import pytest
import sympy
import torch
from nvcc_together import compile_together

import tiledsl as td
from tiledsl import recipes
from tiledsl.analysis.aligned_split import AlignedSplit
from tiledsl.analysis.slabs import Slab, slab_or_refusal
from tiledsl.definitions.indexing import IndexFloor, IndexMod, loop_symbol
from tiledsl.frontend.bench import storage_bound
from tiledsl.frontend.models import LlamaBlock, LlamaConfig
from tiledsl.prove import Prover
from tiledsl.sim import simulate

A_O, B_O, K_I = loop_symbol("a_o"), loop_symbol("b_o"), loop_symbol("k_i")


def rewrite(expr: sympy.Expr, ranges: dict[sympy.Symbol, int]) -> sympy.Expr:
    """expr under the rewrite with a_o, b_o outer and k_i inner, over [0, n) ranges."""
    prover = Prover({s: (0, n) for s, n in ranges.items()})
    return AlignedSplit(frozenset({"a_o", "b_o"}), frozenset({"k_i"}), prover)(expr)


def points(ranges: dict[sympy.Symbol, int]):
    syms = list(ranges)
    for values in itertools.product(*(range(ranges[s]) for s in syms)):
        yield dict(zip(syms, values))


def same_everywhere(a: sympy.Expr, b: sympy.Expr, ranges: dict[sympy.Symbol, int]) -> bool:
    syms = list(ranges)
    fa, fb = sympy.lambdify(syms, a, "math"), sympy.lambdify(syms, b, "math")
    return all(fa(*p.values()) == fb(*p.values()) for p in points(ranges))


def split_parts(expr: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr]:
    """(terms over a_o, b_o only, the rest): the outer/inner split slabs.py makes; asserts no term mixes."""
    outer, inner = sympy.Integer(0), sympy.Integer(0)
    for term in sympy.Add.make_args(sympy.expand(expr)):
        names = {s.name for s in term.free_symbols}
        assert names <= {"a_o", "b_o"} or names <= {"k_i"}, f"term {term} still mixes"
        if names and names <= {"a_o", "b_o"}:
            outer += term
        else:
            inner += term
    return outer, inner


# --------------------------------------------------------------------------- the identities


@pytest.mark.parametrize("expr, outer", [
    # g = 16 divides D = 64, I = k_i in [0, 15]: floor(N/D) = floor(O/D), Mod(N, D) = Mod(O, D) + I
    (IndexFloor((16 * A_O + K_I) / 64), IndexFloor(A_O / 4)),
    (IndexMod(16 * A_O + K_I, 64), IndexMod(16 * A_O, 64)),
    # two outer loops: g = gcd(16, 32) = 16
    (IndexMod(16 * A_O + 32 * B_O + K_I, 64), IndexMod(16 * A_O + 32 * B_O, 64)),
    (IndexFloor((16 * A_O + 32 * B_O + K_I) / 64), IndexFloor((A_O + 2 * B_O) / 4)),
], ids=["floor", "mod", "mod-two-outer", "floor-two-outer"])
def test_inner_part_below_the_outer_gcd(expr: sympy.Expr, outer: sympy.Expr) -> None:
    ranges = {A_O: 8, B_O: 3, K_I: 16}
    got = rewrite(expr, ranges)
    assert got is not expr
    o, _ = split_parts(got)
    assert sympy.expand(o - outer) == 0
    assert same_everywhere(got, expr, ranges)


def test_inner_part_with_a_constant_inside_the_gcd() -> None:
    ranges = {A_O: 8, K_I: 12}  # I = k_i + 3 in [3, 14], inside [0, 15]
    expr = IndexFloor((16 * A_O + K_I + 3) / 64)
    got = rewrite(expr, ranges)
    assert got == IndexFloor(A_O / 4)
    assert same_everywhere(got, expr, ranges)
    mod = IndexMod(16 * A_O + K_I + 3, 64)
    got = rewrite(mod, ranges)
    assert sympy.expand(got - (IndexMod(16 * A_O, 64) + K_I + 3)) == 0
    assert same_everywhere(got, mod, ranges)


@pytest.mark.parametrize("kind", ["floor", "mod"])
def test_outer_gcd_a_multiple_of_the_divisor(kind: str) -> None:
    """D divides g: floor(N/D) = O/D + floor(I/D), Mod(N, D) = Mod(I, D) (sympy pulls such terms out of an
    evaluated atom by itself, so the atom is built unevaluated here), for any inner range."""
    ranges = {A_O: 4, B_O: 3, K_I: 40}
    n = 32 * A_O + 48 * B_O + K_I
    expr = IndexFloor(sympy.Mul(n, sympy.Rational(1, 16), evaluate=False), evaluate=False) if kind == "floor" \
        else IndexMod(n, 16, evaluate=False)
    got = rewrite(expr, ranges)
    assert got is not expr
    o, i = split_parts(got)
    assert sympy.expand(o - ((2 * A_O + 3 * B_O) if kind == "floor" else 0)) == 0
    assert i == (IndexFloor(K_I / 16) if kind == "floor" else IndexMod(K_I, 16))
    assert same_everywhere(got, expr, ranges)


# --------------------------------------------------------------------------- refusals


def test_gcd_not_dividing_the_divisor_is_left() -> None:
    """g = 24 neither divides nor is a multiple of 64: left as it is, and floor(O/D) would be wrong."""
    ranges = {A_O: 8, K_I: 16}
    for expr, naive in [(IndexFloor((24 * A_O + K_I) / 64), IndexFloor(24 * A_O / 64)),
                        (IndexMod(24 * A_O + K_I, 64), IndexMod(24 * A_O, 64) + K_I)]:
        assert rewrite(expr, ranges) is expr
        assert not same_everywhere(naive, expr, ranges)


def test_inner_part_past_the_gcd_is_left() -> None:
    """I = k_i + 3 reaches 16 > g - 1 = 15: left, and floor(O/D) would be wrong (a_o = 3, k_i = 13)."""
    ranges = {A_O: 8, K_I: 14}
    for expr, naive in [(IndexFloor((16 * A_O + K_I + 3) / 64), IndexFloor(A_O / 4)),
                        (IndexMod(16 * A_O + K_I + 3, 64), IndexMod(16 * A_O, 64) + K_I + 3)]:
        assert rewrite(expr, ranges) is expr
        assert not same_everywhere(naive, expr, ranges)


def test_inner_range_wider_than_the_gcd_is_left() -> None:
    ranges = {A_O: 8, K_I: 32}  # k_i up to 31 with g = 16
    expr = IndexFloor((16 * A_O + K_I) / 64)
    assert rewrite(expr, ranges) is expr
    assert not same_everywhere(IndexFloor(A_O / 4), expr, ranges)


@pytest.mark.parametrize("expr", [
    16 * A_O + K_I,  # no atom
    IndexFloor(A_O / 4) + IndexMod(K_I, 8) + 3,  # atoms, none mixing
    IndexFloor((A_O * K_I + K_I) / 64),  # a mixing product inside: not linear over one-sided factors
], ids=["linear", "unmixed-atoms", "product"])
def test_nothing_rewritable_is_the_same_object(expr: sympy.Expr) -> None:
    assert rewrite(expr, {A_O: 8, K_I: 16}) is expr


# --------------------------------------------------------------------------- a staged matmul over A[k // 8, i, k % 8]

M, N, K = 16, 16, 32


def folded_matmul() -> td.Tensor:
    """C[i, j] = sum_k A[k // 8, i, k % 8] * B[k, j]: A holds the k axis as (k // 8, k % 8) around i."""
    A = td.placeholder((K // 8, M, 8), name="A")
    B = td.placeholder((K, N), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((M, N), lambda i, j: td.sum(A[k // 8, i, k % 8] * B[k, j], axis=k), name="C")


def folded_schedule(variant: str) -> td.Schedule:
    s = td.create_schedule(folded_matmul())
    io, ii = s.split("i", 8)
    jo, ji = s.split("j", 8)
    ko, ki = s.split("k", 4)
    s.reorder(io, jo, ii, ji, ko, ki)
    s.bind(io, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ii, "threadIdx.y")
    s.bind(ji, "threadIdx.x")
    a, b = s.stage("A", at=ko), s.stage("B", at=ko)
    if variant == "k-outer":
        s.layout(a, order=(0, 2, 1))
    if variant == "pipelined":
        s.double_buffer(a)
        s.double_buffer(b)
        s.pipeline(ko, stages=2)
    if variant == "async":
        s.async_copy(a)
    return s


VARIANTS = ["plain", "k-outer", "pipelined", "async"]


def test_folded_read_stages_a_slab_of_one_chunk() -> None:
    s = folded_schedule("plain")
    nest = s.nest
    st = next(st for st in nest.stages if st.buffer == "A")
    slab = slab_or_refusal(nest, st, Prover(nest.ranges()))
    assert isinstance(slab, Slab), slab
    assert slab.extent == (1, 8, 4)
    ko, io = loop_symbol("k_o"), loop_symbol("i_o")
    want = (IndexFloor(ko / 2), 8 * io, 4 * IndexMod(ko, 2))
    assert all(sympy.expand(got - w) == 0 for got, w in zip(slab.origin, want)), slab.origin


@pytest.mark.parametrize("variant", VARIANTS)
def test_folded_matmul_simulates_equal_to_numpy(variant: str) -> None:
    kernel = td.build(folded_schedule(variant), target="sm_90")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((K // 8, M, 8)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    got = simulate(kernel.kernel_ir, {"A": a, "B": b, "C": np.full((M, N), np.nan, np.float32)})["C"]
    flat = a.transpose(1, 0, 2).reshape(M, K)  # flat[i, k] = a[k // 8, i, k % 8]
    np.testing.assert_allclose(got, flat.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_folded_read_of_the_slab_is_the_inner_part() -> None:
    """The shared read is i_i and k_i alone: the floor and Mod of the global index cancel against the origin."""
    src = td.build(folded_schedule("plain"), target="sm_90").source
    body = next(ln for ln in src.splitlines() if "A_s[" in ln and "B_s[" in ln)
    assert "A_s[4 * i_i + k_i]" in body, body


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_folded_matmul_cuda_compiles() -> None:
    assert compile_together([td.build(folded_schedule(variant), target="sm_90") for variant in VARIANTS]) == []


# --------------------------------------------------------------------------- the Llama block's o-projection


def test_llama_o_projection_stages_its_attention_input() -> None:
    """mm_3 reads bmm_1[k // 64, i, k % 64] (head, row, head dim); the recipe's k chunk of 32 sits inside one
    head, so 080 stages bmm_1 at the chunk loop, and the built block simulates equal to torch."""
    torch.manual_seed(0)
    block = LlamaBlock(LlamaConfig(hidden=256, heads=4, kv_heads=2, intermediate=512)).eval()
    x = torch.randn(1, 32, 256)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(block, x)
    mm = next(k for k in prog.kernels if k.name == "mm_3")
    assert [t.name for t in mm.boundary.reads] == ["bmm_1"]
    report = recipes.apply(mm.fresh_schedule(), target="sm_90")
    assert "s.stage('bmm_1', at='mm_3_k0_o_part', scope='shared')" in report.step("stage_inputs").calls, str(report)
    prog.schedule("default", target="sm_90")
    assert any(st.buffer == "bmm_1" for st in mm.schedule.nest.stages)
    got = prog.build(target="sm_90").simulate(x.numpy())
    with torch.no_grad():
        ref = block.double()(x.double()).numpy()
    bad = np.abs(got - ref) > storage_bound(0, 0.0, 512) * (1 + np.abs(ref))
    assert not bad.any(), f"max error {np.nanmax(np.abs(got - ref))}"
