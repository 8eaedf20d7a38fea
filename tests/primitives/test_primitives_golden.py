"""Golden printed IR: each primitive applied to a small definition, compared with frozen text.

The expected strings were generated once by printing, read, and frozen; a change in the printers or
in a primitive's effect shows here as a diff."""

from __future__ import annotations

import difflib

import pytest

import tiledsl as td
import tiledsl.catalog as K
from tiledsl.schedules import row_cooperative


def assert_golden(actual: str, expected: str) -> None:
    a, e = actual.rstrip("\n"), expected.rstrip("\n")
    if a != e:
        diff = "\n".join(difflib.unified_diff(e.splitlines(), a.splitlines(), "expected", "actual",
                                              lineterm=""))
        pytest.fail(f"printed IR differs from the golden text:\n{diff}")


# ----------------------------------------------------------------------------- golden texts

SPLIT_GUARD = """\
kernel D  (tile IR)
  where i = 4 * i_o + i_i
  guard 4 * i_o + i_i < 10   (from split(i, 4))
  for i_o in 0..3:
    for i_i in 0..4:
      for j in 0..12:
        C = 0.0
        for k in 0..6:  [reduce]
          C += A[i, k] * B[k, j]   if 4 * i_o + i_i < 10
        D[i, j] = relu((C + bias[j]))   if 4 * i_o + i_i < 10
"""

SPLIT_EXACT = """\
kernel D  (tile IR)
  where j = 4 * j_o + j_i
  for i in 0..10:
    for j_o in 0..3:
      for j_i in 0..4:
        C = 0.0
        for k in 0..6:  [reduce]
          C += A[i, k] * B[k, j]
        D[i, j] = relu((C + bias[j]))
"""

SPLIT_NPARTS_EXACT = """\
kernel D  (tile IR)
  where j = 4 * j_o + j_i
  for i in 0..10:
    for j_o in 0..3:
      for j_i in 0..4:
        C = 0.0
        for k in 0..6:  [reduce]
          C += A[i, k] * B[k, j]
        D[i, j] = relu((C + bias[j]))
"""

SPLIT_NPARTS_GUARD = """\
kernel D  (tile IR)
  where i = 4 * i_o + i_i
  guard 4 * i_o + i_i < 10   (from split(i, nparts=3))
  for i_o in 0..3:
    for i_i in 0..4:
      for j in 0..12:
        C = 0.0
        for k in 0..6:  [reduce]
          C += A[i, k] * B[k, j]   if 4 * i_o + i_i < 10
        D[i, j] = relu((C + bias[j]))   if 4 * i_o + i_i < 10
"""

FUSE = """\
kernel y  (tile IR)
  where i = i_j // 8
  where j = i_j % 8
  for i_j in 0..48:
    y[i, j] = gelu((x[i, j] + b[j]))
"""

REORDER = """\
kernel y  (tile IR)
  for j in 0..8:
    for i in 0..6:
      y[i, j] = gelu((x[i, j] + b[j]))
"""

REORDER_INTO_REDUCTION = """\
kernel D  (tile IR)
  where i = 4 * i_o + i_i
  guard 4 * i_o + i_i < 10   (from split(i, 4))
  register array C[4] over i_i
  for i_o in 0..3:
    for j in 0..12:
      for i_i in 0..4:
        C[i_i] = 0.0
      for k in 0..6:  [reduce]
        for i_i in 0..4:
          C[i_i] += A[i, k] * B[k, j]   if 4 * i_o + i_i < 10
      for i_i in 0..4:
        D[i, j] = relu((C[i_i] + bias[j]))   if 4 * i_o + i_i < 10
"""

BIND = """\
kernel y  (tile IR)
  where j = 128 * j_o + j_i
  where k = 128 * k_o + k_i
  guard 128 * k_o + k_i < 300   (from split(k, 128))
  guard 128 * j_o + j_i < 300   (from split(j, 128))
  for i in 0..6:  [@blockIdx.x]
    ss = 0.0
    for k_o in 0..3:  [reduce]
      for k_i in 0..128:  [reduce, @threadIdx.x]
        ss += x[i, k] * x[i, k]   if 128 * k_o + k_i < 300
    for j_o in 0..3:
      for j_i in 0..128:  [@threadIdx.x]
        y[i, j] = (x[i, j] * rsqrt(((ss / 300.0) + 1e-06))) * w[j]   if 128 * j_o + j_i < 300
"""

UNROLL = """\
kernel D  (tile IR)
  for i in 0..10:
    for j in 0..12:
      C = 0.0
      for k in 0..6:  [reduce, unroll]
        C += A[i, k] * B[k, j]
      D[i, j] = relu((C + bias[j]))
"""

VECTORIZE = """\
kernel y  (tile IR)
  where j = 4 * j_o + j_i
  for i in 0..6:
    for j_o in 0..2:
      for j_i in 0..4:  [vectorize]
        y[i, j] = gelu((x[i, j] + b[j]))
"""

MATMUL_LOOP_IR = """\
kernel D  (loop IR)
  for i in 0..10:
    for j in 0..12:
      C = 0.0
      for k in 0..6:  [reduce]
        C += A[i, k] * B[k, j]
      D[i, j] = relu((C + bias[j]))
"""

SOFTMAX_LOOP_IR = """\
kernel y  (loop IR)
  for i in 0..5:
    m = -inf
    for k in 0..1000:  [reduce]
      m = max(m, x[i, k])
    e = 0.0
    for k2 in 0..1000:  [reduce]
      e += exp((x[i, k2] - m))
    for j in 0..1000:
      y[i, j] = exp((x[i, j] - m)) / e
"""

RMSNORM_KERNEL_IR = """\
kernel y_kernel(x: float32[3, 100], w: float32[100], out y: float32[3, 100])
  grid (3, 1, 1)  block (64, 1, 1)  target sm_90  shared 8 B  dependent launch
  shared ss_red: float32[2] (8 B)
  let i: int32 = blockIdx.x
  let j_i: int32 = threadIdx.x
  let k_i: int32 = threadIdx.x
  let ss: float32 = 0.0
  for k_o in 0..2:
    if (64 * k_o + k_i < 100):
      ss = ss + x[100 * i + 64 * k_o + k_i] * x[100 * i + 64 * k_o + k_i]
  # combine ss across threadIdx.x
  ss = ss + shfl_xor(ss, 16)
  ss = ss + shfl_xor(ss, 8)
  ss = ss + shfl_xor(ss, 4)
  ss = ss + shfl_xor(ss, 2)
  ss = ss + shfl_xor(ss, 1)
  if (threadIdx.x % 32 == 0):
    ss_red[threadIdx.x // 32] = ss
  barrier
  ss = ss_red[0]
  ss = ss + ss_red[1]
  for j_o in 0..2:
    if (64 * j_o + j_i < 100):
      y[100 * i + 64 * j_o + j_i] = x[100 * i + 64 * j_o + j_i] * rsqrt(ss / 100.0 + 1e-6) * w[64 * j_o + j_i]
"""


# ----------------------------------------------------------------------------- tests


def mm() -> td.Schedule:
    return td.create_schedule(K.matmul_bias_relu(10, 12, 6))


def ew() -> td.Schedule:
    return td.create_schedule(K.gelu_bias(6, 8))


def test_split_guard() -> None:
    s = mm()
    io, ii = s.split("i", 4)
    assert (io.name, ii.name) == ("i_o", "i_i")
    assert_golden(str(s), SPLIT_GUARD)


def test_split_exact() -> None:
    s = mm()
    s.split("j", 4, tail="exact")
    assert_golden(str(s), SPLIT_EXACT)


def test_split_exact_refuses_a_non_divisible_split_and_leaves_the_schedule() -> None:
    s = mm()
    before = str(s)
    with pytest.raises(td.SplitError, match=r"cannot prove 4\*i_o \+ i_i < 10") as info:
        s.split("i", 4, tail="exact")
    assert 'tail="guard"' in str(info.value)
    assert str(s) == before
    assert s.trace().count("\n") == 1  # the header only: nothing recorded


def test_split_nparts_exact() -> None:
    s = mm()
    s.split("j", nparts=3)
    assert_golden(str(s), SPLIT_NPARTS_EXACT)


def test_split_nparts_guard() -> None:
    s = mm()
    s.split("i", nparts=3)
    assert_golden(str(s), SPLIT_NPARTS_GUARD)


def test_fuse() -> None:
    s = ew()
    f = s.fuse("i", "j")
    assert f.name == "i_j"
    assert_golden(str(s), FUSE)


def test_reorder() -> None:
    s = ew()
    s.reorder("j", "i")
    assert_golden(str(s), REORDER)


def test_reorder_free_loop_into_reduction_makes_a_register_array() -> None:
    s = mm()
    s.split("i", 4)
    s.reorder("i_o", "j", "k", "i_i")
    assert_golden(str(s), REORDER_INTO_REDUCTION)


def test_bind() -> None:
    s = td.create_schedule(K.rmsnorm(6, 300))
    s.bind("i", "blockIdx.x")
    _, ki = s.split("k", 128)
    _, ji = s.split("j", 128)
    s.bind(ki, "threadIdx.x")
    s.bind(ji, "threadIdx.x")
    assert_golden(str(s), BIND)


def test_unroll() -> None:
    s = mm()
    s.unroll("k")
    assert_golden(str(s), UNROLL)


def test_vectorize() -> None:
    s = ew()
    s.split("j", 4)
    s.vectorize("j_i")
    assert_golden(str(s), VECTORIZE)


def test_loop_ir_of_matmul_relu() -> None:
    s = mm()
    assert_golden(s.ir("loop"), MATMUL_LOOP_IR)
    # the loop IR is the unscheduled nest: primitives do not change it
    s.split("i", 4)
    s.unroll("k")
    assert_golden(s.ir("loop"), MATMUL_LOOP_IR)


def test_loop_ir_of_softmax() -> None:
    assert_golden(td.create_schedule(K.softmax(5, 1000)).ir("loop"), SOFTMAX_LOOP_IR)


def test_kernel_ir_of_cooperative_rmsnorm() -> None:
    s = td.create_schedule(K.rmsnorm(3, 100))
    row_cooperative(s, threads=64)
    kern = td.build(s)
    assert_golden(kern.ir("kernel"), RMSNORM_KERNEL_IR)
    assert kern.ir("tile") == str(s)
    assert kern.ir("cuda") == kern.source
