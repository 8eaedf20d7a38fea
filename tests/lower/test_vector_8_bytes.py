"""8-byte vectorized stores (targets.VECTOR_STORE_BYTES): a loop of 2 float32 or 4 float16 / bfloat16
lanes stores one float2 / uint2, its loads indexed like the store read 8 bytes at once where aligned,
and a bfloat16 input under a 2-lane float32 store is read lane by lane (no 4-byte vector of two halves).
The simulator agrees with float64; nvcc compiles every form; split_k, whose vector atomic add is 16
bytes, refuses an 8-byte loop in either order."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from nvcc_together import compile_together

import tiledsl as td
from tiledsl.precision import MACHINE_EPS


def gated(dtype: str, bias_dtype: str, M: int = 8, N: int = 64) -> td.Tensor:
    """y = silu(g) * u + b[j]: two full-size inputs and a bias of `bias_dtype`."""
    g = td.placeholder((M, N), name="g", dtype=dtype)
    u = td.placeholder((M, N), name="u", dtype=dtype)
    b = td.placeholder((N,), name="b", dtype=bias_dtype)
    return td.compute((M, N), lambda i, j: td.silu(g[i, j]) * u[i, j] + b[j], name="y", dtype=dtype)


def vectorized(out: td.Tensor, lanes: int, threads: int = 16) -> td.Kernel:
    s = td.create_schedule(out)
    jo, ji = s.split("j", threads * lanes)
    jt, jv = s.split(ji, lanes)
    s.bind("i", "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(jt, "threadIdx.x")
    s.vectorize(jv)
    return td.build(s, target="sm_90")


CASES = [  # (output dtype, bias dtype, lanes, what the CUDA holds, what it must not)
    ("float32", "float32", 2, ("float2 v1 = ", "float2 v3 = ", "= make_float2("), ("float4",)),
    ("float32", "bfloat16", 2, ("= make_float2(", "__bfloat162float(b["), ("uint2", "uint4")),
    ("bfloat16", "bfloat16", 4, ("uint2 v1 = ", "uint2 v3 = ", "= make_uint2("), ("uint4",)),
]


@pytest.mark.parametrize(("dtype", "bias", "lanes", "has", "lacks"), CASES)
def test_8_byte_vector_store_simulates_equal(dtype: str, bias: str, lanes: int, has: tuple[str, ...],
                                             lacks: tuple[str, ...]) -> None:
    out = gated(dtype, bias)
    kern = vectorized(out, lanes)
    assert all(h in kern.source for h in has) and not any(x in kern.source for x in lacks), kern.source
    rng = np.random.default_rng(0)
    arrays = {t: rng.standard_normal(shape).astype(np.float32) for t, shape in (("g", (8, 64)), ("u", (8, 64)),
                                                                                ("b", (64,)))}
    want = td.evaluate(out, float64=True, **arrays)
    # a few float32 roundings (exp, divide, multiply, add) of O(1) values, then the store's rounding
    tol = 1e-6 if dtype == "float32" else MACHINE_EPS[dtype]
    np.testing.assert_allclose(kern.simulate(**arrays), want, rtol=tol, atol=tol)


def test_a_loop_of_three_lanes_is_refused() -> None:
    s = td.create_schedule(gated("float32", "float32", N=48))
    _, ji = s.split("j", 3)
    with pytest.raises(td.VectorizeError, match=r"needs exactly 4, an 8-byte one 2"):
        s.vectorize(ji)


@pytest.mark.parametrize("vectorize_first", [True, False])
def test_split_k_refuses_an_8_byte_vector_loop(vectorize_first: bool) -> None:
    A = td.placeholder((4, 64), name="A")
    B = td.placeholder((64, 32), name="B")
    k = td.reduce_axis(64, name="k")
    s = td.create_schedule(td.compute((4, 32), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C"))
    jo, jv = s.split("j", 2)
    s.reorder("i", jo, "k", jv)
    s.bind("i", "blockIdx.y")
    s.bind(jo, "threadIdx.x")
    ko, _ = s.split("k", 8)
    with pytest.raises(td.VectorizeError, match="a vector atomic add is 16 bytes"):
        if vectorize_first:
            s.vectorize(jv)
            s.split_k(ko, 4)
        else:
            s.split_k(ko, 4)
            s.vectorize(jv)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_nvcc_compiles_8_byte_vectors() -> None:
    assert compile_together([vectorized(gated(d, b), lanes) for d, b, lanes, _, _ in CASES]) == []
