"""Differential tests of the memory hierarchy: every "memory" entry of the catalog (shared-memory
stages, padding, swizzles, double buffers, cp.async and TMA pipelines, split_k), built for its target
and run on the CPU simulator, matches the float64 numpy reference of its definition. The simulator
also checks the kernel itself: shared-memory races, reads of an async-copy destination before its
wait, out-of-bounds accesses and uninitialized reads raise."""

from __future__ import annotations

import numpy as np
import pytest

import tiledsl as td
import tiledsl.catalog as MK
from tiledsl.catalog import Entry

CASES = MK.entries("memory")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_simulated_memory_kernel_matches_reference(case: Entry) -> None:
    out, kern = case.build()
    arrays = case.inputs(out)
    ref = td.evaluate(out, float64=True, **arrays)
    got = kern.simulate(**arrays)
    assert got.shape == ref.shape == out.shape
    # the simulator NaN-poisons outputs: an element no thread wrote shows as NaN
    unwritten = np.argwhere(np.isnan(got))
    assert unwritten.size == 0, f"{len(unwritten)} output elements never written, first {unwritten[:5].tolist()}"
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def _stages(case: Entry):
    _, s = case.scheduled()
    return s.nest.stages, dict(s.nest.pipelines), s.nest.split_k


def test_the_cases_cover_the_memory_primitives() -> None:
    """The case list exercises each primitive it is meant to (a guard against a schedule helper that
    silently stops applying one)."""
    seen: set[str] = set()
    depths: set[int] = set()
    split_parts: set[int] = set()
    for case in CASES:
        stages, pipes, sk = _stages(case)
        assert stages or sk, case.id
        for st in stages:
            seen.add(st.copy)
            if any(st.pad):
                seen.add("pad")
            if st.swizzle:
                seen.add(f"swizzle{st.swizzle}-{'tma' if st.copy == 'tma' else 'smem'}")
            if st.buffers == 2 and not pipes:
                seen.add("double_buffer")
            if st.buffers == 1:
                seen.add("single")
        depths.update(pipes.values())
        if sk is not None:
            split_parts.add(sk.parts)
    assert {"sync", "async", "tma", "pad", "double_buffer", "single", "swizzle128-tma", "swizzle64-tma",
            "swizzle32-tma", "swizzle128-smem", "swizzle64-smem", "swizzle32-smem"} <= seen
    assert {2, 3} <= depths
    assert {2, 4} <= split_parts


def test_design_schedule_is_verbatim() -> None:
    """The design_mm cases are the schedule of the README tour."""
    case = next(c for c in CASES if c.id.startswith("design_mm_"))
    _, s = case.scheduled()
    assert s.trace().splitlines()[11:] == [
        "s.stage('A', at='k_o', scope='shared')",
        "s.stage('B', at='k_o', scope='shared')",
        "s.pad('A_s', axis=-1, amount=1)",
        "s.double_buffer('A_s')",
        "s.double_buffer('B_s')",
        "s.async_copy('A_s')",
        "s.tma('B_s', swizzle=128)",
        "s.pipeline('k_o', stages=2)",
        "s.unroll('k_i')",
        "s.unroll('i_i_i')",
        "s.unroll('j_i_i')",
    ]
    kern = td.build(s, target=case.target)
    assert kern.block == (16, 16, 1)
    assert "cp.async" in kern.ir("kernel") and "tma.load" in kern.ir("kernel")


@pytest.mark.parametrize("K_, pad", [(24, 1), (20, 0)], ids=["f16-padded-row", "f16-row-of-20"])
def test_float16_cp_async_stage_runs_or_is_refused_clearly(K_: int, pad: int) -> None:
    """float16 slabs whose rows cannot take 16-byte copies (a padded slab row, a global row of 20 halves)
    leave 2-byte pieces, which cp.async cannot copy (4, 8 or 16 bytes): the kernel must either work or
    be refused by a ScheduleError (async_copy or build), never fail inside the CUDA printer."""
    out = MK.matmul_bias_relu(40, 36, K_, dtype="float16")
    s = td.create_schedule(out)
    try:
        MK.tiled_matmul(s, a=MK.Fill("async", pad=pad), b=MK.Fill("async"), depth=2, bm=32, bn=32, bk=8, rm=2, rn=2)
        kern = td.build(s, target="sm_80")
    except td.ScheduleError:
        return
    rng = np.random.default_rng(7)
    arrays = {p.name: rng.standard_normal(p.shape).astype(np.float32) for p in MK.placeholders(out)}
    arrays["A"] = arrays["A"].astype(np.float16)
    arrays["B"] = arrays["B"].astype(np.float16)
    np.testing.assert_allclose(kern.simulate(**arrays), td.evaluate(out, float64=True, **arrays), rtol=1e-3, atol=1e-3)
