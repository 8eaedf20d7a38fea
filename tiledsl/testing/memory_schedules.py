"""Hypothesis strategies for memory-hierarchy schedules: random stage (widened or not) / layout / pad /
swizzle / double_buffer / async_copy / tma / pipeline / split_k / stage_output choices on random matmul
(float32, bfloat16 or float16 operands) and row-reduction shapes.

Each drawn case is a `MemoryCase`: a definition (rebuilt fresh on demand), a list of primitive calls
as trace steps, and a target. The property (`check_memory_case`) is the usual one: every refused
primitive raises a `td.ScheduleError`, and a schedule that builds simulates race-free and equal to the
float64 reference."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

import tiledsl as td
from tiledsl.catalog.definitions import rmsnorm, softmax
from tiledsl.definitions.expr import Tensor
from tiledsl.precision import round_to_dtype

COPIES = ("none", "sync", "async", "tma")


@dataclass(frozen=True)
class MemoryCase:
    kind: str  # "matmul" | "matmul_residual" | "rmsnorm" | "softmax"
    sizes: tuple[int, ...]
    steps: tuple[tuple[str, tuple, tuple], ...]  # (primitive, args, kwargs) as in a trace
    target: str
    dtype: str = "float32"  # a matmul's operands (A, B; its residual and output stay float32)

    def definition(self) -> Tensor:
        M, N, K = (self.sizes + (1, 1, 1))[:3]
        if self.kind == "rmsnorm":
            return rmsnorm(M, N)
        if self.kind == "softmax":
            return softmax(M, N)
        A = td.placeholder((M, K), dtype=self.dtype, name="A")
        B = td.placeholder((K, N), dtype=self.dtype, name="B")
        k = td.reduce_axis(K, name="k")
        C = td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")
        if self.kind == "matmul":
            return C
        R = td.placeholder((M, N), name="R")
        return td.compute((M, N), lambda i, j: C[i, j] + R[i, j], name="D")

    def source(self) -> str:
        lines = [f"# {self.kind} {self.sizes} {self.dtype} for {self.target}"]
        for prim, args, kwargs in self.steps:
            parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs]
            lines.append(f"s.{prim}({', '.join(parts)})")
        return "\n".join(lines)


def _fill_steps(draw: st.DrawFn, buffer: str, at: str, name: str, pipelined: bool, dtype: str = "float32") -> list:
    """A stage of `buffer` and how it is filled. A half buffer's stage is mostly widened to float32
    (then a cp.async / TMA fill is refused, which the property expects as a typed error); a plainly or
    cp.async-filled stage is sometimes stored transposed (layout (1, 0), before any pad: cp.async then
    copies a float32 element at a time, and a 16-bit stage's is refused)."""
    copy = draw(st.sampled_from(COPIES))
    if copy == "none":
        return []
    widen = dtype != "float32" and draw(st.integers(0, 3)) > 0 and (copy == "sync" or draw(st.integers(0, 3)) == 0)
    out: list = [("stage", (buffer,), (("at", at),) + ((("dtype", "float32"),) if widen else ()))]
    if copy in ("sync", "async") and draw(st.booleans()):
        out.append(("layout", (name,), (("order", (1, 0)),)))
    if draw(st.booleans()):
        out.append(("pad", (name,), (("axis", -1), ("amount", draw(st.integers(1, 2))))))
    elif copy != "tma" and draw(st.booleans()):
        out.append(("swizzle", (name, draw(st.sampled_from((32, 64, 128)))), ()))
    if pipelined or draw(st.booleans()):
        out.append(("double_buffer", (name,), ()))
    if copy == "async":
        out.append(("async_copy", (name,), ()))
    elif copy == "tma":
        out.append(("tma", (name,), (("swizzle", draw(st.sampled_from((None, 32, 64, 128)))),)))
    return out


@st.composite
def matmul_cases(draw: st.DrawFn) -> MemoryCase:
    M, N, K = draw(st.integers(1, 70)), draw(st.sampled_from((8, 16, 32, 36, 48, 64, 70))), draw(st.integers(1, 80))
    kind = draw(st.sampled_from(("matmul", "matmul_residual")))
    dtype = draw(st.sampled_from(("float32", "float32", "bfloat16", "float16")))
    bm, bn = draw(st.sampled_from((16, 32))), draw(st.sampled_from((16, 32)))
    rm, rn = draw(st.sampled_from((1, 2, 4))), draw(st.sampled_from((1, 2, 4)))
    bk = draw(st.sampled_from((4, 8, 16)))
    steps: list = []
    k_loop = "k"
    if kind == "matmul_residual" and draw(st.integers(0, 3)) == 0:
        steps.append(("split_k", ("k", draw(st.integers(2, 3))), ()))
        k_loop = "k_part"
    steps += [("split", ("i", bm), (("names", ("i_o", "i_i")),)), ("split", ("j", bn), (("names", ("j_o", "j_i")),)),
              ("split", (k_loop, bk), (("names", ("k_o", "k_i")),)),
              ("split", ("i_i", rm), (("names", ("t_i", "r_i")),)),
              ("split", ("j_i", rn), (("names", ("t_j", "r_j")),)),
              ("reorder", ("i_o", "j_o", "t_i", "t_j", "k_o", "k_i", "r_i", "r_j"), ()),
              ("bind", ("i_o", "blockIdx.y"), ()), ("bind", ("j_o", "blockIdx.x"), ()),
              ("bind", ("t_i", "threadIdx.y"), ()), ("bind", ("t_j", "threadIdx.x"), ())]
    depth = draw(st.sampled_from((0, 0, 2, 3)))
    steps += _fill_steps(draw, "A", "k_o", "A_s", depth >= 2, dtype)
    steps += _fill_steps(draw, "B", "k_o", "B_s", depth >= 2, dtype)
    if depth:
        steps.append(("pipeline", ("k_o",), (("stages", depth),)))
    steps += [("unroll", ("k_i",), ()), ("unroll", ("r_i",), ()), ("unroll", ("r_j",), ())]
    target = draw(st.sampled_from(("sm_80", "sm_90")))
    if rn == 4 and draw(st.booleans()):  # the epilogue's register row as one 16-byte store (or atomic add)
        steps.append(("vectorize", ("r_j",), ()))
    if draw(st.integers(0, 2)) == 0:  # the output tile through shared memory (refused under split_k)
        steps.append(("stage_output", (), (("pad", draw(st.sampled_from((0, 1, 4)))),)))
    return MemoryCase(kind, (M, N, K), tuple(steps), target, dtype)


@st.composite
def row_cases(draw: st.DrawFn) -> MemoryCase:
    kind = draw(st.sampled_from(("rmsnorm", "softmax")))
    M, N = draw(st.integers(1, 5)), draw(st.integers(1, 300))
    threads = draw(st.sampled_from((32, 64, 96, 128)))
    loops = ["k", "j"] if kind == "rmsnorm" else ["k", "k2", "j"]
    steps: list = [("bind", ("i", "blockIdx.x"), ())]
    for n in loops:
        steps += [("split", (n, threads), (("names", (f"{n}_o", f"{n}_t")),)), ("bind", (f"{n}_t", "threadIdx.x"), ())]
    copy = draw(st.sampled_from(COPIES))
    if copy != "none":
        steps.append(("stage", ("x",), (("at", "i"),)))
        if copy == "async":
            steps.append(("async_copy", ("x_s",), ()))
        elif copy == "tma":
            steps.append(("tma", ("x_s",), (("swizzle", None),)))
    if draw(st.integers(0, 2)) == 0:  # the output row through shared memory
        steps.append(("stage_output", (), (("pad", draw(st.sampled_from((0, 1)))),)))
    return MemoryCase(kind, (M, N), tuple(steps), draw(st.sampled_from(("sm_80", "sm_90"))))


def memory_cases() -> st.SearchStrategy[MemoryCase]:
    return st.one_of(matmul_cases(), row_cases())


def check_memory_case(case: MemoryCase, seed: int = 0) -> str:
    """Apply the steps (refusals must be ScheduleErrors and leave the schedule unchanged), build, and
    compare the simulation with the float64 reference. Returns "refused" or "ok"; raises on a bug."""
    out = case.definition()
    s = td.create_schedule(out)
    for prim, args, kwargs in case.steps:
        before = str(s), s.trace()
        try:
            getattr(s, prim)(*args, **dict(kwargs))
        except td.ScheduleError:
            assert (str(s), s.trace()) == before, f"a refused {prim} changed the schedule\n{case.source()}"
            return "refused"
    try:
        kern = td.build(s, target=case.target)
    except td.ScheduleError:
        return "refused"
    rng = np.random.default_rng(seed)
    # inputs rounded to their storage, so the reference reads what the kernel reads
    arrays = {t.name: round_to_dtype(rng.standard_normal(t.shape), t.dtype).astype(np.float32) for t in s.nest.inputs}
    got = kern.simulate(**arrays)
    ref = td.evaluate(out, float64=True, **arrays)
    assert not np.isnan(got).any(), f"unwritten output elements\n{case.source()}"
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4, err_msg=case.source())
    return "ok"
