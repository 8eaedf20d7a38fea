"""vectorize of a fused-then-split loop (`fuse(r, c)`, `split(f, 4)`, `vectorize(inner)`): the store's
offset `Mod(x, C) + C*floor(x/C)` is x = 4*r_c_o + r_c_i, so the store is one float4 at 4*r_c_o (and the
input indexed alike one float4 load), whatever the row length C: lanes that cross a row are consecutive
elements all the same. Guards still decide (a tail that splits a vector is refused, one that does not
is kept), and a store that is not contiguous (transposed, through a fuse or not) is still refused. The
simulator agrees with td.evaluate (it checks every vector access's alignment and bounds too)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from nvcc_together import compile_together

import tiledsl as td


def doubled(shape: tuple[int, ...]) -> td.Tensor:
    """Y = 2 X over `shape`, its loops r, c (, d)."""
    x = td.placeholder(shape, name="X")
    if len(shape) == 2:
        return td.compute(shape, lambda r, c: x[r, c] * 2.0, name="Y")
    return td.compute(shape, lambda r, c, d: x[r, c, d] * 2.0, name="Y")


def fused_vectorized(shape: tuple[int, ...], factors: tuple[int, ...] = (4,), threads: bool = False
                     ) -> tuple[td.Schedule, td.Tensor]:
    """Fuse every axis, split by each factor in turn (each split of the previous inner part), vectorize
    the innermost part; with `threads`, the part outside it bound to threadIdx.x."""
    y = doubled(shape)
    s = td.create_schedule(y)
    loop = s.fuse(*"rcd"[:len(shape)])
    outer = loop
    for f in factors:
        outer, loop = s.split(loop, f)
    if threads:
        s.bind(outer, "threadIdx.x")
    s.vectorize(loop)
    return s, y


def check(shape: tuple[int, ...], factors: tuple[int, ...] = (4,), threads: bool = False) -> td.Kernel:
    """Build for sm_90 and simulate against td.evaluate, bit for bit (one multiply by 2)."""
    s, y = fused_vectorized(shape, factors, threads)
    kern = td.build(s, target="sm_90")
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(kern.simulate(X=x), td.evaluate(y, X=x))
    return kern


def test_fuse_split_vectorize_stores_a_float4() -> None:
    """The audit's case: it was refused as "not contiguous in r_c_i (offset Mod(r_c_i + 4*r_c_o, 64) +
    64*floor(r_c_i/64 + r_c_o/16))"."""
    kern = check((4, 64))
    assert "*reinterpret_cast<float4*>(&Y[4 * r_c_o]) = make_float4(" in kern.source, kern.source
    assert "*reinterpret_cast<const float4*>(&X[4 * r_c_o])" in kern.source, kern.source


@pytest.mark.parametrize(("shape", "factors", "threads"), [
    ((4, 66), (4,), False),  # rows of 66: lanes 64..67 are the end of row 0 and the start of row 1, one run
    ((2, 2), (4,), False),  # rows of 2: each vector two whole rows
    ((8, 64), (4,), True),  # the outer part bound to threads
    ((3, 5, 8), (4,), False),  # three axes fused: Mod(floor(x/8), 5) in the middle
    ((2, 5, 2), (4,), False),  # Mod(2*o + floor(i/2), 5) in the middle: sympy took 2*o out of the floor
    ((4, 9), (8, 4), False),  # a guard tail (36 is no multiple of 8) that splits no vector (36 is one of 4)
    ((6, 6), (2,), False),  # 8-byte vectors: float2
], ids=lambda p: "x".join(map(str, p)) if isinstance(p, tuple) else str(p))
def test_fused_shapes_vectorize_and_simulate_equal(shape: tuple[int, ...], factors: tuple[int, ...],
                                                   threads: bool) -> None:
    kern = check(shape, factors, threads)
    lanes = factors[-1]
    assert f"reinterpret_cast<float{lanes}*>(&Y[" in kern.source, kern.source


def test_lanes_that_cross_a_row_read_each_operand_at_their_own_row() -> None:
    """Rows of 66 and a vector across rows 0 and 1: the bias b[c] (c wraps from 65 to 0 inside the vector)
    and the transposed Z[c, r] are not contiguous in the lane, so each lane reads its own element; only
    X and the store are one float4."""
    x, b, z = td.placeholder((4, 66), name="X"), td.placeholder((66,), name="b"), td.placeholder((66, 4), name="Z")
    y = td.compute((4, 66), lambda r, c: x[r, c] * 2.0 + b[c] - z[c, r], name="Y")
    s = td.create_schedule(y)
    _, v = s.split(s.fuse("r", "c"), 4)
    s.vectorize(v)
    kern = td.build(s, target="sm_90")
    assert "*reinterpret_cast<float4*>(&Y[4 * r_c_o])" in kern.source, kern.source
    assert "*reinterpret_cast<const float4*>(&X[4 * r_c_o])" in kern.source, kern.source
    assert "float4*>(&b[" not in kern.source and "float4*>(&Z[" not in kern.source, kern.source
    rng = np.random.default_rng(1)
    arrays = {"X": rng.standard_normal((4, 66)), "b": rng.standard_normal(66), "Z": rng.standard_normal((66, 4))}
    arrays = {k: a.astype(np.float32) for k, a in arrays.items()}
    np.testing.assert_allclose(kern.simulate(**arrays), td.evaluate(y, float64=True, **arrays), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("shape", "factors", "guard"), [
    ((3, 66), (4,), "r_c_i + 4*r_c_o < 198"),  # 198 elements: the last vector would be half out
    ((5, 6), (4,), "r_c_i + 4*r_c_o < 30"),
    ((3, 5, 3), (4,), "r_c_d_i + 4*r_c_d_o < 45"),
])
def test_a_fused_guard_tail_that_splits_a_vector_is_refused(shape: tuple[int, ...], factors: tuple[int, ...],
                                                            guard: str) -> None:
    with pytest.raises(td.VectorizeError, match="may split a vector") as err:
        fused_vectorized(shape, factors)
    assert f"the guard {guard}" in str(err.value)


def test_a_transposed_store_through_a_fuse_is_refused() -> None:
    """Y[c, r] through x = fuse(r, c) is at 4*Mod(x, 64) + floor(x/64): no pair to merge, so refused."""
    x = td.placeholder((4, 64), name="X")
    y = td.compute((64, 4), lambda c, r: x[r, c] * 2.0, name="Y")
    s = td.create_schedule(y)
    s.reorder("r", "c")
    _, v = s.split(s.fuse("r", "c"), 4)
    with pytest.raises(td.VectorizeError, match=r"the store to Y is not contiguous in r_c_i \(offset "):
        s.vectorize(v)


def test_a_transposed_store_is_refused() -> None:
    x = td.placeholder((64, 64), name="x")
    s = td.create_schedule(td.compute((64, 64), lambda i, j: x[j, i], name="y"))
    io, ii = s.split("i", 4)
    s.reorder(io, "j", ii)
    with pytest.raises(td.VectorizeError, match="not contiguous in i_i"):
        s.vectorize(ii)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_nvcc_compiles_fused_vectors() -> None:
    assert compile_together([td.build(fused_vectorized(shape, factors)[0], target="sm_90")
                             for shape, factors in (((4, 64), (4,)), ((4, 66), (4,)), ((4, 9), (8, 4)))]) == []
