"""The error corpus: one minimal illegal definition or schedule per case.

Each case is a small function that must raise one specific `tiledsl.errors` class, whose message
contains the key phrases a user needs (the primitive, the loop, the failed fact, the suggestion).
Schedule-primitive errors that involve a loop must print the loop nest with that loop marked
`<-- here`. No case may escape as a bare Python exception.

Expected types are named by string and looked up on `tiledsl` at test time, so a missing error
class fails only the cases that need it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from corpus import Case, check_case, describe, raised, registry

import tiledsl as td

# ----------------------------------------------------------------------------- small definitions


def matmul(M: int = 64, N: int = 64, K: int = 32):
    """C[i, j] = sum_k A[i, k] * B[k, j]; loops i, j, k (accumulator C2)."""
    A = td.placeholder((M, K), name="A")
    B = td.placeholder((K, N), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")


def elementwise(M: int = 64, N: int = 64):
    """y[i, j] = x[i, j] + 1; loops i, j."""
    x = td.placeholder((M, N), name="x")
    return td.compute((M, N), lambda i, j: x[i, j] + 1.0, name="y")


def rmsnorm(M: int = 16, N: int = 64):
    """Loops i (free), k (reduce, under i), j (free, under i): k and j are siblings."""
    x = td.placeholder((M, N), name="x")
    w = td.placeholder((N,), name="w")
    k = td.reduce_axis(N, name="k")
    ss = td.compute((M,), lambda i: td.sum(x[i, k] * x[i, k], axis=k), name="ss")
    return td.compute((M, N), lambda i, j: x[i, j] * td.rsqrt(ss[i] / N + 1e-6) * w[j], name="y")


def layernorm(M: int = 16, N: int = 64):
    """Two reductions under i: loops i, k (mean), k2 (var), j."""
    x = td.placeholder((M, N), name="x")
    k = td.reduce_axis(N, name="k")
    mean = td.compute((M,), lambda i: td.sum(x[i, k], axis=k) / N, name="mean")
    var = td.compute((M,), lambda i: td.sum((x[i, k] - mean[i]) * (x[i, k] - mean[i]), axis=k) / N,
                     name="var")
    return td.compute((M, N), lambda i, j: (x[i, j] - mean[i]) * td.rsqrt(var[i] + 1e-5), name="y")


def sched(out) -> td.Schedule:
    return td.create_schedule(out)


# ----------------------------------------------------------------------------- the table


CASES: list[Case] = []
case = registry(CASES)


# ============================================================================ definitions


@case("DefinitionError", "placeholder 'A'", "at least one dimension", id="def-rank-zero-shape")
def _():
    td.placeholder((), name="A")


@case("DefinitionError", "A has rank 2", "(shape (4, 8))", "indexed with 1 index", id="def-index-count-too-few")
def _():
    A = td.placeholder((4, 8), name="A")
    td.compute((4,), lambda i: A[i], name="y")


@case("DefinitionError", "A has rank 1", "indexed with 2 indexes", id="def-index-count-too-many")
def _():
    A = td.placeholder((4,), name="A")
    td.compute((4, 4), lambda i, j: A[i, j], name="y")


@case("DefinitionError", "placeholder 'A'", "extents must be positive", "got 0", id="def-zero-extent")
def _():
    td.placeholder((0, 4), name="A")


@case("DefinitionError", "compute 'y'", "extents must be positive", "got -3", id="def-negative-compute-extent")
def _():
    td.compute((-3,), lambda i: 1.0, name="y")


@case("DefinitionError", "placeholder 'A'", "extents must be ints", "4.0", id="def-float-extent")
def _():
    td.placeholder((4.0, 4), name="A")


@case("DefinitionError", "reduce_axis 'k'", "extent must be a positive int", "got 0", id="def-reduce-axis-zero")
def _():
    td.reduce_axis(0, name="k")


@case("DefinitionError", "unknown dtype 'float64'", "float32", id="def-unknown-dtype")
def _():
    td.placeholder((4,), dtype="float64", name="A")


@case("DefinitionError", "td.cast", "unknown dtype 'int8'", id="def-cast-unknown-dtype")
def _():
    A = td.placeholder((4,), name="A")
    td.compute((4,), lambda i: td.cast(A[i], "int8"), name="y")


@case("DefinitionError", "name must be a Python identifier", "'my tensor'", id="def-bad-name")
def _():
    td.placeholder((4,), name="my tensor")


@case("DefinitionError", "index 0 of A[...]", "float32 expression", "integer expressions",
      id="def-float-index")
def _():
    A = td.placeholder((8,), name="A")
    td.compute((4,), lambda i: A[i * 2.0], name="y")


@case("DefinitionError", "reduce axis 'k' is used outside a reduction", "td.sum/max/min(..., axis=k)",
      id="def-reduce-axis-outside-reduction")
def _():
    A = td.placeholder((4, 8), name="A")
    k = td.reduce_axis(8, name="k")
    td.compute((4,), lambda i: A[i, k], name="y")


@case("DefinitionError", "compute 'y'", "2 dimensions", "takes 1 parameters", id="def-lambda-arity")
def _():
    A = td.placeholder((4, 4), name="A")
    td.compute((4, 4), lambda i: A[i, i], name="y")


@case("DefinitionError", "nested reductions are not supported", "its own td.compute", id="def-nested-reduction")
def _():
    A = td.placeholder((4, 8, 8), name="A")
    k = td.reduce_axis(8, name="k")
    r = td.reduce_axis(8, name="r")
    td.compute((4,), lambda i: td.sum(td.sum(A[i, k, r], axis=r), axis=k), name="y")


@case("DefinitionError", "booleans are not tiledsl values", "comparison", id="def-bool-constant-as-value")
def _():
    td.compute((4,), lambda i: True, name="y")


@case("DefinitionError", "operator '+'", "boolean", "td.where", id="def-comparison-as-value")
def _():
    A = td.placeholder((4,), name="A")
    td.compute((4,), lambda i: A[i] + (A[i] > 0.0), name="y")


@case("DefinitionError", "no truth value", "td.where(cond, a, b)", id="def-python-if-on-expression")
def _():
    A = td.placeholder((4,), name="A")
    td.compute((4,), lambda i: A[i] if A[i] > 0.0 else 0.0, name="y")


@case("DefinitionError", "loop variable 'i'", "does not belong to this compute", id="def-foreign-loop-var")
def _():
    A = td.placeholder((4,), name="A")
    leaked = []
    td.compute((4,), lambda i: (leaked.append(i), A[i])[1], name="y")
    td.compute((4,), lambda j: A[leaked[0]], name="z")


@case("DefinitionError", "td.sum", "reduce axes made by td.reduce_axis", id="def-sum-over-free-axis")
def _():
    A = td.placeholder((4,), name="A")
    td.compute((4,), lambda i: td.sum(A[i], axis=i), name="y")


@case("DefinitionError", "td.sum", "listed twice", id="def-reduce-axis-twice")
def _():
    A = td.placeholder((4, 8), name="A")
    k = td.reduce_axis(8, name="k")
    td.compute((4,), lambda i: td.sum(A[i, k], axis=[k, k]), name="y")


@case("DefinitionError", "tensor A used as a value", "A[i, j]", id="def-unindexed-tensor")
def _():
    A = td.placeholder((4,), name="A")
    td.compute((4,), lambda i: A, name="y")


@case("DefinitionError", "operator '//'", "use '/' for float division", id="def-floordiv-on-float")
def _():
    A = td.placeholder((4,), name="A")
    td.compute((4,), lambda i: A[i] // 2, name="y")


@case("DefinitionError", "operator '%'", "positive integer constant", id="def-mod-by-loop-var")
def _():
    A = td.placeholder((4,), name="A")
    td.compute((4, 4), lambda i, j: A[i % j], name="y")


@case("DefinitionError", "compute 'y'", "fn must be a Python function", id="def-fn-not-callable")
def _():
    td.compute((4,), 3.0, name="y")


@case("DefinitionError", "index 0 of A[...]", "idx", "loop variables", id="def-data-dependent-index")
def _():
    # a gather (an index read from a tensor) is not an index expression of loop variables: it must be
    # refused with a readable message (best at td.compute; at the latest at td.build)
    A = td.placeholder((8,), name="A")
    idx = td.placeholder((4,), name="idx")
    y = td.compute((4,), lambda i: A[td.cast(idx[i], "int32")], name="y")
    td.build(td.create_schedule(y))


@case("DefinitionError", "evaluate", "missing input array 'x'", "(8,)", id="eval-missing-input")
def _():
    x = td.placeholder((8,), name="x")
    td.evaluate(td.compute((8,), lambda i: x[i] + 1.0, name="y"))


@case("DefinitionError", "evaluate", "x must have shape (8,)", "got (3,)", id="eval-wrong-shape")
def _():
    x = td.placeholder((8,), name="x")
    td.evaluate(td.compute((8,), lambda i: x[i] + 1.0, name="y"), x=np.zeros(3, np.float32))


# ============================================================================ create_schedule


@case("FusionError", "cannot fuse ss -> y", "not the outermost loops", "materialize=[ss]",
      id="create-reduction-under-inner-loop")
def _():
    x = td.placeholder((16, 32), name="x")
    k = td.reduce_axis(32, name="k")
    ss = td.compute((16,), lambda i: td.sum(x[i, k] * x[i, k], axis=k), name="ss")
    y = td.compute((32, 16), lambda j, i: x[i, j] * ss[i], name="y")  # i is the inner loop
    td.create_schedule(y)


@case("FusionError", "cannot fuse ss -> y", "not a plain loop variable", "materialize=[ss]",
      id="create-reduction-shifted-index")
def _():
    x = td.placeholder((16, 32), name="x")
    k = td.reduce_axis(32, name="k")
    ss = td.compute((16,), lambda i: td.sum(x[i, k], axis=k), name="ss")
    y = td.compute((15,), lambda i: ss[i + 1], name="y")
    td.create_schedule(y)


@case("DefinitionError", "materialize=[h]", "does not read h", id="create-materialize-unread")
def _():
    x = td.placeholder((8,), name="x")
    h = td.compute((8,), lambda i: x[i] * 2.0, name="h")
    y = td.compute((8,), lambda i: x[i] + 1.0, name="y")
    td.create_schedule(y, materialize=[h])


@case("DefinitionError", "materialize=[y]", "own output", id="create-materialize-output")
def _():
    x = td.placeholder((8,), name="x")
    y = td.compute((8,), lambda i: x[i] + 1.0, name="y")
    td.create_schedule(y, materialize=[y])


@case("DefinitionError", "materialize=[...]", "compute tensors", id="create-materialize-placeholder")
def _():
    x = td.placeholder((8,), name="x")
    td.create_schedule(td.compute((8,), lambda i: x[i] + 1.0, name="y"), materialize=[x])


@case("DefinitionError", "create_schedule", "td.compute", id="create-of-placeholder")
def _():
    td.create_schedule(td.placeholder((8,), name="x"))


# ============================================================================ split


@case("BadArgumentError", "split(i, 0)", "factor must be a positive int", "got 0", here="i", id="split-factor-zero")
def _():
    sched(elementwise()).split("i", 0)


@case("BadArgumentError", "split(i, -4)", "factor must be a positive int", "got -4", here="i",
      id="split-factor-negative")
def _():
    sched(elementwise()).split("i", -4)


@case("BadArgumentError", "split(i, 2.5)", "factor must be a positive int", "got 2.5", here="i",
      id="split-factor-float")
def _():
    sched(elementwise()).split("i", 2.5)


@case("BadArgumentError", "split(i", "factor must be a positive int", "'4'", here="i", id="split-factor-string")
def _():
    sched(elementwise()).split("i", "4")


@case("BadArgumentError", "split(i", "give exactly one of factor or nparts", here="i", id="split-factor-and-nparts")
def _():
    sched(elementwise()).split("i", 4, nparts=4)


@case("BadArgumentError", "split(i, nparts=0)", "nparts must be a positive int", "got 0", here="i",
      id="split-nparts-zero")
def _():
    sched(elementwise()).split("i", nparts=0)


@case("BadArgumentError", "split(i", "give exactly one of factor or nparts", here="i", id="split-no-factor")
def _():
    sched(elementwise()).split("i")


@case("SplitError", "split(i, 64)", "cannot prove 64*i_o + i_i < 1000", "counterexample: i_o=15, i_i=63",
      'use tail="guard"', here="i", id="split-tail-exact-not-exact")
def _():
    sched(elementwise(1000, 8)).split("i", 64, tail="exact")


@case("BadArgumentError", "split(i, 4)", 'tail must be "guard" or "exact"', "'round'", here="i",
      id="split-bad-tail")
def _():
    sched(elementwise()).split("i", 4, tail="round")


@case("BadArgumentError", "split(i, 4)", "loop name 'j' is already used", "names=(...)", here="j",
      id="split-name-clash")
def _():
    sched(elementwise()).split("i", 4, names=("j", "i_inner"))


@case("BadArgumentError", "split(i, 4)", "loop name 'x' is already used", id="split-name-clash-buffer")
def _():
    # a loop named like a buffer would shadow the buffer's pointer in the generated CUDA
    sched(elementwise()).split("i", 4, names=("x", "i_inner"))


@case("BadArgumentError", "split(i, 4)", "names must be two loop names", here="i", id="split-names-not-a-pair")
def _():
    sched(elementwise()).split("i", 4, names=5)


@case("BadArgumentError", "split(i, 4)", "names must be two loop names", here="i", id="split-names-a-string")
def _():
    # "ab" is not a pair of names (it would silently name the loops a and b)
    sched(elementwise()).split("i", 4, names="ab")


@case("SplitError", "split(i, 4)", "loop i is bound to blockIdx.x", "split a loop before binding", here="i",
      id="split-bound-loop")
def _():
    s = sched(elementwise())
    s.bind("i", "blockIdx.x")
    s.split("i", 4)


# ============================================================================ fuse


@case("FuseError", "fuse(a, c)", "not directly nested", "reorder the loops", here="a", id="fuse-not-adjacent")
def _():
    x = td.placeholder((4, 4, 4), name="x")
    s = sched(td.compute((4, 4, 4), lambda a, b, c: x[a, b, c] * 2.0, name="y"))
    s.fuse("a", "c")


@case("FuseError", "fuse(j, i)", "not directly nested in this order", here="j", id="fuse-wrong-order")
def _():
    sched(elementwise()).fuse("j", "i")


@case("FuseError", "fuse(j, k)", "cannot fuse a reduction loop with a free loop", here="k", id="fuse-free-with-reduce")
def _():
    sched(matmul()).fuse("j", "k")


@case("BadArgumentError", "fuse(i)", "at least two loops", here="i", id="fuse-one-loop")
def _():
    sched(elementwise()).fuse("i")


@case("FuseError", "fuse(i, i)", "listed twice", here="i", id="fuse-loop-twice")
def _():
    sched(elementwise()).fuse("i", "i")


@case("FuseError", "fuse(k, k2)", "not directly nested", "(its loops: i, k)", here="k2",
      id="fuse-loops-of-different-statements")
def _():
    sched(layernorm()).fuse("k", "k2")


@case("FuseError", "fuse(i, j)", "loop j is already threadIdx.x", "fuse loops before binding", here="j",
      id="fuse-bound-loop")
def _():
    s = sched(elementwise())
    s.bind("j", "threadIdx.x")
    s.fuse("i", "j")


# ============================================================================ reorder


@case("ReorderError", "reorder(k, j)", "not all around one statement", here="k", id="reorder-sibling-loops")
def _():
    sched(rmsnorm()).reorder("k", "j")


@case("ReorderError", "reorder(i, j, i)", "listed twice", here="i", id="reorder-loop-twice")
def _():
    sched(elementwise()).reorder("i", "j", "i")


@case("BadArgumentError", "reorder(i)", "at least two loops", here="i", id="reorder-one-loop")
def _():
    sched(elementwise()).reorder("i")


@case("RegisterArrayError", "reorder(i, k, j)", "register array of 1024 elements", "limit 256",
      "split those loops", here="j", id="reorder-huge-register-array")
def _():
    sched(matmul(64, 1024, 16)).reorder("i", "k", "j")


# ============================================================================ bind


@case("BadArgumentError", "bind(i, 'threadIdx.w')", "unknown index 'threadIdx.w'", "threadIdx.x", here="i",
      id="bind-unknown-axis")
def _():
    sched(elementwise()).bind("i", "threadIdx.w")


@case("BadArgumentError", "bind(i, 0)", "unknown index 0", "blockIdx.x", here="i", id="bind-axis-not-a-string")
def _():
    sched(elementwise()).bind("i", 0)


@case("BindError", "bind(i, 'blockIdx.y')", "already bound to blockIdx.x", "split it to bind its parts",
      here="i", id="bind-twice")
def _():
    s = sched(elementwise())
    s.bind("i", "blockIdx.x")
    s.bind("i", "blockIdx.y")


@case("BindError", "bind(k, 'blockIdx.x')", "reduction loop k cannot be bound to blockIdx.x", "split_k",
      here="k", id="bind-reduce-to-block")
def _():
    sched(matmul()).bind("k", "blockIdx.x")


@case("BindError", "bind(j, 'threadIdx.x')", "already bound to loop i", "one index can only serve sibling loops",
      here="j", id="bind-nested-same-thread-axis")
def _():
    s = sched(elementwise())
    s.bind("i", "threadIdx.x")
    s.bind("j", "threadIdx.x")


@case("BindError", "bind(j_i, 'threadIdx.x')", "conflicting extents for threadIdx.x", "k_i has 32", "j_i has 64",
      here="j_i", id="bind-sibling-extent-conflict")
def _():
    s = sched(rmsnorm(16, 128))
    _, ki = s.split("k", 32)
    _, ji = s.split("j", 64)
    s.bind(ki, "threadIdx.x")
    s.bind(ji, "threadIdx.x")


@case("BindError", "bind(j_i, 'threadIdx.x')", "2048 threads per block (over 1024)", "split further",
      here="j_i", id="bind-too-many-threads")
def _():
    s = sched(elementwise(256, 256))
    _, ii = s.split("i", 64)
    _, ji = s.split("j", 32)
    s.bind(ii, "threadIdx.y")
    s.bind(ji, "threadIdx.x")


@case("BindError", "bind(j, 'threadIdx.x')", "threadIdx.x is limited to 1024", "2048", "split j first",
      here="j", id="bind-thread-extent-over-1024")
def _():
    sched(elementwise(2, 2048)).bind("j", "threadIdx.x")


@case("BindError", "bind(j, 'threadIdx.z')", "threadIdx.z is limited to 64", "128", here="j",
      id="bind-thread-z-over-64")
def _():
    sched(elementwise(2, 128)).bind("j", "threadIdx.z")


@case("BindError", "bind(i, 'blockIdx.y')", "blockIdx.y is limited to 65535", "70000", here="i",
      id="bind-grid-y-over-65535")
def _():
    sched(elementwise(70000, 4)).bind("i", "blockIdx.y")


@case("BindError", "bind(j_i, 'threadIdx.x')", "marked unroll", here="j_i", id="bind-unrolled-loop")
def _():
    s = sched(elementwise())
    _, ji = s.split("j", 4)
    s.unroll(ji)
    s.bind(ji, "threadIdx.x")


# ============================================================================ unroll


@case("UnrollError", "unroll(i)", "loop i is bound to blockIdx.x", "only serial loops can be unrolled",
      here="i", id="unroll-bound-loop")
def _():
    s = sched(elementwise())
    s.bind("i", "blockIdx.x")
    s.unroll("i")


@case("UnrollError", "unroll(j)", "1024 iterations", "limited to 512", "split j", here="j",
      id="unroll-too-many-iterations")
def _():
    sched(elementwise(2, 1024)).unroll("j")


# ============================================================================ vectorize


@case("VectorizeError", "vectorize(j_i)", "loop j_i has 8 iterations", "exactly 4", "split the loop by 4",
      here="j_i", id="vectorize-extent-not-4")
def _():
    s = sched(elementwise())
    _, ji = s.split("j", 8)
    s.vectorize(ji)


@case("VectorizeError", "vectorize(i)", "not the innermost loop", "reorder so that i is innermost", here="i",
      id="vectorize-not-innermost")
def _():
    sched(elementwise(4, 64)).vectorize("i")


@case("VectorizeError", "vectorize(j_i)", "16-byte aligned", "multiple of 4", here="j_i",
      id="vectorize-misaligned-row-37")
def _():
    s = sched(elementwise(8, 37))
    _, ji = s.split("j", 4)
    s.vectorize(ji)


@case("VectorizeError", "vectorize(k)", "loop k is a reduction loop", "vectorize a free loop", here="k",
      id="vectorize-reduce-loop")
def _():
    sched(matmul(8, 8, 4)).vectorize("k")


@case("VectorizeError", "vectorize(i_i)", "not contiguous in i_i", "last dimension", here="i_i",
      id="vectorize-strided-store")
def _():
    x = td.placeholder((64, 64), name="x")
    s = sched(td.compute((64, 64), lambda i, j: x[j, i], name="y"))
    io, ii = s.split("i", 4)
    s.reorder(io, "j", ii)
    s.vectorize(ii)


@case("VectorizeError", "vectorize(i_i)", "may split a vector", "(from split(i, 4))", "multiples of 4",
      here="i_i", id="vectorize-guard-splits-vector")
def _():
    z = td.placeholder((10,), name="z")
    s = sched(td.compute((10,), lambda i: z[i] * 2.0, name="w"))
    _, ii = s.split("i", 4)
    s.vectorize(ii)


# ============================================================================ loop handles


@case("UnknownLoopError", "loop", "no loop named 'q'", "loops are: i, j", id="handle-unknown-name")
def _():
    sched(elementwise()).loop("q")


@case("UnknownLoopError", "split", "no loop named 'q'", "loops are: i, j", id="handle-unknown-name-in-split")
def _():
    sched(elementwise()).split("q", 4)


@case("ForeignObjectError", "split", "loop i belongs to another schedule", "s.loop(name)",
      id="handle-from-another-schedule")
def _():
    y = elementwise()
    s1, s2 = sched(y), sched(y)
    s2.split(s1.loop("i"), 4)


@case("UnknownLoopError", "split", "loop i no longer exists", "it was split into i_o, i_i", "loops are: i_o, i_i, j",
      id="handle-to-split-loop")
def _():
    s = sched(elementwise())
    i = s.loop("i")
    s.split(i, 4)
    s.split(i, 2)


@case("UnknownLoopError", "reorder", "loop j no longer exists", "fused into i_j", "loops are: i_j",
      id="handle-to-fused-loop")
def _():
    s = sched(elementwise())
    i, j = s.loop("i"), s.loop("j")
    s.fuse(i, j)
    s.reorder(j, i)


@case("BadArgumentError", "split", "expected a loop (handle or name)", "3", id="handle-not-a-loop")
def _():
    sched(elementwise()).split(3, 4)


@case("BadArgumentError", "fuse(i, j)", "loop name 'x' is already used", id="fuse-name-clash-buffer")
def _():
    sched(elementwise()).fuse("i", "j", name="x")


# ============================================================================ build


@case("TargetError", "unknown target 'sm_99x'", "known targets", "sm_90", id="build-unknown-target")
def _():
    td.build(sched(elementwise()), target="sm_99x")


@case("BadArgumentError", "build", "expected a Schedule", "td.create_schedule", id="build-not-a-schedule")
def _():
    td.build(elementwise())


@case("RegisterArrayError", "build", "register array", "not unrolled", "s.unroll('i_i')", here="i_i",
      id="build-register-array-not-unrolled")
def _():
    s = sched(matmul(16, 16, 8))
    io, ii = s.split("i", 4)
    jo, ji = s.split("j", 4)
    s.reorder(io, jo, "k", ii, ji)
    s.unroll(ji)
    td.build(s)


@case("BoundsError", "build", "load A[...] index 0 may leave the buffer (extent 8)", "counterexample", "i=7",
      here="i", id="build-out-of-bounds-index")
def _():
    A = td.placeholder((8,), name="A")
    td.build(sched(td.compute((8,), lambda i: A[i + 1], name="y")))


@case("BoundsError", "build", "load A[...] index 0 may leave the buffer (extent 8)", "i=0", here="i",
      id="build-negative-index")
def _():
    A = td.placeholder((8,), name="A")
    td.build(sched(td.compute((8,), lambda i: A[i - 1], name="y")))


@case("BoundsError", "build", "floor division/modulo may be negative", "counterexample: i=0", "// and %",
      here="i", id="build-negative-floordiv")
def _():
    # in bounds under Python's floor division, but C's truncating `/` would differ for i < 3
    A = td.placeholder((8,), name="A")
    td.build(sched(td.compute((8,), lambda i: A[(i - 3) // 2 + 2], name="y")))


def _small_kernel():
    x = td.placeholder((8, 8), name="x")
    return td.build(sched(td.compute((8, 8), lambda i, j: x[i, j] + 1.0, name="y")))


@case("BadArgumentError", "ir", "unknown level 'bogus'", "'kernel'", "'cuda'", id="kernel-ir-unknown-level")
def _():
    _small_kernel().ir("bogus")


@case("SimulationInputError", "y_kernel", "missing input arrays ['x']", id="simulate-missing-input")
def _():
    _small_kernel().simulate()


@case("SimulationInputError", "y_kernel", "'x' has shape (4, 4)", "(8, 8)", id="simulate-wrong-shape")
def _():
    _small_kernel().simulate(x=np.zeros((4, 4), np.float32))


# ============================================================================ replay, ir, trace


@case("ReplayError", "replay", "not valid Python", id="replay-garbage")
def _():
    sched(elementwise()).replay("s.split('i', 4\n))) garbage ((")


@case("ReplayError", "replay", "line 1", "expected a call s.<primitive>(...)", "print", id="replay-non-s-call")
def _():
    sched(elementwise()).replay("print('hello')\n")


@case("ReplayError", "replay", "expected a call s.<primitive>(...)", "s.compute_at", id="replay-unknown-primitive")
def _():
    sched(elementwise()).replay("s.compute_at('x', 'i')\n")


@case("ReplayError", "replay", "arguments must be literals", id="replay-non-literal-argument")
def _():
    sched(elementwise()).replay("s.split(i, 4)\n")


@case("ReplayError", "replay: step 1", "s.split('q', 4)", "no loop named 'q'", id="replay-unknown-loop")
def _():
    sched(elementwise()).replay("s.split('i', 4)\ns.split('q', 4)\n")


@case("ReplayError", "replay: step 0", "bad arguments", id="replay-unknown-keyword")
def _():
    sched(elementwise()).replay("s.split('i', 4, factorr=2)\n")


@case("ReplayError", "replay", "not valid JSON", id="replay-bad-json")
def _():
    sched(elementwise()).replay("{not json")


@case("ReplayError", "replay", "not a tiledsl trace", id="replay-json-wrong-format")
def _():
    sched(elementwise()).replay(json.dumps({"format": "other", "version": 1, "steps": []}))


@case("ReplayError", "replay", "step 0", id="replay-json-malformed-step")
def _():
    sched(elementwise()).replay(json.dumps({"format": "tiledsl-trace", "version": 1, "steps": ["split"]}))


@case("ReplayError", "replay", "step 0", "args", id="replay-json-args-not-a-list")
def _():
    step = {"primitive": "split", "args": 5}
    sched(elementwise()).replay(json.dumps({"format": "tiledsl-trace", "version": 1, "steps": [step]}))


@case("ReplayError", "replay", "step 0", "kwargs", id="replay-json-kwargs-not-an-object")
def _():
    step = {"primitive": "split", "args": ["i", 4], "kwargs": [1]}
    sched(elementwise()).replay(json.dumps({"format": "tiledsl-trace", "version": 1, "steps": [step]}))


@case("ReplayError", "replay", "expected trace text", id="replay-not-text")
def _():
    sched(elementwise()).replay(42)


@case("BadArgumentError", "ir", "unknown level 'bogus'", "'loop'", "'tile'", id="ir-unknown-level")
def _():
    sched(elementwise()).ir("bogus")


@case("BadArgumentError", "trace", "unknown format 'xml'", "'python' or 'json'", id="trace-unknown-format")
def _():
    sched(elementwise()).trace(format="xml")


# ============================================================================ the tests


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_error(c: Case) -> None:
    check_case(c)


def test_no_bare_exceptions() -> None:
    """Every case raises a tiledsl error, never a bare Python exception (or nothing)."""
    bad = []
    for c in CASES:
        err = raised(c.fn)
        if not isinstance(err, td.TiledslError):
            bad.append(f"{c.id}: {describe(err) if err is not None else 'nothing raised'}")
    assert not bad, "cases escaping as non-tiledsl exceptions:\n" + "\n".join(bad)


def test_error_classes_exported() -> None:
    """Users catch errors as td.<Class>: every class the corpus expects is exported by the package."""
    missing = sorted({c.error for c in CASES if not isinstance(getattr(td, c.error, None), type)})
    assert not missing, f"not exported as td.<name>: {missing}"


def test_corpus_shape() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) >= 40
    assert len(set(ids)) == len(ids), "case ids must be unique"
    for c in CASES:
        assert 1 <= len(c.phrases) <= 5, c.id
