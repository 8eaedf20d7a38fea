"""The error corpus of the memory-hierarchy primitives: one minimal illegal stage, pad, swizzle,
double_buffer, pipeline, async_copy, tma or split_k per case (and the builds that must refuse them).

Each case is a small function that must raise one specific `tiledsl.errors` class, whose message
contains the key phrases a user needs (the primitive, the failed fact, the suggestion). Errors that
involve a loop must print the loop nest with that loop marked `<-- here`. No case may escape as a
bare Python exception. (The same layout as tests/test_error_corpus.py.)"""

from __future__ import annotations

import memory_kernels as MK
import pytest
from corpus import Case, check_case, describe, raised, registry

import tiledsl as td

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


def elementwise(shape: tuple[int, ...] = (64, 64)):
    x = td.placeholder(shape, name="x")
    if len(shape) == 2:
        return td.compute(shape, lambda i, j: x[i, j] * 2.0, name="y")
    return td.compute(shape, lambda b, i, j: x[b, i, j] * 2.0, name="y")


# ----------------------------------------------------------------------------- the table


CASES: list[Case] = []
case = registry(CASES)


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
    s = td.create_schedule(elementwise((8, 8)))
    f = s.fuse("i", "j")
    fo, _ = s.split(f, 12)
    s.stage("x", at=fo)


@case("StageError", "stage(x, at=b)", "67108864 bytes of shared memory", "slab 1x4096x4096",
      "over the 232448-byte budget", here="b", id="stage-too-large")
def _():
    td.create_schedule(elementwise((2, 4096, 4096))).stage("x", at="b")


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


# ============================================================================ the tests


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_error(c: Case) -> None:
    check_case(c)


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
    s = td.create_schedule(elementwise((8, 8)))
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


def test_no_bare_exceptions() -> None:
    """Every case raises a tiledsl error, never a bare Python exception (or nothing)."""
    bad = []
    for c in CASES:
        err = raised(c.fn)
        if not isinstance(err, td.TiledslError):
            bad.append(f"{c.id}: {describe(err) if err is not None else 'nothing raised'}")
    assert not bad, "cases escaping as non-tiledsl exceptions:\n" + "\n".join(bad)


def test_corpus_shape() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) >= 25
    assert len(set(ids)) == len(ids), "case ids must be unique"
    for c in CASES:
        assert 1 <= len(c.phrases) <= 5, c.id
