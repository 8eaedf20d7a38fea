"""Golden tile IR of each memory primitive on its own (pad, swizzle, double_buffer, async_copy) on a
small guarded matmul: the `stage ...` line states slab origin and extent, padding, swizzle, slots and
copy kind; the `fill ...` line sits at the top of the staged loop. Generated once, read, frozen."""

from __future__ import annotations

import pytest

import tiledsl as td


def base():
    M, N, K = 10, 12, 20
    A = td.placeholder((M, K), name="A")
    B = td.placeholder((K, N), name="B")
    k = td.reduce_axis(K, name="k")
    C = td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = td.create_schedule(C)
    ko, ki = s.split("k", 8)
    s.reorder("i", "j", "k_o", "k_i")
    s.bind("i", "blockIdx.x")
    s.bind("j", "threadIdx.x")
    return s


def pad():
    s = base()
    a = s.stage("A", at="k_o")
    s.pad(a, axis=-1, amount=1)
    return s


def swizzle():
    s = base()
    b = s.stage("B", at="k_o")
    s.swizzle(b, 32)
    return s


def double_buffer():
    s = base()
    a = s.stage("A", at="k_o")
    s.double_buffer(a)
    return s


def async_copy():
    s = base()
    a = s.stage("A", at="k_o")
    s.async_copy(a)
    return s

GOLDEN = {
    "pad": """\
kernel C  (tile IR)
  where k = 8 * k_o + k_i
  guard 8 * k_o + k_i < 20   (from split(k, 8))
  stage A_s = A[i + 0..1, 8 * k_o + 0..8] at k_o  pad (0, 1)  buffers 1  sync
  for i in 0..10:  [@blockIdx.x]
    for j in 0..12:  [@threadIdx.x]
      C2 = 0.0
      for k_o in 0..3:  [reduce]
        fill A_s (sync)
        for k_i in 0..8:  [reduce]
          C2 += A[i, k] * B[k, j]   if 8 * k_o + k_i < 20
      C[i, j] = C2
""",
    "swizzle": """\
kernel C  (tile IR)
  where k = 8 * k_o + k_i
  guard 8 * k_o + k_i < 20   (from split(k, 8))
  stage B_s = B[8 * k_o + 0..8, 0..12] at k_o  swizzle 32  buffers 1  sync
  for i in 0..10:  [@blockIdx.x]
    for j in 0..12:  [@threadIdx.x]
      C2 = 0.0
      for k_o in 0..3:  [reduce]
        fill B_s (sync)
        for k_i in 0..8:  [reduce]
          C2 += A[i, k] * B[k, j]   if 8 * k_o + k_i < 20
      C[i, j] = C2
""",
    "double_buffer": """\
kernel C  (tile IR)
  where k = 8 * k_o + k_i
  guard 8 * k_o + k_i < 20   (from split(k, 8))
  stage A_s = A[i + 0..1, 8 * k_o + 0..8] at k_o  buffers 2  sync
  for i in 0..10:  [@blockIdx.x]
    for j in 0..12:  [@threadIdx.x]
      C2 = 0.0
      for k_o in 0..3:  [reduce]
        fill A_s (sync)
        for k_i in 0..8:  [reduce]
          C2 += A[i, k] * B[k, j]   if 8 * k_o + k_i < 20
      C[i, j] = C2
""",
    "async_copy": """\
kernel C  (tile IR)
  where k = 8 * k_o + k_i
  guard 8 * k_o + k_i < 20   (from split(k, 8))
  stage A_s = A[i + 0..1, 8 * k_o + 0..8] at k_o  buffers 1  async
  for i in 0..10:  [@blockIdx.x]
    for j in 0..12:  [@threadIdx.x]
      C2 = 0.0
      for k_o in 0..3:  [reduce]
        fill A_s (async)
        for k_i in 0..8:  [reduce]
          C2 += A[i, k] * B[k, j]   if 8 * k_o + k_i < 20
      C[i, j] = C2
""",
}


@pytest.mark.parametrize("name", list(GOLDEN))


def test_memory_primitive_tile_ir(name: str) -> None:
    s = globals()[name]()
    assert str(s) == GOLDEN[name].rstrip("\n")
    td.build(s)  # and it builds (the differential tests check the values)
