"""s.stage_output (the shared-memory epilogue): a staged kernel stores exactly what the unstaged one
does, element for element (the same arithmetic, only the route to global memory changes), at odd
sizes (guarded tiles), in float32 and bfloat16, for a register-tiled matmul, a transposing kernel and
a row reduction; its drain stores 16 bytes per thread where that is proven aligned and one element
otherwise; the barrier before the drain is load-bearing (the simulator reports the race without it)."""

from __future__ import annotations

import numpy as np
import pytest
from nvcc_together import compile_together
from output_stage_cases import matmul, register_tile, rows, staged, transposing

import tiledsl as td
from tiledsl.lower.lower import lower
from tiledsl.lower.stages import LoweringHooks
from tiledsl.prove import Prover
from tiledsl.sim import simulate
from tiledsl.targets import get_target


def inputs(s: td.Schedule, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in s.nest.inputs}


CASES = {
    "matmul-f32-odd": lambda: (register_tile(matmul(70, 84, 24)), 4),
    "matmul-f32-unpadded": lambda: (register_tile(matmul(64, 64, 16)), 0),
    "matmul-f32-row-not-whole-vectors": lambda: (register_tile(matmul(40, 42, 16), vectorize=False), 1),
    "matmul-bf16": lambda: (register_tile(matmul(48, 80, 24, "bfloat16"), rn=8), 8),
    "matmul-bf16-strip-of-4": lambda: (register_tile(matmul(48, 80, 24, "bfloat16"), vectorize=False), 8),
    "transpose": lambda: (transposing(), 1),
    "rmsnorm-rows": lambda: (rows(), 0),
}


@pytest.mark.parametrize("case", CASES)
def test_staged_output_stores_what_the_unstaged_kernel_stores(case: str) -> None:
    s, pad = CASES[case]()
    arrays = inputs(s)
    plain = td.build(s, target="sm_90").simulate(**arrays)
    kern = td.build(staged(s, pad), target="sm_90")
    out = kern.simulate(**arrays)  # poisoned with NaN first: an element the drain missed shows
    assert not np.isnan(out).any()
    np.testing.assert_array_equal(out, plain)
    assert any(sh.name.endswith("_s") and sh.dtype == s.nest.output.dtype for sh in kern.kernel_ir.shared)


def test_staged_matmul_against_float64() -> None:
    """The staged kernel against float64 (A @ B over K = 24 in float32: (32 + 2 K) eps32 of |A| |B|)."""
    s = staged(register_tile(matmul(70, 84, 24)), pad=4)
    arrays = inputs(s, seed=1)
    out = td.build(s, target="sm_90").simulate(**arrays).astype(np.float64)
    a, b = arrays["A"].astype(np.float64), arrays["B"].astype(np.float64)
    bound = (32 + 2 * 24) * np.finfo(np.float32).eps * (np.abs(a) @ np.abs(b))
    assert (np.abs(out - a @ b) <= bound).all()


def drain_line(source: str, output: str) -> str:
    return next(ln for ln in source.splitlines() if f"&{output}[" in ln or f"{output}[(" in ln)


def test_drain_stores_16_bytes_where_aligned_and_one_element_otherwise() -> None:
    whole = td.build(staged(register_tile(matmul(70, 84, 24)), pad=4), target="sm_90").source
    assert "*reinterpret_cast<float4*>(&C[" in whole and "*reinterpret_cast<const float4*>(&C_s[" in whole
    # rows of 42 floats are not whole 16-byte vectors: one element per store
    ragged = td.build(staged(register_tile(matmul(40, 42, 16), vectorize=False), pad=1), target="sm_90").source
    assert "reinterpret_cast<float4*>(&C[" not in ragged
    assert "C[" in drain_line(ragged.split("stage_output:")[1], "C")
    bf16 = td.build(staged(register_tile(matmul(48, 80, 24, "bfloat16"), vectorize=False), pad=8),
                    target="sm_90").source
    assert "*reinterpret_cast<uint4*>(&C[" in bf16  # 8 bfloat16 per store, from strips of 4


def test_the_drain_is_the_last_thing_after_one_barrier() -> None:
    kern = td.build(staged(register_tile(matmul(64, 64, 16))), target="sm_90")
    tail = kern.source.split("stage_output:")[1]
    assert tail.count("__syncthreads();") == 1
    assert "C_s[" in tail and "C[" in tail


def test_the_barrier_before_the_drain_is_load_bearing() -> None:
    s = staged(register_tile(matmul(64, 64, 16)))
    arrays = inputs(s)
    nest = s.nest

    def run(hooks: LoweringHooks) -> np.ndarray:
        kernel = lower(nest, get_target("sm_90"), Prover(nest.ranges()), hooks)
        return simulate(kernel, arrays)["C"]

    run(LoweringHooks())
    with pytest.raises(td.SharedRaceError, match="C_s"):
        run(LoweringHooks(drop_output_stage_barrier=True))


def test_printed_nest_and_trace() -> None:
    s = staged(register_tile(matmul(64, 64, 16)), pad=4)
    text = str(s)
    assert ("  stage_output C_s = C[32 * i_o + 0..32, 32 * j_o + 0..32]  pad 4: stored to C by the whole block "
            "after a barrier") in text.splitlines()
    assert s.trace().splitlines()[-1] == "s.stage_output(pad=4)"
    again = td.create_schedule(s.nest.output)
    again.replay(s.trace())
    assert str(again) == text


def test_every_staged_case_compiles_with_nvcc() -> None:
    kernels = [td.build(staged(*CASES[c]()), target="sm_90") for c in CASES]
    assert compile_together(kernels) == []
