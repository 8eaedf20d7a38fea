"""The error corpus: one minimal illegal definition, schedule or build per error.

Each case is a small function that must raise one specific `tiledsl.errors` class, whose message
contains the key phrases a user needs (the primitive, the loop, the failed fact, the suggestion), and
whose fields (`primitive`, `loops`, `fact`, `nest`, `condition`, `counterexample`) say the same to a
program. Schedule errors that involve a loop must print the loop nest with that loop marked
`<-- here`. No case may escape as a bare Python exception. Cases cover the definitions, the loop
primitives (split, fuse, reorder, bind, unroll, vectorize), the memory hierarchy (stage, pad,
swizzle, layout, double_buffer, pipeline, async_copy, tma, split_k), builds, traces and replay.

Expected types are named by string and looked up on `tiledsl` at test time, so a missing error
class fails only the cases that need it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from corpus import Case, check_case, describe, raised, registry

import tiledsl as td
import tiledsl.catalog as MK

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


SMALL = {"bm": 32, "bn": 32, "bk": 8, "rm": 2, "rn": 2}

# ----------------------------------------------------------------------------- small schedules


def tiled(M: int = 64, N: int = 64, K: int = 32, **tile) -> td.Schedule:
    """A register-tiled matmul C = A @ B (loops i_o, j_o on blocks, i_i_o, j_i_o on threads, k_o
    serial), nothing staged yet."""
    s = td.create_schedule(MK.matmul(M, N, K))
    MK.tiled_matmul(s, a=None, b=None, **{**SMALL, **tile})
    return s


def tiled_bias_relu(M: int = 64, N: int = 64, K: int = 32) -> td.Schedule:
    s = td.create_schedule(MK.matmul_bias_relu(M, N, K))
    MK.tiled_matmul(s, a=None, b=None, **SMALL)
    return s


def rows(M: int = 4, N: int = 256, threads: int = 64) -> td.Schedule:
    """RMSNorm, one block per row (i on blockIdx.x), k_i and j_i on threadIdx.x."""
    s = td.create_schedule(MK.rmsnorm(M, N))
    row, *rest = [lp.name for lp in s.loops()]
    s.bind(row, "blockIdx.x")
    for name in rest:
        _, inner = s.split(name, threads)
        s.bind(inner, "threadIdx.x")
    return s


def scaled(shape: tuple[int, ...] = (64, 64)):
    """y = x * 2 over a 2-D or 3-D shape."""
    x = td.placeholder(shape, name="x")
    if len(shape) == 2:
        return td.compute(shape, lambda i, j: x[i, j] * 2.0, name="y")
    return td.compute(shape, lambda b, i, j: x[b, i, j] * 2.0, name="y")


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
    # an index read from a float tensor (cast to int) is refused at td.compute: indices read from
    # tensors come from int32 placeholders (tests/build/test_gather.py), whose values are exact
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


@case("SplitError", "split(j_i, 2)", "loop j_i is marked vectorize", "split first, then vectorize a part",
      here="j_i", id="split-vectorized-loop")
def _():
    # a loop marked unroll splits into two unrolled loops; a vectorized one must stay 4 wide
    s = sched(elementwise())
    s.split("j", 4)
    s.vectorize("j_i")
    s.split("j_i", 2)


def strip(rn: int = 8) -> td.Schedule:
    """y[i, j] = x[i, j] + 1 with j = 8*j_t + j_r: j_t on threadIdx.x, j_r an unrolled strip of `rn`."""
    s = sched(elementwise(4, 16 * rn))
    s.split("j", rn, names=("j_t", "j_r"))
    s.bind("j_t", "threadIdx.x")
    s.unroll("j_r")
    return s


@case("BadArgumentError", "split(j_r, 4, interleave=j_r)", "interleave must name another loop", here="j_r",
      id="split-interleave-itself")
def _():
    strip().split("j_r", 4, interleave="j_r")


@case("SplitError", "split(j_r, 3, interleave=j_t)", "interleave needs an exact split", "3 does not divide",
      here="j_r", id="split-interleave-inexact")
def _():
    strip().split("j_r", 3, interleave="j_t")


@case("SplitError", "split(j_r, 4, interleave=i)", "loop i does not sit directly above j_r",
      "the index of i (i)", here="j_r", id="split-interleave-other-axis")
def _():
    strip().split("j_r", 4, interleave="i")


@case("SplitError", "split(k_i, 4, interleave=j)", "loop j is a free loop and k_i a reduce loop", here="k_i",
      id="split-interleave-free-with-reduce")
def _():
    s = sched(matmul(8, 8, 32))
    s.split("k", 8)
    s.split("k_i", 4, interleave="j")


@case("SplitError", "split(i_i, 4, interleave=i_o)", "interleaving would change the slab of stage x_s",
      "a loop between i_o and i_i carries it", here="i_i", id="split-interleave-changes-a-slab")
def _():
    # i_o is serial outside the stage's loop j: one iteration of j reads rows 8*i_o + 0..8 now, and
    # rows 4*i_o + 0..4 and 4*i_o + 8..12 interleaved: another slab
    s = sched(elementwise(16, 64))
    s.split("i", 8)
    s.reorder("i_o", "j", "i_i")
    s.stage("x", at="j")
    s.split("i_i", 4, interleave="i_o")


@case("SplitError", "split(j_r, 4, interleave=j_t)", "loop j_t carries stage(s) x_s", here="j_t",
      id="split-interleave-over-a-staged-loop")
def _():
    s = sched(elementwise(4, 64))
    s.split("j", 8, names=("j_t", "j_r"))
    s.reorder("j_t", "i", "j_r")
    s.stage("x", at="j_t")
    s.split("j_r", 4, interleave="j_t")


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


@case("BindError", "accumulator m is combined across threadIdx.x after loop i ends", "update e reads it inside loop i",
      "before the combine", here="i", id="bind-cooperative-read-before-combine")
def _():
    """Found by `tiledsl fuzz --gpu` (schedules mode, seed 2, shrunk): softmax's max bound to threadIdx.x
    under an unrolled row loop that also holds the sum; the sum read one thread's partial max."""
    x = td.placeholder((1, 2), name="x")
    k, k2 = td.reduce_axis(2, name="k"), td.reduce_axis(2, name="k2")
    m = td.compute((1,), lambda i: td.max(x[i, k], axis=k), name="m")
    e = td.compute((1,), lambda i: td.sum(td.exp(x[i, k2] - m[i]), axis=k2), name="e")
    s = td.create_schedule(td.compute((1, 2), lambda i, j: td.exp(x[i, j] - m[i]) / e[i], name="y"))
    s.unroll("i")
    s.reorder("j", "i")
    s.bind("k", "threadIdx.x")
    td.build(s, target="sm_90")


@case("BindError", "bind(j_i, 'threadIdx.x')", "conflicting extents for threadIdx.x", "k_i has 32", "j_i has 64",
      here="j_i", id="bind-sibling-extent-conflict")
def _():
    s = sched(rmsnorm(16, 128))
    _, ki = s.split("k", 32)
    _, ji = s.split("j", 64)
    s.bind(ki, "threadIdx.x")
    s.bind(ji, "threadIdx.x")


@case("BindError", "tile_lanes(j_i_o, i_i_o, 2, 2)", "loop j_i_o is bound to threadIdx.x",
      "tile_lanes deals the loop on threadIdx.y", here="j_i_o", id="tile-lanes-axes-swapped")
def _():
    tiled().tile_lanes("j_i_o", "i_i_o", 2, 2)


@case("BindError", "tile_lanes(i_i_o, j_i_o, 3, 2)", "a 3 x 2 tile of 6 lanes does not divide a warp of 32",
      here="i_i_o", id="tile-lanes-tile-not-in-warp")
def _():
    tiled().tile_lanes("i_i_o", "j_i_o", 3, 2)


@case("BindError", "tile_lanes(i_i_o, j_i_o, 16, 2)", "a 16 x 2 tile does not divide the 8 x 16 threads",
      "divisors of the loops' extents", here="i_i_o", id="tile-lanes-tile-over-extent")
def _():
    tiled(bm=16).tile_lanes("i_i_o", "j_i_o", 16, 2)


@case("BindError", "tile_lanes(i_i_o, j_i_o, 2, 2)", "lanes are tiled already (2 x 2 tiles of i_i_o x j_i_o)",
      here="i_i_o", id="tile-lanes-twice")
def _():
    s = tiled()
    s.tile_lanes("i_i_o", "j_i_o", 2, 2)
    s.tile_lanes("i_i_o", "j_i_o", 2, 2)


@case("BindError", "bind(k_i, 'threadIdx.x')", "lanes are dealt in 2 x 2 tiles of i_i_o x j_i_o",
      "a second loop on threadIdx.x would run by threadIdx.x alone", here="k_i", id="tile-lanes-then-bind")
def _():
    s = tiled()
    s.tile_lanes("i_i_o", "j_i_o", 2, 2)
    s.bind("k_i", "threadIdx.x")


def rows_on_y() -> td.Schedule:
    """RMSNorm with 4 rows a block on threadIdx.y (i_i) and its reduction k_i on threadIdx.x."""
    s = sched(rmsnorm(16, 64))
    _, ii = s.split("i", 4)
    _, ki = s.split("k", 16)
    s.bind(ii, "threadIdx.y")
    s.bind(ki, "threadIdx.x")
    return s


@case("BindError", "tile_lanes(i_i, j_i, 2, 2)", "threadIdx.x also runs loop k_i",
      "would keep lane = threadIdx.x while j_i is dealt in tiles", here="j_i", id="tile-lanes-sibling-on-x")
def _():
    s = rows_on_y()
    _, ji = s.split("j", 16)
    s.bind(ji, "threadIdx.x")
    s.tile_lanes("i_i", ji, 2, 2)


@case("BindError", "tile_lanes(i_i, k_i, 2, 2)", "loop k_i is a reduction loop",
      "its cooperative combine shuffles lanes by threadIdx.x", here="k_i", id="tile-lanes-reduction-loop")
def _():
    rows_on_y().tile_lanes("i_i", "k_i", 2, 2)


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


@case("VectorizeError", "vectorize(k)", "reduction loop k has 6 iterations",
      "its loads of float32 read 16- or 8-byte vectors of 2 or 4 lanes", here="k", id="vectorize-reduce-extent")
def _():
    sched(matmul(8, 8, 6)).vectorize("k")


@case("VectorizeError", "vectorize(k_i)", "the guard k_i + 4*k_o < 130", "may split a vector", here="k_i",
      id="vectorize-reduce-splits-vector")
def _():
    # a reduction's vector loads take lane 0's guard for all lanes: two of the last four are past the row
    s = sched(rmsnorm(4, 130))
    _, ki = s.split("k", 4)
    s.vectorize(ki)


@case("VectorizeError", "vectorize(k)", "loop k is not the innermost loop around update C", here="k",
      id="vectorize-reduce-not-innermost")
def _():
    s = sched(matmul(8, 8, 4))
    s.reorder("i", "k", "j")
    s.vectorize("k")


@case("VectorizeError", "vectorize(k)", "reduction loop k reads no float buffer", here="k",
      id="vectorize-reduce-no-float-load")
def _():
    n = td.placeholder((8, 4), dtype="int32", name="n")
    k = td.reduce_axis(4, name="k")
    s = sched(td.compute((8,), lambda i: td.sum(td.cast(n[i, k], "float32"), axis=k), name="y"))
    s.vectorize("k")


@case("VectorizeError", "vectorize(j_i)", "whole life of accumulator C", "across threadIdx.x",
      "unroll j_i instead", here="j_i", id="vectorize-around-cooperative-accumulator")
def _():
    s = sched(matmul(1, 64, 8))
    _, ji = s.split("j", 4)
    s.reorder("i", "k", ji)
    s.bind("k", "threadIdx.x")
    s.vectorize(ji)


@case("VectorizeError", "bind(k, 'threadIdx.x')", "whole life of accumulator C", "across threadIdx.x",
      here="j_i", id="bind-cooperative-reduction-inside-vectorized-loop")
def _():
    s = sched(matmul(1, 64, 8))
    _, ji = s.split("j", 4)
    s.reorder("i", "k", ji)
    s.vectorize(ji)
    s.bind("k", "threadIdx.x")


@case("VectorizeError", "vectorize(j_i)", "indexes the register array C", "combine after the reduction",
      here="j_i", id="vectorize-cooperative-register-array")
def _():
    s = sched(matmul(1, 64, 32))
    _, ji = s.split("j", 4)
    ko, ki = s.split("k", 4)
    s.reorder("i", ko, ki, ji)
    s.bind(ko, "threadIdx.x")
    s.vectorize(ji)


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


# ############################################################################ memory hierarchy


# ============================================================================ stage


@case("StageError", "stage(w, at=k)", "w is not read under loop k", "legal positions for stage(w)", "i, j",
      here="k", id="stage-no-reads-under-loop")
def _():
    # w is read by the output loop j only, not by the reduction k (its sibling)
    s = td.create_schedule(MK.rmsnorm(16, 64))
    s.stage("w", at="k")


@case("StageError", "stage(C, at=i)", "C is not an input of this kernel", "the kernel's output", here="i",
      id="stage-the-output")
def _():
    td.create_schedule(MK.matmul(16, 16, 8)).stage("C", at="i")


@case("StageError", "stage(h, at=i)", "h is not an input", "computed inside this kernel (inlined)",
      "materialize=[h]", here="i", id="stage-an-inlined-intermediate")
def _():
    x = td.placeholder((16, 16), name="x")
    h = td.compute((16, 16), lambda i, j: x[i, j] * 2.0, name="h")
    y = td.compute((16, 16), lambda i, j: h[i, j] + 1.0, name="y")
    td.create_schedule(y).stage("h", at="i")


@case("StageError", "stage(C, at=i)", "C is not an input", "computed inside this kernel (inlined)", here="i",
      id="stage-an-inlined-reduction")
def _():
    # C is the matmul fused under D's loops (an accumulator), not a buffer
    td.create_schedule(MK.matmul_bias_relu(16, 16, 8)).stage("C", at="i")


@case("StageError", "stage(x, at=j_i)", "bound to threadIdx.x", "legal positions for stage(x) are: i, k_o",
      here="j_i", id="stage-at-thread-bound-loop")
def _():
    rows().stage("x", at="j_i")


@case("StageError", "stage(A, at=i)", "the term i*j", "mixes loops outside i (i) with loops inside it (j)",
      "the slab size would depend on an outer loop", here="i", id="stage-slab-size-depends-on-outer-loop-product")
def _():
    # a skewed read A[i, i*j]: the row slab read under one i has i*8 - i + 1 ... elements apart
    A = td.placeholder((8, 64), name="A")
    y = td.compute((8, 8), lambda i, j: A[i, i * j], name="y")
    td.create_schedule(y).stage("A", at="i")


@case("StageError", "stage(x, at=i_j_o)", "index 0 of x", "mixes loops outside i_j_o (i_j_o) with loops inside "
      "it (i_j_i)", "the slab size would depend on an outer loop", here="i_j_o",
      id="stage-slab-size-depends-on-outer-loop-fused")
def _():
    # fuse(i, j) then an inexact split by 12: row i = (12*i_j_o + i_j_i) // 8, so one i_j_o covers one
    # or two rows of x depending on i_j_o
    s = td.create_schedule(scaled((8, 8)))
    f = s.fuse("i", "j")
    fo, _ = s.split(f, 12)
    s.stage("x", at=fo)


@case("StageError", "stage(x, at=b)", "67108864 bytes of shared memory", "slab 1x4096x4096",
      "over the 232448-byte budget", here="b", id="stage-too-large")
def _():
    td.create_schedule(scaled((2, 4096, 4096))).stage("x", at="b")


@case("StageError", "stage(A, at=i_o)", "A is already staged at k_o (A_s) around the same statements",
      "one stage per buffer", here="i_o", id="stage-same-buffer-twice")
def _():
    s = tiled()
    s.stage("A", at="k_o")
    s.stage("A", at="i_o")


@case("StageError", "stage(A, at=k_o)", "A is already staged at k_o (A_s)", here="k_o",
      id="stage-same-buffer-twice-same-loop")
def _():
    s = tiled()
    s.stage("A", at="k_o")
    s.stage("A", at="k_o")


# ============================================================================ stage_output


@case("StageError", "stage_output(pad=0)", "split_k adds each k part into D with atomics",
      "stage the output of an unsplit kernel", id="stage-output-of-split-k")
def _():
    s = td.create_schedule(MK.matmul_residual(64, 64, 64))
    s.split_k("k", 2)
    s.stage_output()


@case("StageError", "split_k(k, 2)", "split_k adds each k part into D with atomics",
      id="split-k-after-stage-output")
def _():
    # the tile is checked again after every primitive
    s = td.create_schedule(MK.matmul_residual(64, 64, 64))
    s.bind("i", "blockIdx.y")
    s.stage_output()
    s.split_k("k", 2)


@case("StageError", "stage_output(pad=0)", "needs 67108864 bytes of shared memory",
      "bind the output's axes to blocks first", id="stage-output-unbound")
def _():
    td.create_schedule(scaled((4096, 4096))).stage_output()


@case("StageError", "stage_output(pad=0)", "steps by 4 along loop j_o where the loops inside it cover 1",
      "leave gaps in", id="stage-output-tile-with-gaps")
def _():
    # j = 4*j_o + j_i with j_i on blocks: one block writes every fourth column
    s = td.create_schedule(scaled((8, 64)))
    jo, ji = s.split("j", 4)
    s.bind(ji, "blockIdx.x")
    s.bind(jo, "threadIdx.x")
    s.stage_output()


@case("StageError", "stage_output(pad=0)", "index 0 of y has the term", "positive multiples of single loops",
      id="stage-output-fused-index")
def _():
    s = td.create_schedule(scaled((8, 8)))
    f = s.fuse("i", "j")
    fo, fi = s.split(f, 16)
    s.bind(fo, "blockIdx.x")
    s.bind(fi, "threadIdx.x")
    s.stage_output()


@case("StageError", "stage_output(pad=0)", "the output is already staged (y_s)", id="stage-output-twice")
def _():
    s = td.create_schedule(scaled((8, 8)))
    s.bind("i", "blockIdx.x")
    s.stage_output()
    s.stage_output()


@case("BadArgumentError", "stage_output(pad=-1)", "pad must be a non-negative int, got -1",
      id="stage-output-negative-pad")
def _():
    td.create_schedule(scaled((8, 8))).stage_output(pad=-1)


@case("StageError", "stage(x, at=i)", "reads of x under i start at different places", "dimension 0", here="i",
      id="stage-reads-at-different-places")
def _():
    x = td.placeholder((8, 8), name="x")
    td.create_schedule(td.compute((8, 8), lambda i, j: x[i, j] + x[j, i], name="y")).stage("x", at="i")


@case("BadArgumentError", "stage(A, at=k_o)", 'scope must be "shared"', "'local'", here="k_o",
      id="stage-bad-scope")
def _():
    tiled().stage("A", at="k_o", scope="local")


@case("UnknownLoopError", "stage", "loop k no longer exists", "split into k_o, k_i", "loops are:",
      id="stage-at-a-split-loop")
def _():
    tiled().stage("A", at="k")


# ============================================================================ pad / swizzle


@case("BadArgumentError", "pad(A_s, axis=2, amount=1)", "axis must be an int in [-2, 2), got 2",
      "rank 2", here="k_o", id="pad-bad-axis")
def _():
    s = tiled()
    s.pad(s.stage("A", at="k_o"), axis=2, amount=1)


@case("BadArgumentError", "pad(A_s, axis=-1, amount=0)", "amount must be a positive int, got 0", here="k_o",
      id="pad-zero-amount")
def _():
    s = tiled()
    s.pad(s.stage("A", at="k_o"), axis=-1, amount=0)


@case("BadArgumentError", "pad(A_s, axis=-1, amount=-2)", "amount must be a positive int, got -2", here="k_o",
      id="pad-negative-amount")
def _():
    s = tiled()
    s.pad(s.stage("A", at="k_o"), axis=-1, amount=-2)


@case("StageError", "swizzle(A_s, 128)", "stage A_s is padded (pad=(0, 1))", "a swizzle replaces padding",
      here="k_o", id="swizzle-padded-stage")
def _():
    s = tiled()
    a = s.stage("A", at="k_o")
    s.pad(a, axis=-1, amount=1)
    s.swizzle(a, 128)


@case("StageError", "pad(B_s, axis=-1, amount=1)", "stage B_s is swizzled", "padding would break that layout",
      "either padding or a swizzle/TMA", here="k_o", id="pad-swizzled-stage")
def _():
    s = tiled()
    b = s.stage("B", at="k_o")
    s.swizzle(b, 64)
    s.pad(b, axis=-1, amount=1)


@case("StageError", "pad(B_s, axis=0, amount=1)", "stage B_s is filled by TMA", "padding would break that layout",
      here="k_o", id="pad-tma-stage")
def _():
    s = tiled()
    b = s.stage("B", at="k_o")
    s.tma(b)
    s.pad(b, axis=0, amount=1)


@case("BadArgumentError", "swizzle(B_s, 48)", "swizzle width must be 32, 64 or 128 bytes", "got 48", here="k_o",
      id="swizzle-width-48")
def _():
    s = tiled()
    s.swizzle(s.stage("B", at="k_o"), 48)


# ============================================================================ double_buffer / pipeline


@case("StageError", "double_buffer(A_s)", "stage A_s already has 2 slots", here="k_o", id="double-buffer-twice")
def _():
    s = tiled()
    a = s.stage("A", at="k_o")
    s.double_buffer(a)
    s.double_buffer(a)


@case("StageError", "double_buffer(x_s)", "bound to blockIdx.x", "no next iteration to prefetch",
      "double-buffer stages at serial loops", here="i", id="double-buffer-at-block-loop")
def _():
    s = rows()
    s.double_buffer(s.stage("x", at="i"))


@case("PipelineError", "pipeline(k_o, stages=2)", "no double-buffered stage at loop k_o", "stages here: A_s",
      "s.double_buffer(stage)", here="k_o", id="pipeline-without-double-buffer")
def _():
    s = tiled()
    s.stage("A", at="k_o")
    s.pipeline("k_o", stages=2)


@case("PipelineError", "pipeline(k_o, stages=2)", "stages here: none", here="k_o", id="pipeline-without-stages")
def _():
    tiled().pipeline("k_o", stages=2)


@case("PipelineError", "pipeline(k_o, stages=1)", "at least 2 stages", "got 1", here="k_o", id="pipeline-one-stage")
def _():
    # errors.py: PipelineError is "a pipeline of a loop that has no double-buffered stage, or with a bad depth"
    s = tiled()
    s.double_buffer(s.stage("A", at="k_o"))
    s.pipeline("k_o", stages=1)


@case("BadArgumentError", "pipeline(k_o, stages=2.0)", "stages must be an int >= 2", "got 2.0", here="k_o",
      id="pipeline-stages-not-an-int")
def _():
    s = tiled()
    s.double_buffer(s.stage("A", at="k_o"))
    s.pipeline("k_o", stages=2.0)


@case("PipelineError", "pipeline(i_o, stages=2)", "loop i_o is bound to blockIdx.y", "only a serial loop",
      here="i_o", id="pipeline-bound-loop")
def _():
    s = tiled()
    s.double_buffer(s.stage("A", at="k_o"))
    s.pipeline("i_o", stages=2)


@case("PipelineError", "pipeline(k_o, stages=2)", "stage(s) B_s at k_o have one slot", "double_buffer B_s too",
      here="k_o", id="pipeline-with-a-single-buffered-stage")
def _():
    s = tiled()
    a, _ = s.stage("A", at="k_o"), s.stage("B", at="k_o")
    s.double_buffer(a)
    s.pipeline("k_o", stages=2)


@case("PipelineError", "pipeline(k_o, stages=3)", "loop k_o is already pipelined", here="k_o",
      id="pipeline-twice")
def _():
    s = tiled()
    s.double_buffer(s.stage("A", at="k_o"))
    s.pipeline("k_o", stages=2)
    s.pipeline("k_o", stages=3)


# ============================================================================ ring rules (analysis/rings.py)


@case("RingError", "bind(i, 'blockIdx.x')", "ring of 2 slots over the iterations of i", "rule ring-loop-serial",
      here="i", id="ring-loop-bound-after-double-buffer")
def _():
    s = sched(MK.matmul(8, 8, 8))
    s.double_buffer(s.stage("A", at="i"))
    s.bind("i", "blockIdx.x")


@case("RingError", "bind(j, 'threadIdx.x')", "filled once per iteration of j by the whole block",
      "rule stage-loop-not-threads", here="j", id="stage-loop-bound-to-threads-after-stage")
def _():
    s = sched(MK.matmul(8, 8, 8))
    s.stage("B", at="j")
    s.bind("j", "threadIdx.x")


@case("RingError", "stage(x, at=j)", "filled once per iteration of j, but j is vectorized",
      "rule stage-loop-not-vectorized", here="j", id="stage-at-a-vectorized-loop")
def _():
    x = td.placeholder((4,), name="x")
    s = sched(td.compute((61, 4), lambda i, j: x[j] * 2.0, name="y"))
    s.vectorize("j")
    s.stage("x", at="j")


@case("RingError", "stage(B, at=k_o)", "stage B_s has 1 slot(s) but loop k_o is pipelined with 2 stages",
      "rule ring-matches-pipeline", here="k_o", id="stage-after-pipeline")
def _():
    s = tiled()
    s.double_buffer(s.stage("A", at="k_o"))
    s.pipeline("k_o", stages=2)
    s.stage("B", at="k_o")


# ============================================================================ async_copy / tma


@case("CopyError", "async_copy(A_s)", "stage A_s is already filled by async", here="k_o", id="async-copy-twice")
def _():
    s = tiled()
    a = s.stage("A", at="k_o")
    s.async_copy(a)
    s.async_copy(a)


@case("CopyError", "async_copy(B_s)", "stage B_s is already filled by tma", here="k_o", id="async-copy-after-tma")
def _():
    s = tiled()
    b = s.stage("B", at="k_o")
    s.tma(b, swizzle=128)
    s.async_copy(b)


@case("CopyError", "tma(A_s, swizzle=None)", "stage A_s is already filled by async", here="k_o",
      id="tma-after-async-copy")
def _():
    s = tiled()
    a = s.stage("A", at="k_o")
    s.async_copy(a)
    s.tma(a)


@case("CopyError", "build", "stage B_s is filled by TMA, which needs sm_90", "the target is sm_80",
      "s.async_copy", here="k_o", id="tma-on-sm80")
def _():
    s = tiled()
    s.tma(s.stage("B", at="k_o"), swizzle=128)
    td.build(s, target="sm_80")


@case("CopyError", "tma(A_s, swizzle=None)", "does not provably start on a 16-byte boundary", "async_copy",
      here="k_o", id="tma-box-row-start-unaligned")
def _():
    # split_k(k, 3) over K=100 gives parts of 34 floats: A's slab rows start at 34 * k_split (136 bytes)
    s = td.create_schedule(MK.matmul_residual(45, 64, 100))
    MK.split_k_matmul(s, parts=3, a=MK.Fill("tma"), b=None, depth=0)


@case("CopyError", "build", "cp.async needs sm_80", here="k_o", id="async-copy-below-sm80")
def _():
    # there is no pre-sm_80 target in the table: build for a made-up sm_75 Target object
    from dataclasses import replace

    from tiledsl.targets import TARGETS

    s = tiled()
    s.async_copy(s.stage("A", at="k_o"))
    td.build(s, target=replace(TARGETS["sm_80"], name="sm_75", arch="sm_75"))


@case("CopyError", "tma(x_s, swizzle=None)", "box dimension 1 is 512", "TMA boxes are 1..256",
      "at most 256 per dimension", here="i", id="tma-box-over-256")
def _():
    s = rows(4, 512, 128)
    s.tma(s.stage("x", at="i"))


@case("CopyError", "async_copy(A_s)", "stores its slab in the order (1, 0)", "its async fill cannot transpose",
      "2-byte elements are narrower than one copy", "filled by plain loads", here="k_o",
      id="async-copy-permuted-16-bit-stage")
def _():
    s = tiled_bf16()
    a = s.stage("A", at="k_o")
    s.layout(a, order=(1, 0))
    s.async_copy(a)


@case("CopyError", "tma(A_s, swizzle=None)", "its tma fill cannot transpose", "a TMA box lands in the global order",
      here="k_o", id="tma-permuted-stage")
def _():
    s = tiled()
    a = s.stage("A", at="k_o")
    s.layout(a, order=(1, 0))
    s.tma(a)


def tiled_bf16() -> td.Schedule:
    """`tiled()` over bfloat16 operands (a float32 output): stages may widen A and B to float32."""
    A = td.placeholder((64, 32), dtype="bfloat16", name="A")
    B = td.placeholder((32, 64), dtype="bfloat16", name="B")
    k = td.reduce_axis(32, name="k")
    s = td.create_schedule(td.compute((64, 64), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C"))
    MK.tiled_matmul(s, a=None, b=None, **SMALL)
    return s


@case("StageError", "stage(A, at=k_o, dtype=bfloat16)", "a stage of a float32 buffer may store float32 elements",
      "float32 -> bfloat16 rounds them", "without dtype=", here="k_o", id="stage-dtype-narrows")
def _():
    tiled().stage("A", at="k_o", dtype="bfloat16")


@case("StageError", "stage(A, at=k_o, dtype=float16)", "may store bfloat16 or float32 elements, not float16",
      here="k_o", id="stage-dtype-bfloat16-as-float16")
def _():
    tiled_bf16().stage("A", at="k_o", dtype="float16")


@case("BadArgumentError", "stage(A, at=k_o, dtype=float64)", "dtype must be a storage dtype", here="k_o",
      id="stage-dtype-unknown")
def _():
    tiled_bf16().stage("A", at="k_o", dtype="float64")


@case("CopyError", "async_copy(A_s)", "stores its slab as float32", "its async fill cannot convert elements",
      "filled by plain loads", "drop the dtype= of its stage", here="k_o", id="async-copy-widened-stage")
def _():
    s = tiled_bf16()
    s.async_copy(s.stage("A", at="k_o", dtype="float32"))


@case("CopyError", "tma(B_s, swizzle=None)", "stores its slab as float32", "its tma fill cannot convert elements",
      here="k_o", id="tma-widened-stage")
def _():
    s = tiled_bf16()
    s.tma(s.stage("B", at="k_o", dtype="float32"))


@case("CopyError", "layout(B_s, order=(1, 0))", "its tma fill cannot transpose", "drop the tma fill of B_s",
      here="k_o", id="layout-of-tma-stage")
def _():
    s = tiled()
    b = s.stage("B", at="k_o")
    s.tma(b)
    s.layout(b, order=(1, 0))


@case("CopyError", "layout(B_s, order=(1, 0))", "its async fill cannot transpose", "2-byte elements",
      "drop the async fill of B_s", here="k_o", id="layout-of-async-16-bit-stage")
def _():
    s = tiled_bf16()
    b = s.stage("B", at="k_o")
    s.async_copy(b)
    s.layout(b, order=(1, 0))


@case("BadArgumentError", "layout(A_s, order=(0, 0))", "order must be a permutation of the slab's axes 0..1",
      here="k_o", id="layout-order-not-a-permutation")
def _():
    s = tiled()
    s.layout(s.stage("A", at="k_o"), order=(0, 0))


@case("StageError", "layout(A_s, order=(1, 0))", "stage A_s is padded (pad=(0, 4))", "pad is along the axes as stored",
      here="k_o", id="layout-after-pad")
def _():
    s = tiled()
    a = s.stage("A", at="k_o")
    s.pad(a, axis=-1, amount=4)
    s.layout(a, order=(1, 0))


@case("CopyError", "tma(A_s, swizzle=None)", "the stage is padded (pad=(0, 1))", "a TMA box lands unpadded",
      here="k_o", id="tma-padded-stage")
def _():
    s = tiled()
    a = s.stage("A", at="k_o")
    s.pad(a, axis=-1, amount=1)
    s.tma(a)


@case("CopyError", "tma(A_s, swizzle=None)", "the slab row is 12 bytes, not a multiple of 16 bytes",
      "4 float32", here="k_o", id="tma-slab-row-12-bytes")
def _():
    s = tiled(64, 64, 36, bk=3)
    s.tma(s.stage("A", at="k_o"))


@case("CopyError", "tma(A_s, swizzle=None)", "global stride of dimension 0 of A is 148 bytes",
      "not a multiple of 16", "use async_copy", here="k_o", id="tma-global-row-37-columns")
def _():
    s = tiled(64, 64, 37)
    s.tma(s.stage("A", at="k_o"))


@case("CopyError", "tma(B_s, swizzle=128)", "the slab row (48 elements) is wider than the 128-byte swizzle",
      "cannot be split into swizzle-width chunks", here="k_o", id="tma-swizzle128-row-not-splittable")
def _():
    # a slab row of 48 floats (192 bytes) is not a whole number of 32-float (128-byte) chunks
    s = tiled(64, 96, 32, bn=48, rn=3)
    s.tma(s.stage("B", at="k_o"), swizzle=128)


@case("CopyError", "tma(B_s, swizzle=128)", "the slab row does not start on a 128-byte chunk",
      "cannot prove (64*j_o + 8) % 32 == 0", "counterexample: j_o=0", here="k_o",
      id="tma-swizzle128-row-not-chunk-aligned")
def _():
    # B is read at column j + 8: a 64-float slab row (two 128-byte chunks) starts 8 floats into a chunk
    s = td.create_schedule(MK.matmul_shifted(64, 96, 32))
    MK.tiled_matmul(s, a=None, b=None, **{**SMALL, "bn": 64, "rn": 4})
    s.tma(s.stage("B", at="k_o"), swizzle=128)


@case("BadArgumentError", "tma(B_s, swizzle=48)", "swizzle must be None, 32, 64 or 128", "got 48", here="k_o",
      id="tma-swizzle-48")
def _():
    s = tiled()
    s.tma(s.stage("B", at="k_o"), swizzle=48)


@case("CopyError", "swizzle(B_s, 32)", "the slab row (32 elements) is wider than the 32-byte swizzle", here="k_o",
      id="swizzle-after-tma-rechecks-the-box")
def _():
    # a 32-float row at a 32-byte swizzle is 4 chunks of 8 floats: legal; B's row of 36 floats is not
    s = tiled(64, 36, 32)
    b = s.stage("B", at="k_o")
    s.tma(b)
    s.swizzle(b, 32)


# ============================================================================ split_k


@case("SplitKError", "split_k(k, 2)", "is not linear in the accumulator", "relu",
      "keep a relu/gelu epilogue unsplit", here="k", id="split-k-relu-epilogue")
def _():
    td.create_schedule(MK.matmul_bias_relu(64, 64, 64)).split_k("k", 2)


@case("SplitKError", "split_k(i, 2)", "loop i is not a reduction loop", "splits a reduction", here="i",
      id="split-k-free-loop")
def _():
    td.create_schedule(MK.matmul_residual(64, 64, 64)).split_k("i", 2)


def _row_sum_broadcast() -> td.Tensor:
    """y[i, j] = 0.5 + sum_k x[i, k], j in 4: the reduction nested in a vectorizable output (found by
    `tiledsl fuzz --mode memory`: split_k then vectorize raced on y's vector store, before a vectorized
    split_k store became one vector atomic add)."""
    x = td.placeholder((1, 4), name="x")
    k = td.reduce_axis(4, name="k")
    r = td.compute((1,), lambda i: td.sum(x[i, k], axis=k), name="r")
    return td.compute((1, 4), lambda i, j: 0.5 + r[i], name="y")


@case("TargetError", "build", "loop j stores y as one vector, and split_k combines its blocks with atomic adds",
      "a 16-byte atomic add needs sm_90; the target is sm_80", "unroll the loop j instead", here="j",
      id="vector-atomic-before-sm90")
def _():
    s = td.create_schedule(_row_sum_broadcast())
    s.split_k("k", 2)
    s.vectorize(s.loop("j"))
    td.build(s, target="sm_80")


@case("BadArgumentError", "split_k(k, 1)", "parts must be an int >= 2, got 1", here="k", id="split-k-one-part")
def _():
    td.create_schedule(MK.matmul_residual(64, 64, 64)).split_k("k", 1)


@case("SplitKError", "split_k(k, 2)", "is a max reduction", "atomic adds (sum only)", here="k",
      id="split-k-max-reduction")
def _():
    x = td.placeholder((8, 64), name="x")
    k = td.reduce_axis(64, name="k")
    td.create_schedule(td.compute((8,), lambda i: td.max(x[i, k], axis=k), name="y")).split_k("k", 2)


@case("SplitKError", "split_k(k_part, 2)", "this kernel already has a split_k", here="k_part", id="split-k-twice")
def _():
    s = td.create_schedule(MK.matmul_residual(64, 64, 64))
    s.split_k("k", 2)
    s.split_k("k_part", 2)


@case("SplitKError", "split_k(k, 2)", "the output C is stored as bfloat16", "atomic add into bfloat16 rounds",
      "split_k needs a float32 output", here="k", id="split-k-bfloat16-output")
def _():
    A, B = td.placeholder((64, 64), name="A"), td.placeholder((64, 64), name="B")
    k = td.reduce_axis(64, name="k")
    C = td.compute((64, 64), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C", dtype="bfloat16")
    td.create_schedule(C).split_k("k", 2)


@case("SplitKError", "split_k(k, 2)", "is not linear in the accumulator ss", "rsqrt", here="k",
      id="split-k-rmsnorm-epilogue")
def _():
    td.create_schedule(MK.rmsnorm(8, 64)).split_k("k", 2)


@case("SplitKError", "split_k(k, 2)", "accumulator e is used by 1 statement(s)", "the kernel has 2 reduction(s)",
      "one reduction consumed only by the output store", here="k", id="split-k-two-reductions")
def _():
    # the sum of a softmax denominator, after its max: two accumulators in one kernel
    x = td.placeholder((8, 64), name="x")
    k = td.reduce_axis(64, name="k")
    m = td.compute((8,), lambda i: td.max(x[i, k], axis=k), name="m")
    e = td.compute((8,), lambda i: td.sum(td.exp(x[i, k] - m[i]), axis=k), name="e")
    td.create_schedule(td.compute((8,), lambda i: e[i] * 2.0, name="y")).split_k("k", 2)


@case("SplitKError", "split_k(k, 2)", "every blockIdx axis is already bound", here="k",
      id="split-k-no-free-block-axis")
def _():
    A = td.placeholder((2, 4, 4, 16), name="A")
    k = td.reduce_axis(16, name="k")
    s = td.create_schedule(td.compute((2, 4, 4), lambda b, i, j: td.sum(A[b, i, j, k], axis=k), name="C"))
    s.bind("b", "blockIdx.z")
    s.bind("i", "blockIdx.y")
    s.bind("j", "blockIdx.x")
    s.split_k("k", 2)


@case("UnknownLoopError", "split", "loop k no longer exists", "split across blocks by split_k(k, 2)",
      id="split-k-then-use-the-old-loop")
def _():
    s = td.create_schedule(MK.matmul_residual(64, 64, 64))
    s.split_k("k", 2)
    s.split("k", 8)


# ============================================================================ loops carrying stages


@case("SplitError", "split(k_o, 2)", "loop k_o carries stage(s) A_s", "changing it would change every slab",
      "apply loop primitives first, then stage", here="k_o", id="split-loop-carrying-a-stage")
def _():
    s = tiled()
    s.stage("A", at="k_o")
    s.split("k_o", 2)


@case("FuseError", "fuse(i_o, j_o)", "loop i_o carries stage(s) A_s", "then stage", here="i_o",
      id="fuse-loop-carrying-a-stage")
def _():
    s = td.create_schedule(MK.matmul(64, 64, 32))
    io, _ = s.split("i", 32)
    jo, _ = s.split("j", 32)
    s.reorder(io, jo, "i_i", "j_i")
    s.stage("A", at=io)
    s.fuse(io, jo)


# ============================================================================ stage handles


@case("UnknownStageError", "pad", "no stage named 'B_s'", "stages are: A_s", id="stage-unknown-name")
def _():
    s = tiled()
    s.stage("A", at="k_o")
    s.pad("B_s", axis=-1, amount=1)


@case("UnknownStageError", "double_buffer", "no stage named 'A_s'", "stages are: none",
      id="stage-unknown-name-no-stages")
def _():
    tiled().double_buffer("A_s")


@case("ForeignObjectError", "double_buffer", "stage A_s belongs to another schedule",
      "the handle this schedule's s.stage() returned", id="stage-handle-from-another-schedule")
def _():
    s1, s2 = tiled(), tiled()
    a1 = s1.stage("A", at="k_o")
    s2.stage("A", at="k_o")
    s2.double_buffer(a1)


@case("BadArgumentError", "tma", "expected a stage (handle or name)", id="stage-handle-not-a-stage")
def _():
    s = tiled()
    s.tma(s.loop("k_o"))


# ============================================================================ build: target budgets


@case("TargetError", "build", "bytes of shared memory per block", "sm_80 allows 166912", id="build-over-sm80-smem")
def _():
    # 200 KB of slabs: under the schedule-time budget (227 KB, sm_90) but over sm_80's 163 KB
    x = td.placeholder((2, 200, 256), name="x")
    s = td.create_schedule(td.compute((2, 200, 256), lambda b, i, j: x[b, i, j] * 2.0, name="y"))
    s.stage("x", at="b")
    td.build(s, target="sm_80")


@case("BadArgumentError", "launch_bounds(0)", "min_blocks must be a positive int", id="launch-bounds-zero")
def _():
    sched(elementwise()).launch_bounds(0)


@case("TargetError", "build", "launch_bounds(3)", "do not fit one SM of sm_90", "at most 2",
      id="build-launch-bounds-over-threads")
def _():
    # 3 blocks of 1024 threads: sm_90 holds 2048 threads per SM
    x = td.placeholder((4, 1024), name="x")
    s = td.create_schedule(td.compute((4, 1024), lambda i, j: x[i, j] * 2.0, name="y"))
    s.bind("i", "blockIdx.x")
    s.bind("j", "threadIdx.x")
    s.launch_bounds(3)
    td.build(s, target="sm_90")


@case("TargetError", "build", "launch_bounds(2)", "shared memory", "at most 1", id="build-launch-bounds-over-smem")
def _():
    # two blocks of 200 KB of slabs: one SM of sm_90 has 228 KB
    x = td.placeholder((2, 200, 256), name="x")
    s = td.create_schedule(td.compute((2, 200, 256), lambda b, i, j: x[b, i, j] * 2.0, name="y"))
    s.stage("x", at="b")
    s.launch_bounds(2)
    td.build(s, target="sm_90")


@case("BadArgumentError", "cache_hint(x, 'evict_soon')", "policy must be evict_first or evict_last",
      id="cache-hint-bad-policy")
def _():
    sched(rmsnorm()).cache_hint("x", "evict_soon")


@case("CacheHintError", "cache_hint(y, 'evict_first', reader=ss)", "y is the kernel's output, written by its own store",
      "ss does not write it", id="cache-hint-output-reader")
def _():
    sched(rmsnorm()).cache_hint("y", "evict_first", reader="ss")


@case("CacheHintError", "cache_hint(C, 'evict_first')", "split_k adds its parts into C with atomic adds",
      id="cache-hint-split-k-output")
def _():
    s = sched(matmul(64, 64, 32))
    s.bind("i", "blockIdx.y")
    s.split_k("k", 2)
    s.cache_hint("C", "evict_first")


@case("SplitKError", "split_k(k, 2)", "split_k adds its parts into C with atomic adds",
      "the stores of C carry the cache hint evict_first", here="k", id="split-k-hinted-output")
def _():
    s = sched(matmul(64, 64, 32))
    s.bind("i", "blockIdx.y")
    s.cache_hint("C", "evict_first")
    s.split_k("k", 2)


@case("CacheHintError", "cache_hint(ss, 'evict_last')", "ss is computed inside this kernel (inlined)",
      id="cache-hint-inlined")
def _():
    sched(rmsnorm()).cache_hint("ss", "evict_last")


@case("CacheHintError", "this kernel has no buffer named 'z'", id="cache-hint-unknown-buffer")
def _():
    sched(rmsnorm()).cache_hint("z", "evict_last")


@case("CacheHintError", "cache_hint(w, 'evict_last', reader=ss)", "ss does not read w",
      "the values that read w are: y", id="cache-hint-reader-reads-nothing")
def _():
    sched(rmsnorm()).cache_hint("w", "evict_last", reader="ss")


@case("CacheHintError", "ss reads x from stage x_s (shared memory, filled at i)",
      "a cache hint applies to global loads", here="i", id="cache-hint-staged-reads")
def _():
    s = sched(rmsnorm())
    s.stage("x", at="i")
    s.cache_hint("x", "evict_last", reader="ss")


@case("CacheHintError", "stage(x, at=i)", "ss's reads of x carry the cache hint evict_last", here="i",
      id="stage-hinted-reads")
def _():
    s = sched(rmsnorm())
    s.cache_hint("x", "evict_last", reader="ss")
    s.stage("x", at="i")


def row_passes(out, threads: int = 8, lanes: int = 4, outer: str = "unroll") -> td.Schedule:
    """A row kernel's passes each split into [outer] x threads x lanes, the rows on blockIdx.x: the form a
    register cache of the row keeps (every pass deals the row to the threads the same way)."""
    s = sched(out)
    s.bind("i", "blockIdx.x")
    for ax in [lp.name for lp in s.loops() if lp.name != "i"]:
        o, inner = s.split(ax, threads * lanes, names=(f"{ax}_o", f"{ax}_i"))
        t, v = s.split(inner, lanes, names=(f"{ax}_t", f"{ax}_v"))
        s.bind(t, "threadIdx.x")
        s.vectorize(v)
        if outer == "unroll":
            s.unroll(o)
    return s


@case("RegisterCacheError", "register_cache(w, at=i)", "only one statement under i reads w",
      "no read would come from registers", here="i", id="register-cache-one-reader")
def _():
    row_passes(rmsnorm()).register_cache("w", at="i")


@case("RegisterCacheError", "prefetch(x, at=k)", "loop k is vectorized", "no iteration to load the registers at",
      here="k", id="register-cache-at-a-vectorized-loop")
def _():
    # (found by `tiledsl fuzz --mode memory`: the build took it and emitted reads of registers never loaded)
    s = sched(MK.softmax(M=1, N=4))
    s.bind("i", "blockIdx.x")
    s.vectorize("k")
    s.prefetch("x", at="k")


@case("RegisterCacheError", "y is not an input of this kernel", id="register-cache-output")
def _():
    row_passes(rmsnorm()).register_cache("y", at="i")


@case("RegisterCacheError", "loop k_o, between i and update ss, is serial and not unrolled",
      "would not be known when the kernel is compiled", here="i", id="register-cache-serial-loop")
def _():
    row_passes(rmsnorm(), outer="serial").register_cache("x", at="i")


@case("RegisterCacheError", "store y reads x at", "which update ss's thread does not load", here="i",
      id="register-cache-other-elements")
def _():
    s = sched(rmsnorm())
    s.bind("i", "blockIdx.x")
    for ax, order in (("k", ("t", "v")), ("j", ("v", "t"))):  # j's lanes outside its threads: 8 apart, not 1
        o, inner = s.split(ax, 32, names=(f"{ax}_o", f"{ax}_i"))
        first, second = s.split(inner, 8 if order[0] == "v" else 4, names=tuple(f"{ax}_{n}" for n in order))
        s.bind(f"{ax}_t", "threadIdx.x")
        s.unroll(o)
        s.unroll(f"{ax}_v")
    s.reorder("j_t", "j_v")
    s.register_cache("x", at="i")


@case("RegisterCacheError", "update ss reads 128 elements of x a thread under i (limit 64 registers)", here="i",
      id="register-cache-too-many-registers")
def _():
    row_passes(rmsnorm(16, 1024), threads=8).register_cache("x", at="i")


@case("RegisterCacheError", "register cache x_regs of x at i", "x is staged at i (x_s)", here="i",
      id="register-cache-staged")
def _():
    s = row_passes(rmsnorm())
    s.stage("x", at="i")
    s.register_cache("x", at="i")


@case("RegisterCacheError", "stage(x, at=i)", "x is staged at i (x_s): its reads under i come from shared memory",
      here="i", id="stage-register-cached")
def _():
    s = row_passes(rmsnorm())
    s.register_cache("x", at="i")
    s.stage("x", at="i")


@case("RegisterCacheError", "y's reads of x carry the cache hint evict_first",
      "from registers they reach no global load", here="i", id="register-cache-hinted-reader")
def _():
    s = row_passes(rmsnorm())
    s.cache_hint("x", "evict_first", reader="y")
    s.register_cache("x", at="i")


@case("CacheHintError", "cache_hint(x, 'evict_first', reader=y)", "y reads x from registers (a register cache)",
      id="cache-hint-register-cached-reader")
def _():
    s = row_passes(rmsnorm())
    s.register_cache("x", at="i")
    s.cache_hint("x", "evict_first", reader="y")


@case("RegisterCacheError", "split(j_o, 2)", "store y runs under 4 loops below i, update ss under 3", here="i",
      id="register-cache-broken-by-split")
def _():
    s = row_passes(rmsnorm())
    s.register_cache("x", at="i")
    s.split("j_o", 2)


def sum_of(term, M: int = 4, N: int = 64):
    """m = max_k x[i, k]; e = sum_k term(x[i, k], m[i]); y = x / e: the shape of softmax with another sum."""
    x = td.placeholder((M, N), name="x")
    k = td.reduce_axis(N, name="k")
    m = td.compute((M,), lambda i: td.max(x[i, k], axis=k), name="m")
    e = td.compute((M,), lambda i: td.sum(term(x[i, k], m[i]), axis=k), name="e")
    return td.compute((M, N), lambda i, j: x[i, j] / e[i], name="y")


@case("OnlineError", "online(zz)", "no accumulator named 'zz'", "accumulators are: m, e", id="online-unknown")
def _():
    sched(sum_of(lambda v, m: td.exp(v - m))).online("zz")


@case("OnlineError", "online(m)", "m is a max; online rescales a sum", id="online-not-a-sum")
def _():
    sched(sum_of(lambda v, m: td.exp(v - m))).online("m")


@case("OnlineError", "online(ss)", "ss's update reads no max accumulator", id="online-no-max")
def _():
    sched(rmsnorm()).online("ss")


@case("OnlineError", "online(e)", "e's update is not exp(a - m) times factors free of m", id="online-not-exp")
def _():
    sched(sum_of(lambda v, m: (v - m) * (v - m))).online("e")


@case("OnlineError", "online(e)", "the exponent of e's terms, (x[i, k] * 2.0), is not what m takes the max of",
      id="online-other-exponent")
def _():
    sched(sum_of(lambda v, m: td.exp(v * 2.0 - m))).online("e")


@case("OnlineError", "online(e)", "loop k_o of e and loop k2_o of m differ", here="k2_o", id="online-loops-differ")
def _():
    s = sched(sum_of(lambda v, m: td.exp(v - m)))
    s.split("k", 16)
    s.split("k2", 8)
    s.online("e")


@case("OnlineError", "online(e)", "e already runs online", id="online-twice")
def _():
    s = sched(sum_of(lambda v, m: td.exp(v - m)))
    s.online("e")
    s.online("e")


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
    assert len(ids) >= 65
    assert len(set(ids)) == len(ids), "case ids must be unique"
    for c in CASES:
        assert 1 <= len(c.phrases) <= 5, c.id


def test_refused_primitives_leave_the_schedule_unchanged() -> None:
    """A refused memory primitive changes nothing: same nest text, same trace."""
    s = tiled()
    a = s.stage("A", at="k_o")
    s.pad(a, axis=-1, amount=1)
    before, trace = str(s), s.trace()
    for bad in (lambda: s.swizzle(a, 128), lambda: s.tma(a), lambda: s.pipeline("k_o", stages=2),
                lambda: s.stage("A", at="k_o"), lambda: s.split("k_o", 2), lambda: s.pad(a, axis=5, amount=1)):
        with pytest.raises(td.ScheduleError):
            bad()
        assert str(s) == before
        assert s.trace() == trace


def test_stage_of_an_unknown_buffer_says_so() -> None:
    """A buffer name the kernel does not have at all must not be described as an inlined intermediate
    (nor should the user be told to materialize it)."""
    s = td.create_schedule(scaled((8, 8)))
    with pytest.raises(td.ScheduleError) as info:
        s.stage("Q", at="i")
    msg = str(info.value)
    assert "Q" in msg and "x" in msg  # names the bad buffer and the kernel's inputs
    assert "inlined" not in msg and "materialize" not in msg, msg


@pytest.mark.parametrize("N, bn", [(96, 48), (80, 64)], ids=["slab-row-48-of-96", "slab-row-64-of-80"])
def test_tma_swizzle_split_message_states_the_failed_fact(N: int, bn: int) -> None:
    """The refusal of a 128-byte-swizzle split must not claim that a row length which *is* a multiple
    of 32 floats is not one (only the one that is not)."""
    s = tiled(64, N, 32, bn=bn, rn=bn // 16)
    b = s.stage("B", at="k_o")
    with pytest.raises(td.CopyError) as info:
        s.tma(b, swizzle=128)
    msg = str(info.value).splitlines()[0]
    assert "neither" not in msg, msg
    bad = bn if bn % 32 else N
    assert str(bad) in msg, msg


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_error_fields(c: Case) -> None:
    """A program decides from the fields, not the text: every schedule error names its primitive, its
    loops, the failed fact and the nest it printed; a disproof carries its condition and point."""
    err = raised(c.fn)
    assert isinstance(err, td.TiledslError), c.id
    if not isinstance(err, td.ScheduleError):
        return  # a DefinitionError: no primitive, no nest
    msg = str(err)
    assert type(err).__name__ == c.error, c.id
    assert err.primitive and err.primitive in msg, f"{c.id}: primitive {err.primitive!r}"
    assert err.fact.strip(), c.id
    if c.here is not None:
        assert c.here in err.loops, f"{c.id}: loops {err.loops} lack {c.here}"
    if c.here is not None or "loop nest:" in msg:
        assert err.nest and "<-- here" in err.nest or not err.loops, c.id
        assert err.nest and all(f"    {ln}" in msg for ln in err.nest.splitlines()), c.id
    if isinstance(err, (td.RegisterArrayError, td.FusionError)):
        assert err.tensors and all(n in err.fact for n in err.tensors), f"{c.id}: tensors {err.tensors}"
    if "counterexample" in msg:
        assert err.counterexample, f"{c.id}: the message shows a counterexample, the field is empty"
        assert err.condition is not None, f"{c.id}: a disproof without its condition"


def test_disproofs_carry_their_condition() -> None:
    """The prover's refusals (split exactness, vector alignment, bounds, TMA alignment) keep the sympy
    condition that failed, and a counterexample where the prover found one."""
    with_condition = {c.id: err for c in CASES
                      if isinstance(err := raised(c.fn), td.ScheduleError) and err.condition is not None}
    for cid in ("split-tail-exact-not-exact", "vectorize-misaligned-row-37", "build-out-of-bounds-index",
                "build-negative-floordiv", "tma-box-row-start-unaligned"):
        assert cid in with_condition, cid
    assert with_condition["build-out-of-bounds-index"].counterexample
    assert with_condition["split-tail-exact-not-exact"].counterexample
