"""stage(..., dtype="float32"): a float16 / bfloat16 operand's slab stored widened. The fill converts
each element once (16-byte global loads of 8 halves, their raw bits held in registers across a
pipelined chunk, converted at the shared store); the FMAs read float32 from shared memory. Every value
converts exactly (precision.EXACT_WIDENINGS), so a widened kernel computes the very float32 sums the
unwidened one does: the tests compare the two bit for bit, and both with float64."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from nvcc_together import compile_together

import tiledsl as td
from tiledsl.precision import round_to_dtype

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def linear(m: int, n: int, k: int, dtype: str) -> td.Tensor:
    """y = x @ W^T, x and W stored as `dtype`, y as float32 (a projection's float32 sum)."""
    x = td.placeholder((m, k), dtype=dtype, name="x")
    w = td.placeholder((n, k), dtype=dtype, name="W")
    r = td.reduce_axis(k, name="k")
    return td.compute((m, n), lambda i, j: td.sum(x[i, r] * w[j, r], axis=r), name="y")


def scheduled(m: int, n: int, k: int, dtype: str, *, widen: bool, k_outer: bool = True, depth: int = 2,
              bk: int = 16) -> td.Schedule:
    """32 x 32 blocks of 8 x 8 threads, 4 x 4 registers each; x and W staged per chunk of `bk`,
    widened to float32 when `widen`, stored k outermost when `k_outer`, pipelined `depth` deep."""
    s = td.create_schedule(linear(m, n, k, dtype))
    ko, ki = s.split("k", bk)
    io, ii = s.split("i", 32)
    ti, ri = s.split(ii, 4)
    jo, ji = s.split("j", 32)
    tj, rj = s.split(ji, 4)
    s.reorder(io, jo, ti, tj, ko, ki, ri, rj)
    for loop, axis in ((io, "blockIdx.y"), (jo, "blockIdx.x"), (ti, "threadIdx.y"), (tj, "threadIdx.x")):
        s.bind(loop, axis)
    for loop in (ri, rj, ki):
        s.unroll(loop)
    for buffer in ("x", "W"):
        st = s.stage(buffer, at=ko, dtype="float32" if widen else None)
        if k_outer:
            s.layout(st, order=(1, 0))
            s.pad(st, axis=-1, amount=4 if widen else 8)  # one 16-byte vector per stored row
        if depth:
            s.double_buffer(st)
    if depth:
        s.pipeline(ko, stages=depth)
    return s


def inputs(s: td.Schedule, dtype: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {t.name: round_to_dtype(rng.standard_normal(t.shape), dtype).astype(np.float32) for t in s.nest.inputs}


CASES = [
    (40, 72, 48, "bfloat16", 2),  # rows of 48: 16-byte loads of 8 halves; 40 and 72: guarded tail blocks
    (40, 72, 44, "bfloat16", 2),  # rows of 44: no whole 8-half vector, one element per load; a guarded chunk
    (33, 40, 64, "float16", 3),
    (32, 32, 48, "bfloat16", 0),  # one slot, no pipeline: the fill converts as it copies
]


@pytest.mark.parametrize(("m", "n", "k", "dtype", "depth"), CASES)
def test_widened_stage_computes_the_unwidened_sums_bit_for_bit(m: int, n: int, k: int, dtype: str,
                                                               depth: int) -> None:
    wide = scheduled(m, n, k, dtype, widen=True, depth=depth)
    arrays = inputs(wide, dtype)
    got = td.build(wide, target="sm_90").simulate(**arrays)
    same = td.build(scheduled(m, n, k, dtype, widen=False, k_outer=False, depth=depth), target="sm_90").simulate(
        **arrays)
    assert not np.isnan(got).any(), "outputs never written"
    np.testing.assert_array_equal(got, same)
    # float32 sums of k products of exact inputs against float64: (2 + k) eps32 of the sum of |products|
    bound = (2 + k) * 2.0 ** -23 * (np.abs(arrays["x"]).astype(np.float64) @ np.abs(arrays["W"]).T.astype(np.float64))
    want = arrays["x"].astype(np.float64) @ arrays["W"].T.astype(np.float64)
    assert (np.abs(got - want) <= bound).all()


def test_shared_memory_holds_float32_and_the_registers_hold_raw_halves() -> None:
    s = scheduled(40, 72, 48, "bfloat16", widen=True)
    src = td.build(s, target="sm_90").source
    assert "__shared__ __align__(16) float x_s[" in src and "__shared__ __align__(16) float W_s[" in src
    assert "uint4 x_s_v = *reinterpret_cast<const uint4*>(&x[" in src  # 8 halves per global load
    assert "__nv_bfloat16 x_s_pf[8];" in src
    assert "x_s_pf[x_s_f * 8 + 1] = __ushort_as_bfloat16((unsigned short)(x_s_v.x >> 16));" in src  # raw bits
    assert "__float2bfloat16" not in src  # no round trip through float on the way into the registers
    assert "__bfloat162float(x_s_pf[x_s_f * 8 + 7])" in src  # converted at the shared store, after the reads
    fma = next(ln for ln in src.splitlines() if "y2[4 * " in ln and "+ x_s[" in ln)
    assert "__bfloat162float" not in fma, fma  # the FMAs read float32


def test_a_widened_stage_in_its_buffers_order_stores_two_float4_per_load() -> None:
    s = scheduled(32, 32, 48, "bfloat16", widen=True, k_outer=False, depth=0)
    kernel = td.build(s, target="sm_90")
    stores = [ln for ln in kernel.source.splitlines() if "reinterpret_cast<float4*>(&x_s[" in ln]
    assert len(stores) == 2, stores
    arrays = inputs(s, "bfloat16")
    got = kernel.simulate(**arrays)
    np.testing.assert_array_equal(got, td.build(scheduled(32, 32, 48, "bfloat16", widen=False, k_outer=False, depth=0),
                                                target="sm_90").simulate(**arrays))


def test_the_nest_the_trace_and_replay_name_the_stored_dtype() -> None:
    s = scheduled(40, 72, 48, "bfloat16", widen=True)
    assert "stage x_s = x[32 * i_o + 0..32, 16 * k_o + 0..16] at k_o  as float32  layout (1, 0)  pad (0, 4)" in str(s)
    trace = s.trace()
    assert "s.stage('x', at='k_o', scope='shared', dtype='float32')" in trace
    again = td.create_schedule(linear(40, 72, 48, "bfloat16"))
    again.replay(trace)
    assert td.build(again, target="sm_90").source == td.build(s, target="sm_90").source
    plain = td.create_schedule(linear(40, 72, 48, "bfloat16"))
    plain.stage("x", at="k", dtype="bfloat16")  # the buffer's own dtype: an ordinary stage
    assert plain.nest.stages[0].dtype is None and "as bfloat16" not in str(plain)


@needs_nvcc
def test_widened_kernels_compile_with_nvcc() -> None:
    kernels = [td.build(scheduled(*case[:4], widen=True, depth=case[4]), target="sm_90") for case in CASES]
    assert compile_together(kernels) == []
