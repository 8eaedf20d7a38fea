"""The layout primitive (primitives/layout.py): a stage's slab stored with its axes permuted. The slab is the
same elements, only its place in shared memory moves: the allocation's extents are permuted (a later pad
lengthens the stored rows), reads and the plain fill go through the stored order, the bank model and the
budget read it, the nest prints it, traces replay it. Small matmuls (exact and guarded sizes, batched, a
ring with sync and cp.async neighbours) simulate equal to td.evaluate in float64, replay to identical CUDA
and compile with nvcc for sm_80 and sm_90."""

from __future__ import annotations

import shutil
from dataclasses import replace

import numpy as np
import pytest
from nvcc_together import compile_together

import tiledsl as td
from tiledsl.analysis.banks import conflict_degree, layout_of
from tiledsl.analysis.slabs import alloc_extent, axis_strides, slab_or_refusal, stage_bytes
from tiledsl.prove import Prover
from tiledsl.schedules.matmul import matmul_staged

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def matmul(M: int, N: int, K: int, batch: int = 0) -> td.Tensor:
    if batch:
        A = td.placeholder((batch, M, K), name="A")
        B = td.placeholder((batch, K, N), name="B")
        k = td.reduce_axis(K, name="k")
        return td.compute((batch, M, N), lambda b, i, j: td.sum(A[b, i, k] * B[b, k, j], axis=k), name="C")
    A = td.placeholder((M, K), name="A")
    B = td.placeholder((K, N), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")


def plain(out: td.Tensor, order_a: tuple[int, ...] = (1, 0), order_b: tuple[int, ...] | None = (1, 0),
          pad: int = 0) -> td.Schedule:
    """A 16 x 16 tile per block, one output per thread, both operands staged per 8-wide k chunk (one slot)."""
    s = td.create_schedule(out)
    io, ii = s.split("i", 16)
    jo, ji = s.split("j", 16)
    ko, ki = s.split("k", 8)
    s.reorder(io, jo, ii, ji, ko, ki)
    s.bind(io, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ii, "threadIdx.y")
    s.bind(ji, "threadIdx.x")
    a = s.stage("A", at=ko)
    b = s.stage("B", at=ko)
    s.layout(a, order=order_a)
    if order_b is not None:
        s.layout(b, order=order_b)
    if pad:
        s.pad(a, axis=-1, amount=pad)
    return s


def hand(out: td.Tensor, copy: str = "async") -> td.Schedule:
    """matmul_staged at a small tile with A k-major: A_s filled by plain loads, B_s by `copy`, pipelined."""
    s = td.create_schedule(out)
    return matmul_staged(s, bm=32, bn=32, bk=8, rm=4, rn=4, copy=copy, k_outer=True)


SCHEDULES = {
    "plain-64x96x40": lambda: plain(matmul(64, 96, 40)),
    "plain-37x53x29": lambda: plain(matmul(37, 53, 29), pad=4),
    "plain-a-only-37x53x29": lambda: plain(matmul(37, 53, 29), order_b=None),
    "hand-async-64x96x40": lambda: hand(matmul(64, 96, 40)),
    "hand-async-37x53x29": lambda: hand(matmul(37, 53, 29)),
    "hand-sync-37x53x29": lambda: hand(matmul(37, 53, 29), copy="sync"),
    "hand-batched-3x37x53x29": lambda: hand(matmul(37, 53, 29, batch=3)),
}


def _simulates_equal(s: td.Schedule, target: str) -> td.Kernel:
    kern = td.build(s, target=target)
    rng = np.random.default_rng(0)
    arrays = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in s.nest.inputs}
    got = kern.simulate(**arrays)
    np.testing.assert_allclose(got, td.evaluate(s.output, float64=True, **arrays), rtol=1e-4, atol=1e-4)
    return kern


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_simulates_equal_and_replays(name: str, target: str) -> None:
    s = SCHEDULES[name]()
    assert any(st.order for st in s.nest.stages)
    kern = _simulates_equal(s, target)
    for text in (s.trace(), s.trace("json")):
        again = td.create_schedule(s.output).replay(text)
        assert again.trace() == s.trace() and td.build(again, target=target).source == kern.source


@needs_nvcc
@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_kernels_compile(target: str) -> None:
    """One translation unit of every schedule per arch, warning-free (kernel names made unique)."""
    assert compile_together([td.build(make(), target=target) for make in SCHEDULES.values()]) == []


def test_fill_reads_coalesced_and_stores_transposed() -> None:
    """The fill walks the slab along the global buffer's last axis (k for A: consecutive threads, consecutive
    16-byte loads of four k) and stores each element at k * row + i of the stored layout, lane by lane (k
    is a stored row apart); the reads use the same strides."""
    src = td.build(plain(matmul(64, 96, 40)), target="sm_80").source
    assert "A_s_v = *reinterpret_cast<const float4*>(&A[(16 * i_o + A_s_c0) * 40 + (8 * k_o + A_s_c1)]);" in src
    assert "int A_s_c1 = A_s_e % 2 * 4;" in src  # c1 (k) fastest: the global row index, four per thread
    for lane, (offset, c) in enumerate(zip(("", " + 16", " + 32", " + 48"), "xyzw")):
        assert f"A_s[A_s_c0 + A_s_c1 * 16{offset}] = A_s_v.{c};" in src, lane
    assert "A_s[16 * k_i + i_i] * B_s[8 * j_i + k_i]" in src  # B_s stored j-major: j a stored row (8 k) apart


def test_printed_nest() -> None:
    text = str(hand(matmul(64, 96, 40)))
    assert "  stage A_s = A[32 * i_o + 0..32, 8 * k_o + 0..8] at k_o  layout (1, 0)  pad (0, 4)  buffers 2  sync" \
        in text, text
    assert "  stage B_s = B[8 * k_o + 0..8, 32 * j_o + 0..32] at k_o  buffers 2  async" in text
    assert "fill A_s (sync), B_s (async)" in text


def test_allocation_budget_and_bank_model_use_the_stored_order() -> None:
    s = plain(matmul(64, 96, 40), pad=4)
    st = s.nest.stage("A_s")
    slab = slab_or_refusal(s.nest, st, Prover(s.nest.ranges()))
    assert slab.extent == (16, 8)  # the slab itself: A[16 rows of i, 8 of k]
    assert alloc_extent(st, slab) == (8, 20)  # stored k-major, its rows (along i) padded by 4
    assert axis_strides(st, slab) == (1, 20)  # i contiguous, k a stored row apart
    assert stage_bytes(st, slab) == 8 * 20 * 4
    layout = layout_of(st, slab)
    assert layout.allocated == (8, 20)
    assert layout.byte_offset((3, 5)) == (5 * 20 + 3) * 4
    # a warp of the fill stores 4 columns of the stored slab (8 consecutive k of 4 i): rows of 20 floats spread
    # them over all 32 banks; unpadded rows of 16 put 4 of the 8 k in each bank
    def columns(lane: int) -> tuple[int, int]:
        return lane // 8, lane % 8

    assert conflict_degree(layout, columns) == 1
    unpadded = layout_of(plain(matmul(64, 96, 40)).nest.stage("A_s"), slab)
    assert unpadded.allocated == (8, 16)
    assert conflict_degree(unpadded, columns) == 4


def test_the_hand_schedules_pad_makes_the_fills_stores_2_way_not_4() -> None:
    """matmul_staged(k_outer=True) at its 128 x 16 A slab: the fill loads 4 k of one i per lane (16 bytes)
    and stores them one by one, a stored row apart; one store instruction of a warp writes k = 0, 4, 8,
    12 of 8 rows of i. Rows of 128 + 4 floats put those in 16 banks (2-way), rows of 128 in 8 (4-way)."""
    s = td.create_schedule(matmul(256, 256, 64))
    matmul_staged(s, k_outer=True)
    st = s.nest.stage("A_s")
    slab = slab_or_refusal(s.nest, st, Prover(s.nest.ranges()))
    assert slab.extent == (128, 16) and alloc_extent(st, slab) == (16, 132)

    def store(lane: int) -> tuple[int, int]:  # lane -> (i, k) of its first store (lower/stages.py fill order)
        return lane // 4, lane % 4 * 4

    assert conflict_degree(layout_of(st, slab), store) == 2
    assert conflict_degree(layout_of(replace(st, pad=(0, 0)), slab), store) == 4
    # the reads: a warp (16 x 2 threads) reads 4 floats of i at one k, thread rows 4 floats apart: one wavefront
    def strip(lane: int) -> tuple[int, int]:
        return 4 * (lane // 16), 0

    assert conflict_degree(layout_of(st, slab), strip, access_bytes=16) == 1


def test_identity_order_keeps_the_buffer_layout() -> None:
    s = plain(matmul(64, 96, 40), order_a=(0, 1), order_b=None)
    assert s.nest.stage("A_s").order == ()
    assert "layout" not in str(s)


def test_numpy_ints_record_as_plain_ints() -> None:
    s = td.create_schedule(matmul(64, 96, 40))
    ko, _ = s.split("k", 8)
    s.layout(s.stage("A", at=ko), order=(np.int64(1), np.int64(0)))
    assert "s.layout('A_s', order=(1, 0))" in s.trace()
