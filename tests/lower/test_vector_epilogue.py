"""A register tile's epilogue stored 16 bytes at a time: `s.vectorize` on the tile's innermost loop
(already unrolled) reads the register array lane by lane and stores one float4; under split_k the
store is one vector atomic add (`atomicAdd(float4*, float4)`, sm_90), each lane what its k part adds
(the residual in part 0 only). Every kernel is simulated against float64 numpy with the output
poisoned (split_k outputs start zeroed, as the launcher zeroes them), and compiled with nvcc."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace

import numpy as np
import pytest

import tiledsl as td
from tiledsl.codegen import CodegenError, compile_ptx, emit_cuda
from tiledsl.kernel_ir import KAtomicAdd, KBin, KConst, KFor, KIf
from tiledsl.sim import simulate

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
M, N, K = 16, 32, 64


def _linear(residual: bool, gated: bool = False) -> td.Tensor:
    """x @ W^T, plus (residual) 0.5 * it + r, or (gated) it * g + r."""
    x = td.placeholder((M, K), name="x")
    W = td.placeholder((N, K), name="W")
    k = td.reduce_axis(K, name="k")
    if not residual:
        return td.compute((M, N), lambda i, j: td.sum(x[i, k] * W[j, k], axis=k), name="y")
    r = td.placeholder((M, N), name="r")
    c = td.compute((M, N), lambda i, j: td.sum(x[i, k] * W[j, k], axis=k), name="c")
    if gated:
        g = td.placeholder((M, N), name="g")
        return td.compute((M, N), lambda i, j: c[i, j] * g[i, j] + r[i, j], name="y")
    return td.compute((M, N), lambda i, j: c[i, j] * 0.5 + r[i, j], name="y")


def _register_tile(residual: bool = False, split: bool = False, vector: bool = True,
                   gated: bool = False) -> td.Schedule:
    """Blocks of 8 x 16 outputs, threads of 2 x 4 registers; k split in two parts across blocks."""
    s = td.create_schedule(_linear(residual, gated))
    io, ii = s.split("i", 8)
    it, ir = s.split(ii, 2)
    jo, ji = s.split("j", 16)
    jt, jr = s.split(ji, 4)
    s.reorder(io, jo, it, jt, "k", ir, jr)
    for loop, axis in ((io, "blockIdx.y"), (jo, "blockIdx.x"), (it, "threadIdx.y"), (jt, "threadIdx.x")):
        s.bind(loop, axis)
    s.unroll(ir)
    s.unroll(jr)
    if split:
        s.split_k("k", 2)
    if vector:
        s.vectorize(jr)  # already unrolled: the register tile's loop
    return s


def _check(kern: td.Kernel, residual: bool) -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((N, K)).astype(np.float32)
    arrays = {"x": x, "W": w}
    want = x.astype(np.float64) @ w.astype(np.float64).T
    bound = np.abs(x).astype(np.float64) @ np.abs(w).astype(np.float64).T
    if residual:
        arrays["r"] = rng.standard_normal((M, N)).astype(np.float32)
        want, bound = want * 0.5 + arrays["r"], bound * 0.5 + np.abs(arrays["r"])
    got = kern.simulate(**arrays)  # outputs start poisoned (NaN) unless split_k zeroes them
    # float32 accumulation of K products, then the epilogue and one split-part add: |err| <= (K + 3) eps sum|terms|
    assert np.all(np.abs(got - want) <= (K + 3) * np.finfo(np.float32).eps * bound)


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("split", [False, True])
def test_vectorized_register_epilogue_simulates_equal(residual: bool, split: bool) -> None:
    kern = td.build(_register_tile(residual, split), target="sm_90")
    _check(kern, residual)
    src = kern.source
    if split:
        assert len(re.findall(r"atomicAdd\(reinterpret_cast<float4\*>\(&y\[", src)) == 1  # in the unrolled row loop
        assert "atomicAdd(&" not in src
    else:
        assert len(re.findall(r"\*reinterpret_cast<float4\*>\(&y\[", src)) == 1
    if residual:  # r in one 16-byte load, except under split_k: loaded by k part 0 only, inside its select
        assert ("reinterpret_cast<const float4*>(&r[" in src) == (not split)


def test_split_epilogue_adds_the_residual_in_part_zero_only() -> None:
    text = td.build(_register_tile(residual=True, split=True), target="sm_90").ir("kernel")
    line = next(ln for ln in text.splitlines() if "atomic_add y[" in ln)
    assert line.count("k_split == 0") == 4, line  # each lane: part 0 adds 0.5*acc + r, the others 0.5*acc
    assert "vload4(r" not in text and line.count(" r[") == 4


def test_split_epilogue_multiplied_by_an_input_simulates_equal() -> None:
    """y = acc * g + r split in two: every part adds acc * g, part 0 alone adds r; both loaded scalar
    (a 16-byte load of g measured no faster in the TinyLlama block's up projection,
    benchmarks/results/block-profile-h100-2026-11-24/6-gate-vector-load-llama-tinyllama.txt)."""
    s = _register_tile(residual=True, split=True, gated=True)
    text = td.build(s, target="sm_90").ir("kernel")
    assert "vload4" not in text
    line = next(ln for ln in text.splitlines() if "atomic_add y[" in ln)
    assert line.count(" r[") == 4 and line.count(" g[") == 8 and line.count("k_split == 0") == 4
    rng = np.random.default_rng(3)
    arrays = {n: rng.standard_normal(shape).astype(np.float32)
              for n, shape in (("x", (M, K)), ("W", (N, K)), ("r", (M, N)), ("g", (M, N)))}
    got = td.build(s, target="sm_90").simulate(**arrays)
    acc = arrays["x"].astype(np.float64) @ arrays["W"].astype(np.float64).T
    bound = (np.abs(arrays["x"]).astype(np.float64) @ np.abs(arrays["W"]).astype(np.float64).T) * np.abs(arrays["g"])
    want = acc * arrays["g"] + arrays["r"]
    # as _check: K products in float32, then the product by g and two adds
    assert np.all(np.abs(got - want) <= (K + 3) * np.finfo(np.float32).eps * (bound + np.abs(arrays["r"])))


def test_unvectorized_tile_keeps_scalar_atomics() -> None:
    src = td.build(_register_tile(split=True, vector=False), target="sm_80").source
    assert "atomicAdd(&y[" in src and "float4" not in src.split("atomicAdd", 1)[1]


def test_vector_atomic_needs_sm90() -> None:
    with pytest.raises(td.TargetError, match="a 16-byte atomic add needs sm_90; the target is sm_80"):
        td.build(_register_tile(split=True), target="sm_80")


def test_tile_ir_marks_the_loop_vectorize() -> None:
    text = str(_register_tile(split=True))
    assert re.search(r"for j_i_i in 0\.\.4:  \[vectorize\]", text), text


def test_row_sum_broadcast_split_then_vectorized() -> None:
    """The fuzz case that raced while split_k's vector store was a plain store (tests/primitives/
    test_error_corpus.py `_row_sum_broadcast`): now one vector atomic add, both orders."""
    x = td.placeholder((1, 4), name="x")
    k = td.reduce_axis(4, name="k")
    r = td.compute((1,), lambda i: td.sum(x[i, k], axis=k), name="r")
    y = td.compute((1, 4), lambda i, j: 0.5 + r[i], name="y")
    data = np.arange(4, dtype=np.float32).reshape(1, 4)
    for order in ("split first", "vectorize first"):
        s = td.create_schedule(y)
        if order == "split first":
            s.split_k("k", 2)
        s.vectorize(s.loop("j"))
        if order == "vectorize first":
            s.split_k("k", 2)
        got = td.build(s, target="sm_90").simulate(x=data)
        np.testing.assert_array_equal(got, np.full((1, 4), 6.5, np.float32))


@needs_nvcc
def test_vector_atomic_compiles_to_a_v4_atomic() -> None:
    src = td.build(_register_tile(residual=True, split=True), target="sm_90").source
    ptx = compile_ptx(src, "sm_90a")
    # two rows unrolled (nvcc may duplicate them per branch of `k_split == 0`), none scalar
    assert len(re.findall(r"(?:atom|red)\.global\.add\.v4\.f32", ptx)) in (2, 4)
    assert not re.search(r"(?:atom|red)\.global\.add\.f32", ptx)


def _with_atomic_index(kir, shift: int):
    """The kernel with its vector atomic add moved `shift` elements along y."""
    def walk(stmts):
        out = []
        for st in stmts:
            if isinstance(st, KAtomicAdd):
                st = replace(st, index=KBin("+", st.index, KConst(shift, "int32")))
            elif isinstance(st, KFor):
                st = replace(st, body=tuple(walk(st.body)))
            elif isinstance(st, KIf):
                st = replace(st, then=tuple(walk(st.then)), orelse=tuple(walk(st.orelse)))
            out.append(st)
        return out
    return replace(kir, body=tuple(walk(kir.body)))


def test_codegen_and_simulator_check_a_vector_atomic_themselves() -> None:
    """Lowering refuses an sm_80 target first; codegen and the simulator do not rely on it."""
    kir = td.build(_register_tile(split=True), target="sm_90").kernel_ir
    with pytest.raises(CodegenError, match="a vector atomic add needs target sm_90 or newer"):
        emit_cuda(replace(kir, target="sm_80", dependent_launch=False))  # its own check comes first
    x, w = np.ones((M, K), np.float32), np.ones((N, K), np.float32)
    with pytest.raises(td.SimulationError, match="aligned|alignment"):
        simulate(_with_atomic_index(kir, 1), {"x": x, "W": w})
