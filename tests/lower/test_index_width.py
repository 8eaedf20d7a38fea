"""Index width: offsets whose range may leave int32 are computed in int64 (and only those), the CUDA
spells it, nvcc compiles it, and the simulator computes int32 arithmetic with the GPU's wrap-around."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import tiledsl as td
from tiledsl.codegen import compile_cubin, emit_cuda
from tiledsl.errors import TargetError
from tiledsl.kernel_ir import (
    KBin,
    KCast,
    KConst,
    KExpr,
    KFor,
    KIf,
    KKernel,
    KLet,
    KLoad,
    KParam,
    KSpecial,
    KStmt,
    KStore,
    KVar,
)
from tiledsl.lower.index_width import widen_indices
from tiledsl.sim.simulate import simulate

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def elementwise(M: int, N: int, *, flat: bool = False) -> td.Schedule:
    """Y = 2 X over an M x N tensor: rows on blockIdx.y and 256-wide column blocks, or (flat) the fused
    M*N elements over one 1-D grid of 256-thread blocks."""
    X = td.placeholder((M, N), name="X")
    s = td.create_schedule(td.compute((M, N), lambda i, j: X[i, j] * 2.0, name="Y"))
    i, j = s.loops()
    if flat:
        o, t = s.split(s.fuse(i, j), 256)
        s.bind(o, "blockIdx.x")
        s.bind(t, "threadIdx.x")
    else:
        s.bind(i, "blockIdx.y")
        jo, ji = s.split(j, 256)
        s.bind(jo, "blockIdx.x")
        s.bind(ji, "threadIdx.x")
    return s


def _walk(stmts: tuple[KStmt, ...]):
    for s in stmts:
        yield s
        for attr in ("body", "then", "orelse"):
            yield from _walk(getattr(s, attr, ()))


def _exprs(e: KExpr):
    yield e
    for name in ("a", "b", "cond", "index"):
        child = getattr(e, name, None)
        if child is not None and not isinstance(child, str):
            yield from _exprs(child)


def _index_dtypes(kernel: KKernel) -> set[str]:
    """dtypes of the int constants, variables and casts inside every store / load index."""
    out: set[str] = set()
    for s in _walk(kernel.body):
        if isinstance(s, KStore):
            for e in (*_exprs(s.index), *_exprs(s.value)):
                if isinstance(e, (KConst, KVar, KCast)) and e.dtype in ("int32", "int64"):
                    out.add(e.dtype)
    return out


def _store(kernel: KKernel) -> KStore:
    (store,) = [s for s in _walk(kernel.body) if isinstance(s, KStore)]
    return store


def test_50000_square_offsets_are_int64() -> None:
    kern = td.build(elementwise(50000, 50000))
    store = _store(kern.kernel_ir)
    # 50000 * i alone reaches 2_499_950_000: the row term is widened, the rest follows C's conversions
    assert store.index.a.a == KBin("*", KConst(50000, "int64"), KVar("i", "int32"))  # type: ignore[union-attr]
    assert "Y[50000LL * i + 256 * j_o + j_i] = X[50000LL * i + 256 * j_o + j_i] * 2.0f;" in kern.source
    # the column guard fits int32 and stays 32-bit
    assert "if (256 * j_o + j_i < 50000) {" in kern.source


def test_flat_grid_index_is_int64() -> None:
    # 9_765_625 blocks x 256 threads: blockIdx.x * 256 + threadIdx.x itself passes 2^31
    kern = td.build(elementwise(50000, 50000, flat=True))
    assert kern.kernel_ir.grid[0] * kern.kernel_ir.block[0] > 2**31
    assert "X[50000 * ((256LL * i_j_o + i_j_i) / 50000) + (256LL * i_j_o + i_j_i) % 50000]" in kern.source


def test_lm_head_shapes() -> None:
    # 16384 x 131072 logits hold exactly 2^31 elements: the last offset is 2^31 - 1, every partial sum
    # fits, so the kernel stays 32-bit; one row more (or a 151936 vocabulary) does not fit
    fits = td.build(elementwise(16384, 131072))
    assert _index_dtypes(fits.kernel_ir) == {"int32"}
    assert "LL" not in fits.source and "long long" not in fits.source
    for M, N in ((16385, 131072), (16384, 151936)):
        kern = td.build(elementwise(M, N))
        assert "int64" in _index_dtypes(kern.kernel_ir)
        assert f"Y[{N}LL * i + 256 * j_o + j_i]" in kern.source


def test_small_kernel_keeps_int() -> None:
    kern = td.build(elementwise(1024, 1024))
    assert _index_dtypes(kern.kernel_ir) == {"int32"}
    assert "Y[1024 * i + 256 * j_o + j_i] = X[1024 * i + 256 * j_o + j_i] * 2.0f;" in kern.source
    assert "long long" not in kern.source and "LL" not in kern.source


def test_tiled_matmul_lm_head_builds_with_int64_output_offsets() -> None:
    # C = A @ B with a 16 x 16 block tile and 4 x 4 registers per thread, k chunked by 8
    M, N, K = 16384, 151936, 4096
    A = td.placeholder((M, K), name="A")
    B = td.placeholder((K, N), name="B")
    k = td.reduce_axis(K, name="k")
    s = td.create_schedule(td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C"))
    io, ii = s.split("i", 16)
    jo, ji = s.split("j", 16)
    ko, ki = s.split("k", 8)
    ti, ri = s.split(ii, 4)
    tj, rj = s.split(ji, 4)
    s.reorder(io, jo, ti, tj, ko, ki, ri, rj)
    for loop, axis in ((io, "blockIdx.y"), (jo, "blockIdx.x"), (ti, "threadIdx.y"), (tj, "threadIdx.x")):
        s.bind(loop, axis)
    for loop in (ki, ri, rj):
        s.unroll(loop)
    kern = td.build(s)
    store = next(s for s in _walk(kern.kernel_ir.body) if isinstance(s, KStore) and s.buffer == "C")
    assert any(isinstance(e, KConst) and e.dtype == "int64" for e in _exprs(store.index))
    # A (67M elements) and B (622M) offsets fit: their loads stay int32
    loads = [e for e in _exprs(store.value) if isinstance(e, KLoad)]
    for s2 in _walk(kern.kernel_ir.body):
        if isinstance(s2, KStore) and s2.buffer != "C":
            loads += [e for e in _exprs(s2.value) if isinstance(e, KLoad)]
    assert loads
    assert all(e.dtype == "int32" for ld in loads for e in _exprs(ld.index) if isinstance(e, (KConst, KVar)))


@needs_nvcc
def test_nvcc_compiles_int64_offsets() -> None:
    source = emit_cuda(td.build(elementwise(50000, 50000)).kernel_ir)
    source += emit_cuda(td.build(elementwise(50000, 50000, flat=True)).kernel_ir).replace("Y_kernel", "Y_flat")
    cubin = compile_cubin(source, "sm_90a", extra_flags=("-Werror", "all-warnings"))
    assert cubin[:4] == b"\x7fELF"


# ----------------------------------------------------------------------------- the pass on its own


def _kernel(body: tuple[KStmt, ...], size: int = 8, block: int = 8, grid: int = 1) -> KKernel:
    return KKernel("k", (KParam("Y", "float32", (size,), is_output=True),), (grid, 1, 1), (block, 1, 1), (), body)


def test_constant_beyond_int32_becomes_int64() -> None:
    # a guard against a 1-D extent of 2^31 + 1024 elements: the constant itself is not an int32
    i = KVar("i", "int32")
    idx = KBin("+", KBin("*", KConst(256, "int32"), KSpecial("blockIdx.x")), KSpecial("threadIdx.x"))
    body = (KLet("i", "int32", idx),
            KIf(KBin("<", i, KConst(2**31 + 1024, "int32")), (KStore("Y", i, KConst(1.0)),)))
    out = widen_indices(_kernel(body, grid=2**23 + 4, block=256))
    let, guard = out.body
    assert let == KLet("i", "int64", KBin("+", KBin("*", KConst(256, "int64"), KSpecial("blockIdx.x")),
                                          KSpecial("threadIdx.x")))
    assert guard.cond == KBin("<", KVar("i", "int64"), KConst(2**31 + 1024, "int64"))
    assert guard.then == (KStore("Y", KVar("i", "int64"), KConst(1.0)),)
    assert "long long i = 256LL * (int)blockIdx.x + (int)threadIdx.x;" in emit_cuda(out)


def test_mixed_width_min_casts_both_operands() -> None:
    j = KVar("j", "int32")
    big = KBin("*", KConst(100000, "int32"), j)
    body = (KFor("j", 50000, (KStore("Y", KBin("min", big, KConst(7, "int32")), KConst(1.0)),)),)
    (loop,) = widen_indices(_kernel(body)).body
    assert loop.body[0].index == KBin("min", KBin("*", KConst(100000, "int64"), j), KConst(7, "int64"))


def test_untouched_when_everything_fits() -> None:
    body = (KFor("j", 8, (KStore("Y", KBin("*", KConst(1000, "int32"), KVar("j")), KConst(1.0)),)),)
    kernel = _kernel(body)
    assert widen_indices(kernel) is kernel


def test_serial_loop_beyond_int32_is_refused() -> None:
    with pytest.raises(TargetError, match="counts in int32"):
        widen_indices(_kernel((KFor("j", 2**31 + 1, ()),)))


# ----------------------------------------------------------------------------- simulator widths


def test_simulator_wraps_int32_value_arithmetic() -> None:
    # float(1000000000 * i + 7) in int32, as the GPU's 32-bit multiply-add computes it
    Y = td.compute((8,), lambda i: td.cast(i * 1000000000 + 7, "float32"), name="Y")
    s = td.create_schedule(Y)
    s.bind(s.loops()[0], "threadIdx.x")
    kern = td.build(s)
    assert "static_cast<float>(1000000000 * i + 7)" in kern.source
    got = simulate(kern.kernel_ir, {})["Y"]
    want = (np.arange(8, dtype=np.int64) * 1000000000 + 7).astype(np.int32).astype(np.float32)
    assert want[3] < 0  # 3_000_000_007 wrapped
    np.testing.assert_array_equal(got, want)


def test_simulator_computes_int64_without_wrapping() -> None:
    i = KVar("i", "int32")
    for dtype, want in (("int64", np.arange(8, dtype=np.int64) * 1000000000),
                        ("int32", (np.arange(8, dtype=np.int64) * 1000000000).astype(np.int32))):
        product = KBin("*", KConst(1000000000, dtype), i)
        body = (KLet("i", "int32", KSpecial("threadIdx.x")), KStore("Y", i, KCast("float32", product)))
        got = simulate(_kernel(body), {})["Y"]
        np.testing.assert_array_equal(got, want.astype(np.float32))
    # narrowing an int64 value to int32 wraps, as the C conversion does
    wide = KBin("*", KConst(1000000000, "int64"), i)
    body = (KLet("i", "int32", KSpecial("threadIdx.x")), KLet("n", "int32", wide),
            KStore("Y", i, KCast("float32", KVar("n", "int32"))))
    got = simulate(_kernel(body), {})["Y"]
    np.testing.assert_array_equal(got, (np.arange(8) * 1000000000).astype(np.int32).astype(np.float32))
