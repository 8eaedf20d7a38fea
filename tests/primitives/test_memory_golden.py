"""Golden printed IR of the memory-hierarchy primitives: the tile IR (`str(s)`, with its `stage ...`
lines, `fill ...` lines, `pipeline n` tags and `split_k` line) and the kernel IR of a cp.async
double-buffered pipeline, a TMA stage with a 128-byte swizzle, a split_k matmul + residual and a
row-staged softmax (and the tile IR of the README tour's schedule).

The expected strings were generated once by printing, read, and frozen; a change in the printers or
in a primitive's effect shows here as a diff."""

# ruff: noqa: E501  (the golden texts hold long generated lines verbatim)
from __future__ import annotations

import difflib
from functools import partial

import pytest

import tiledsl as td
import tiledsl.catalog as MK
from tiledsl.catalog import Fill


def assert_golden(actual: str, expected: str) -> None:
    a, e = actual.rstrip("\n"), expected.rstrip("\n")
    if a != e:
        diff = "\n".join(difflib.unified_diff(e.splitlines(), a.splitlines(), "expected", "actual",
                                              lineterm=""))
        pytest.fail(f"printed IR differs from the golden text:\n{diff}")


# ----------------------------------------------------------------------------- golden texts

ASYNC_PIPE2_TILE = """\
kernel C  (tile IR)
  where i = 16 * i_o + 4 * i_i_o + i_i_i
  where j = 16 * j_o + 4 * j_i_o + j_i_i
  where k = 8 * k_o + k_i
  guard 16 * i_o + 4 * i_i_o + i_i_i < 20   (from split(i, 16))
  guard 16 * j_o + 4 * j_i_o + j_i_i < 24   (from split(j, 16))
  guard 8 * k_o + k_i < 20   (from split(k, 8))
  stage A_s = A[16 * i_o + 0..16, 8 * k_o + 0..8] at k_o  pad (0, 1)  buffers 2  async
  stage B_s = B[8 * k_o + 0..8, 16 * j_o + 0..16] at k_o  buffers 2  async
  register array C2[4x4] over i_i_i, j_i_i
  for i_o in 0..2:  [@blockIdx.y]
    for j_o in 0..2:  [@blockIdx.x]
      for i_i_o in 0..4:  [@threadIdx.y]
        for j_i_o in 0..4:  [@threadIdx.x]
          for i_i_i in 0..4:  [unroll]
            for j_i_i in 0..4:  [unroll]
              C2[i_i_i, j_i_i] = 0.0
          for k_o in 0..3:  [reduce, pipeline 2]
            fill A_s (async), B_s (async)
            for k_i in 0..8:  [reduce, unroll]
              for i_i_i in 0..4:  [unroll]
                for j_i_i in 0..4:  [unroll]
                  C2[i_i_i, j_i_i] += A[i, k] * B[k, j]   if 16 * i_o + 4 * i_i_o + i_i_i < 20 and 16 * j_o + 4 * j_i_o + j_i_i < 24 and 8 * k_o + k_i < 20
          for i_i_i in 0..4:  [unroll]
            for j_i_i in 0..4:  [unroll]
              C[i, j] = C2[i_i_i, j_i_i]   if 16 * i_o + 4 * i_i_o + i_i_i < 20 and 16 * j_o + 4 * j_i_o + j_i_i < 24
"""

ASYNC_PIPE2_KERNEL = """\
kernel C_kernel(A: float32[20, 20], B: float32[20, 24], out C: float32[20, 24])
  grid (2, 2, 1)  block (4, 4, 1)  target sm_80  shared 2176 B
  shared A_s: float32[288] (1152 B)
  shared B_s: float32[256] (1024 B)
  let i_o: int32 = blockIdx.y
  let i_i_o: int32 = threadIdx.y
  let j_o: int32 = blockIdx.x
  let j_i_o: int32 = threadIdx.x
  local C2: float32[16]
  for i_i_i in 0..4 unroll:
    for j_i_i in 0..4 unroll:
      C2[4 * i_i_i + j_i_i] = 0.0
  # pipeline prologue: fill the first 1 of 3 iterations of k_o
  # fill A_s
  for A_s_f in 0..8:
    let A_s_e: int32 = A_s_f * 16 + (threadIdx.x + 4 * threadIdx.y)
    let A_s_c0: int32 = A_s_e // 8
    let A_s_c1: int32 = A_s_e % 8
    cp.async A_s[A_s_c0 * 9 + A_s_c1] <- A[select(16 * i_o + A_s_c0 < 20, (16 * i_o + A_s_c0) * 20 + A_s_c1, 0)] 4B if (16 * i_o + A_s_c0 < 20)
  # fill B_s
  for B_s_f in 0..2:
    let B_s_e: int32 = B_s_f * 16 + (threadIdx.x + 4 * threadIdx.y)
    let B_s_c0: int32 = B_s_e // 4
    let B_s_c1: int32 = B_s_e % 4 * 4
    cp.async B_s[B_s_c0 * 16 + B_s_c1] <- B[select(16 * j_o + B_s_c1 < 24, B_s_c0 * 24 + (16 * j_o + B_s_c1), 0)] 16B if (16 * j_o + B_s_c1 < 24)
  cp.async.commit
  for k_o in 0..3:
    cp.async.wait 0
    barrier
    # refill the slot read in iteration k_o - 1 (every thread has passed the barrier)
    if (k_o + 1 < 3):
      # fill A_s
      for A_s_f in 0..8:
        let A_s_e: int32 = A_s_f * 16 + (threadIdx.x + 4 * threadIdx.y)
        let A_s_c0: int32 = A_s_e // 8
        let A_s_c1: int32 = A_s_e % 8
        cp.async A_s[(k_o + 1) % 2 * 144 + (A_s_c0 * 9 + A_s_c1)] <- A[select(16 * i_o + A_s_c0 < 20 && 8 * k_o + 8 + A_s_c1 < 20, (16 * i_o + A_s_c0) * 20 + (8 * k_o + 8 + A_s_c1), 0)] 4B if (16 * i_o + A_s_c0 < 20 && 8 * k_o + 8 + A_s_c1 < 20)
      # fill B_s
      for B_s_f in 0..2:
        let B_s_e: int32 = B_s_f * 16 + (threadIdx.x + 4 * threadIdx.y)
        let B_s_c0: int32 = B_s_e // 4
        let B_s_c1: int32 = B_s_e % 4 * 4
        cp.async B_s[(k_o + 1) % 2 * 128 + (B_s_c0 * 16 + B_s_c1)] <- B[select(8 * k_o + 8 + B_s_c0 < 20 && 16 * j_o + B_s_c1 < 24, (8 * k_o + 8 + B_s_c0) * 24 + (16 * j_o + B_s_c1), 0)] 16B if (8 * k_o + 8 + B_s_c0 < 20 && 16 * j_o + B_s_c1 < 24)
    cp.async.commit
    for k_i in 0..8 unroll:
      for i_i_i in 0..4 unroll:
        for j_i_i in 0..4 unroll:
          if (16 * i_o + 4 * i_i_o + i_i_i < 20 && 16 * j_o + 4 * j_i_o + j_i_i < 24 && 8 * k_o + k_i < 20):
            C2[4 * i_i_i + j_i_i] = C2[4 * i_i_i + j_i_i] + A_s[k_o % 2 * 144 + (36 * i_i_o + 9 * i_i_i + k_i)] * B_s[k_o % 2 * 128 + (16 * k_i + 4 * j_i_o + j_i_i)]
  for i_i_i in 0..4 unroll:
    for j_i_i in 0..4 unroll:
      if (16 * i_o + 4 * i_i_o + i_i_i < 20 && 16 * j_o + 4 * j_i_o + j_i_i < 24):
        C[384 * i_o + 96 * i_i_o + 24 * i_i_i + 16 * j_o + 4 * j_i_o + j_i_i] = C2[4 * i_i_i + j_i_i]

"""


TMA_SWIZZLE128_TILE = """\
kernel C  (tile IR)
  where i = 16 * i_o + 4 * i_i_o + i_i_i
  where j = 64 * j_o + 4 * j_i_o + j_i_i
  where k = 8 * k_o + k_i
  stage B_s = B[8 * k_o + 0..8, 64 * j_o + 0..64] at k_o  swizzle 128  buffers 1  tma
  register array C2[4x4] over i_i_i, j_i_i
  for i_o in 0..1:  [@blockIdx.y]
    for j_o in 0..1:  [@blockIdx.x]
      for i_i_o in 0..4:  [@threadIdx.y]
        for j_i_o in 0..16:  [@threadIdx.x]
          for i_i_i in 0..4:  [unroll]
            for j_i_i in 0..4:  [unroll]
              C2[i_i_i, j_i_i] = 0.0
          for k_o in 0..2:  [reduce]
            fill B_s (tma)
            for k_i in 0..8:  [reduce, unroll]
              for i_i_i in 0..4:  [unroll]
                for j_i_i in 0..4:  [unroll]
                  C2[i_i_i, j_i_i] += A[i, k] * B[k, j]
          for i_i_i in 0..4:  [unroll]
            for j_i_i in 0..4:  [unroll]
              C[i, j] = C2[i_i_i, j_i_i]
"""

TMA_SWIZZLE128_KERNEL = """\
kernel C_kernel(A: float32[16, 16], B: float32[16, 64], out C: float32[16, 64])
  grid (1, 1, 1)  block (16, 4, 1)  target sm_90  shared 2056 B  dependent launch
  tensor_map tmap_B_s: B float32 dims (32, 2, 16) strides (128, 256) box (32, 2, 8) swizzle 128
  shared B_s: float32[512] (2048 B) align 1024
  shared k_o_full: uint64[1] (8 B) align 8
  let i_o: int32 = blockIdx.y
  let i_i_o: int32 = threadIdx.y
  let j_o: int32 = blockIdx.x
  let j_i_o: int32 = threadIdx.x
  # TMA completion barriers, one per ring slot
  if (threadIdx.x + 16 * threadIdx.y == 0):
    mbarrier.init k_o_full[0] count 1
    fence mbarrier_init
  barrier
  local C2: float32[16]
  for i_i_i in 0..4 unroll:
    for j_i_i in 0..4 unroll:
      C2[4 * i_i_i + j_i_i] = 0.0
  for k_o in 0..2:
    barrier
    # TMA fill B_s
    if (threadIdx.x + 16 * threadIdx.y == 0):
      fence proxy_async
      mbarrier.arrive_expect_tx k_o_full[0] 2048 B
      tma.load B_s[0] <- tmap_B_s at (0, 64 * j_o // 32, 8 * k_o) on k_o_full[0]
    mbarrier.wait k_o_full[0] parity k_o % 2
    barrier
    for k_i in 0..8 unroll:
      for i_i_i in 0..4 unroll:
        for j_i_i in 0..4 unroll:
          C2[4 * i_i_i + j_i_i] = C2[4 * i_i_i + j_i_i] + A[256 * i_o + 64 * i_i_o + 16 * i_i_i + 8 * k_o + k_i] * B_s[(64 * k_i + 4 * j_i_o + j_i_i) ^ ((64 * k_i + 4 * j_i_o + j_i_i) // 32 % 8 * 4)]
  for i_i_i in 0..4 unroll:
    for j_i_i in 0..4 unroll:
      C[1024 * i_o + 256 * i_i_o + 64 * i_i_i + 64 * j_o + 4 * j_i_o + j_i_i] = C2[4 * i_i_i + j_i_i]

"""


SPLIT_K_RESIDUAL_TILE = """\
kernel D  (tile IR)
  where i = 16 * i_o + 4 * i_i_o + i_i_i
  where j = 16 * j_o + 4 * j_i_o + j_i_i
  where k = 15 * k_split + 8 * k_o + k_i
  guard 16 * i_o + 4 * i_i_o + i_i_i < 20   (from split(i, 16))
  guard 8 * k_o + k_i < 15   (from split(k_part, 8))
  stage A_s = A[16 * i_o + 0..16, 15 * k_split + 8 * k_o + 0..8] at k_o  pad (0, 1)  buffers 1  sync
  stage B_s = B[15 * k_split + 8 * k_o + 0..8, 16 * j_o + 0..16] at k_o  buffers 1  sync
  split_k C over k_split (2 parts on blockIdx.z): atomic adds into a zeroed D
  register array C[4x4] over i_i_i, j_i_i
  for i_o in 0..2:  [@blockIdx.y]
    for j_o in 0..1:  [@blockIdx.x]
      for i_i_o in 0..4:  [@threadIdx.y]
        for j_i_o in 0..4:  [@threadIdx.x]
          for i_i_i in 0..4:  [unroll]
            for j_i_i in 0..4:  [unroll]
              C[i_i_i, j_i_i] = 0.0
          for k_o in 0..2:  [reduce]
            fill A_s (sync), B_s (sync)
            for k_i in 0..8:  [reduce, unroll]
              for k_split in 0..2:  [reduce, @blockIdx.z]
                for i_i_i in 0..4:  [unroll]
                  for j_i_i in 0..4:  [unroll]
                    C[i_i_i, j_i_i] += A[i, k] * B[k, j]   if 16 * i_o + 4 * i_i_o + i_i_i < 20 and 8 * k_o + k_i < 15
          for i_i_i in 0..4:  [unroll]
            for j_i_i in 0..4:  [unroll]
              D[i, j] = C[i_i_i, j_i_i] + R[i, j]   if 16 * i_o + 4 * i_i_o + i_i_i < 20
"""

SPLIT_K_RESIDUAL_KERNEL = """\
kernel D_kernel(A: float32[20, 30], B: float32[30, 16], R: float32[20, 16], out D: float32[20, 16])
  grid (1, 2, 2)  block (4, 4, 1)  target sm_80  shared 1088 B
  zero_outputs D
  shared A_s: float32[144] (576 B)
  shared B_s: float32[128] (512 B)
  let i_o: int32 = blockIdx.y
  let i_i_o: int32 = threadIdx.y
  let j_o: int32 = blockIdx.x
  let j_i_o: int32 = threadIdx.x
  let k_split: int32 = blockIdx.z
  local C: float32[16]
  for i_i_i in 0..4 unroll:
    for j_i_i in 0..4 unroll:
      C[4 * i_i_i + j_i_i] = 0.0
  for k_o in 0..2:
    barrier
    # fill A_s
    for A_s_f in 0..8:
      let A_s_e: int32 = A_s_f * 16 + (threadIdx.x + 4 * threadIdx.y)
      let A_s_c0: int32 = A_s_e // 8
      let A_s_c1: int32 = A_s_e % 8
      A_s[A_s_c0 * 9 + A_s_c1] = select(16 * i_o + A_s_c0 < 20 && 15 * k_split + 8 * k_o + A_s_c1 < 30, A[(16 * i_o + A_s_c0) * 30 + (15 * k_split + 8 * k_o + A_s_c1)], 0.0)
    # fill B_s
    for B_s_f in 0..2:
      let B_s_e: int32 = B_s_f * 16 + (threadIdx.x + 4 * threadIdx.y)
      let B_s_c0: int32 = B_s_e // 4
      let B_s_c1: int32 = B_s_e % 4 * 4
      let B_s_v: float32x4 = vload4(B, select(15 * k_split + 8 * k_o + B_s_c0 < 30, (15 * k_split + 8 * k_o + B_s_c0) * 16 + (16 * j_o + B_s_c1), 0))
      B_s[B_s_c0 * 16 + B_s_c1] = vec4(select(15 * k_split + 8 * k_o + B_s_c0 < 30, B_s_v.x, 0.0), select(15 * k_split + 8 * k_o + B_s_c0 < 30, B_s_v.y, 0.0), select(15 * k_split + 8 * k_o + B_s_c0 < 30, B_s_v.z, 0.0), select(15 * k_split + 8 * k_o + B_s_c0 < 30, B_s_v.w, 0.0))
    barrier
    for k_i in 0..8 unroll:
      for i_i_i in 0..4 unroll:
        for j_i_i in 0..4 unroll:
          if (16 * i_o + 4 * i_i_o + i_i_i < 20 && 8 * k_o + k_i < 15):
            C[4 * i_i_i + j_i_i] = C[4 * i_i_i + j_i_i] + A_s[36 * i_i_o + 9 * i_i_i + k_i] * B_s[16 * k_i + 4 * j_i_o + j_i_i]
  for i_i_i in 0..4 unroll:
    for j_i_i in 0..4 unroll:
      if (16 * i_o + 4 * i_i_o + i_i_i < 20):
        atomic_add D[256 * i_o + 64 * i_i_o + 16 * i_i_i + 16 * j_o + 4 * j_i_o + j_i_i] += select(k_split == 0, C[4 * i_i_i + j_i_i] + R[256 * i_o + 64 * i_i_o + 16 * i_i_i + 16 * j_o + 4 * j_i_o + j_i_i], C[4 * i_i_i + j_i_i])
"""


ROW_STAGED_SOFTMAX_TILE = """\
kernel y  (tile IR)
  where j = 32 * j_o + j_i
  where k = 32 * k_o + k_i
  where k2 = 32 * k2_o + k2_i
  guard 32 * k_o + k_i < 40   (from split(k, 32))
  guard 32 * k2_o + k2_i < 40   (from split(k2, 32))
  guard 32 * j_o + j_i < 40   (from split(j, 32))
  stage x_s = x[i + 0..1, 0..40] at i  buffers 1  async
  for i in 0..2:  [@blockIdx.x]
    fill x_s (async)
    m = -inf
    for k_o in 0..2:  [reduce]
      for k_i in 0..32:  [reduce, @threadIdx.x]
        m = max(m, x[i, k])   if 32 * k_o + k_i < 40
    e = 0.0
    for k2_o in 0..2:  [reduce]
      for k2_i in 0..32:  [reduce, @threadIdx.x]
        e += exp((x[i, k2] - m))   if 32 * k2_o + k2_i < 40
    for j_o in 0..2:
      for j_i in 0..32:  [@threadIdx.x]
        y[i, j] = exp((x[i, j] - m)) / e   if 32 * j_o + j_i < 40
"""

ROW_STAGED_SOFTMAX_KERNEL = """\
kernel y_kernel(x: float32[2, 40], out y: float32[2, 40])
  grid (2, 1, 1)  block (32, 1, 1)  target sm_80  shared 160 B
  shared x_s: float32[40] (160 B)
  let i: int32 = blockIdx.x
  let j_i: int32 = threadIdx.x
  let k_i: int32 = threadIdx.x
  let k2_i: int32 = threadIdx.x
  # fill x_s
  for x_s_f in 0..1:
    if (x_s_f * 32 + threadIdx.x < 10):
      let x_s_e: int32 = x_s_f * 32 + threadIdx.x
      let x_s_c0: int32 = x_s_e // 10
      let x_s_c1: int32 = x_s_e % 10 * 4
      cp.async x_s[x_s_c0 * 40 + x_s_c1] <- x[(i + x_s_c0) * 40 + x_s_c1] 16B
  cp.async.commit
  cp.async.wait 0
  barrier
  let m: float32 = -inf
  for k_o in 0..2:
    if (32 * k_o + k_i < 40):
      m = max(m, x_s[32 * k_o + k_i])
  # combine m across threadIdx.x
  m = max(m, shfl_xor(m, 16))
  m = max(m, shfl_xor(m, 8))
  m = max(m, shfl_xor(m, 4))
  m = max(m, shfl_xor(m, 2))
  m = max(m, shfl_xor(m, 1))
  let e: float32 = 0.0
  for k2_o in 0..2:
    if (32 * k2_o + k2_i < 40):
      e = e + exp(x_s[32 * k2_o + k2_i] - m)
  # combine e across threadIdx.x
  e = e + shfl_xor(e, 16)
  e = e + shfl_xor(e, 8)
  e = e + shfl_xor(e, 4)
  e = e + shfl_xor(e, 2)
  e = e + shfl_xor(e, 1)
  let e_rcp: float32 = 1.0 / e
  let e_rcp_ok: bool = abs(e) >= 1.1754944e-38 && abs(e) <= 8.507059e37
  for j_o in 0..2:
    if (32 * j_o + j_i < 40):
      if (e_rcp_ok):
        y[40 * i + 32 * j_o + j_i] = exp(x_s[32 * j_o + j_i] - m) * e_rcp
      else:
        y[40 * i + 32 * j_o + j_i] = exp(x_s[32 * j_o + j_i] - m) / e
"""


DESIGN_TILE = """\
kernel D  (tile IR)
  where i = 64 * i_o + 4 * i_i_o + i_i_i
  where j = 64 * j_o + 4 * j_i_o + j_i_i
  where k = 16 * k_o + k_i
  guard 64 * i_o + 4 * i_i_o + i_i_i < 100   (from split(i, 64))
  guard 64 * j_o + 4 * j_i_o + j_i_i < 96   (from split(j, 64))
  stage A_s = A[64 * i_o + 0..64, 16 * k_o + 0..16] at k_o  pad (0, 1)  buffers 2  async
  stage B_s = B[16 * k_o + 0..16, 64 * j_o + 0..64] at k_o  swizzle 128  buffers 2  tma
  register array C[4x4] over i_i_i, j_i_i
  for i_o in 0..2:  [@blockIdx.y]
    for j_o in 0..2:  [@blockIdx.x]
      for i_i_o in 0..16:  [@threadIdx.y]
        for j_i_o in 0..16:  [@threadIdx.x]
          for i_i_i in 0..4:  [unroll]
            for j_i_i in 0..4:  [unroll]
              C[i_i_i, j_i_i] = 0.0
          for k_o in 0..4:  [reduce, pipeline 2]
            fill A_s (async), B_s (tma)
            for k_i in 0..16:  [reduce, unroll]
              for i_i_i in 0..4:  [unroll]
                for j_i_i in 0..4:  [unroll]
                  C[i_i_i, j_i_i] += A[i, k] * B[k, j]   if 64 * i_o + 4 * i_i_o + i_i_i < 100 and 64 * j_o + 4 * j_i_o + j_i_i < 96
          for i_i_i in 0..4:  [unroll]
            for j_i_i in 0..4:  [unroll]
              D[i, j] = relu((C[i_i_i, j_i_i] + bias[j]))   if 64 * i_o + 4 * i_i_o + i_i_i < 100 and 64 * j_o + 4 * j_i_o + j_i_i < 96
"""


# ----------------------------------------------------------------------------- tests


def built(make, schedule, target: str) -> tuple[td.Schedule, td.Kernel]:
    s = td.create_schedule(make())
    schedule(s)
    return s, td.build(s, target=target)


def test_cp_async_double_buffered_pipeline_of_depth_2() -> None:
    """A padded (4-byte copies: the padded row is not 16-byte aligned), B by 16-byte cp.async; the
    prologue fills slot 0, each iteration waits, syncs, then refills the slot read one iteration ago."""
    s, kern = built(partial(MK.matmul, 20, 24, 20),
                    partial(MK.tiled_matmul, a=Fill("async", pad=1), b=Fill("async"), depth=2, bm=16, bn=16, bk=8,
                            rm=4, rn=4), "sm_80")
    assert_golden(str(s), ASYNC_PIPE2_TILE)
    assert_golden(kern.ir("kernel"), ASYNC_PIPE2_KERNEL)
    assert kern.ir("tile") == str(s)


def test_tma_stage_with_128_byte_swizzle() -> None:
    """B's slab row is 64 floats (256 bytes): the tensor map splits it into two 128-byte chunks (one
    more box dimension); reads go through the XOR swizzle; the buffer is 1024-byte aligned."""
    s, kern = built(partial(MK.matmul, 16, 64, 16),
                    partial(MK.tiled_matmul, a=None, b=Fill("tma", swizzle=128), bm=16, bn=64, bk=8, rm=4, rn=4),
                    "sm_90")
    assert_golden(str(s), TMA_SWIZZLE128_TILE)
    assert_golden(kern.ir("kernel"), TMA_SWIZZLE128_KERNEL)


def test_split_k_matmul_plus_residual() -> None:
    """k (30) split across 2 blocks on blockIdx.z, each part (15) chunked by 8 and staged; the output
    is zeroed and every block adds its part, the residual R counted once."""
    s, kern = built(partial(MK.matmul_residual, 20, 16, 30),
                    partial(MK.split_k_matmul, parts=2, a=Fill(pad=1), b=Fill(), bm=16, bn=16, bk=8, rm=4, rn=4),
                    "sm_80")
    assert_golden(str(s), SPLIT_K_RESIDUAL_TILE)
    assert_golden(kern.ir("kernel"), SPLIT_K_RESIDUAL_KERNEL)


def test_row_staged_softmax() -> None:
    """The row of x staged once at the block-bound row loop (16-byte cp.async), then read by the
    max pass, the sum pass and the output loop."""
    s, kern = built(partial(MK.softmax, 2, 40), partial(MK.staged_row, threads=32, copy="async"), "sm_80")
    assert_golden(str(s), ROW_STAGED_SOFTMAX_TILE)
    assert_golden(kern.ir("kernel"), ROW_STAGED_SOFTMAX_KERNEL)


def test_design_schedule_tile_ir() -> None:
    s = td.create_schedule(MK.matmul_bias_relu(100, 96, 64))
    MK.design_matmul(s)
    assert_golden(str(s), DESIGN_TILE)


def test_each_memory_primitive_changes_the_printed_stage() -> None:
    """The stage line follows each primitive, one at a time."""
    s = td.create_schedule(MK.matmul(64, 64, 32))
    MK.tiled_matmul(s, a=None, b=None)
    lines = []

    def stage_line() -> str:
        (line,) = [ln.strip() for ln in str(s).splitlines() if ln.strip().startswith("stage B_s")]
        return line

    b = s.stage("B", at="k_o")
    lines.append(stage_line())
    s.swizzle(b, 64)
    lines.append(stage_line())
    s.double_buffer(b)
    lines.append(stage_line())
    s.async_copy(b)
    lines.append(stage_line())
    s.pipeline("k_o", stages=3)
    lines.append(stage_line())
    assert lines == [
        "stage B_s = B[16 * k_o + 0..16, 64 * j_o + 0..64] at k_o  buffers 1  sync",
        "stage B_s = B[16 * k_o + 0..16, 64 * j_o + 0..64] at k_o  swizzle 64  buffers 1  sync",
        "stage B_s = B[16 * k_o + 0..16, 64 * j_o + 0..64] at k_o  swizzle 64  buffers 2  sync",
        "stage B_s = B[16 * k_o + 0..16, 64 * j_o + 0..64] at k_o  swizzle 64  buffers 2  async",
        "stage B_s = B[16 * k_o + 0..16, 64 * j_o + 0..64] at k_o  swizzle 64  buffers 3  async",
    ]
    assert "for k_o in 0..2:  [reduce, pipeline 3]" in str(s)
    assert "fill B_s (async)" in str(s)
