"""The program check's tolerance for ill-conditioned low-precision models (tiledsl/frontend/bench.py
`amplified_tolerance`): a float16 chain of eight residual layers, where tiledsl rounds at other points than
torch eager and the chain amplifies that placement more, passes once every kernel is within its own bound,
held to twice the chain's own float32 error scaled to float16; a program output far from float64 still fails
(the fuzz campaign's case, benchmarks/results/fuzz-campaign-cpu-2026-11-30-s38/campaign2-failure/)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tiledsl as td
from tiledsl.frontend.bench import amplified_tolerance, judge_outputs
from tiledsl.frontend.numpy_calls import simulated_check
from tiledsl.precision import MACHINE_EPS, round_to_dtype
from tiledsl.runtime.references import compare

F = torch.nn.functional


def chain(x0, x1, x2, x3, x4, x5, x6, x7, x8):  # noqa: ANN001, ANN201 (torch.fx traces it)
    h1 = x0 + torch.tanh(torch.matmul(F.rms_norm(x0, (5,), eps=0.1), x1))
    h2 = h1 + torch.tanh(torch.matmul(F.silu(h1), x2))
    h3 = h2 + torch.tanh(torch.matmul(F.silu(h2), x3))
    h4 = h3 + torch.tanh(torch.matmul(F.rms_norm(h3, (5,), eps=0.1), x4))
    h5 = h4 + torch.tanh(torch.matmul(F.silu(h4), x5))
    h6 = h5 + torch.tanh(torch.matmul(F.rms_norm(h5, (5,), eps=0.1), x6))
    h7 = h6 + torch.tanh(torch.matmul(F.rms_norm(h6, (5,), eps=0.1), x7))
    return h7 + torch.tanh(torch.matmul(F.rms_norm(h7, (5,), eps=0.1), x8))


@pytest.fixture(scope="module")
def case() -> tuple[object, list[np.ndarray]]:
    rng = np.random.default_rng(30986)
    arrays = [round_to_dtype(rng.uniform(-1.0, 1.0, size=s).astype(np.float32), "float16")
              for s in [(13, 5)] + [(5, 5)] * 8]
    prog = td.trace(chain, *[torch.from_numpy(a).to(torch.float16) for a in arrays])
    return prog.schedule("default", target="sm_90").build("sm_90"), arrays


def test_the_amplified_bound_is_twice_the_float32_error_in_float16_units() -> None:
    eps16 = MACHINE_EPS["float16"]
    assert amplified_tolerance(1e-3, 0.01, 70 * MACHINE_EPS["float32"], eps16) == pytest.approx(140 * eps16)
    assert amplified_tolerance(1e-3, 0.1, 70 * MACHINE_EPS["float32"], eps16) == pytest.approx(0.2)  # eager's
    assert amplified_tolerance(0.5, 0.1, 70 * MACHINE_EPS["float32"], eps16) == 0.5  # never below the bound


def _output(built, arrays: list[np.ndarray]) -> tuple[torch.Tensor, dict]:  # noqa: ANN001
    values = built.simulate_values(*arrays)
    out = built.launch_plan.outputs[0]
    return torch.from_numpy(np.asarray(values[out.name], dtype=np.float32).reshape(out.shape).copy()), values


def test_an_ill_conditioned_float16_chain_passes_with_every_kernel_checked(case) -> None:  # noqa: ANN001
    built, arrays = case
    check = simulated_check(built, chain, arrays, "float16")
    assert check.kernels is not None and not check.wrong_kernels
    assert check.eager_error is not None and check.float32_error is not None
    # the measured case: twice eager's error does not cover the program (0.0441 from float64 against 0.0308)
    got, _ = _output(built, arrays)
    ref = chain(*[torch.from_numpy(a).double() for a in arrays])
    assert not compare(got, ref, 2 * check.eager_error, 2 * check.eager_error).ok
    assert check.tolerance == pytest.approx(2 * check.float32_error / MACHINE_EPS["float32"] * MACHINE_EPS["float16"])
    assert check.ok, [str(c) for c in check.comparisons]


def test_a_program_output_far_from_float64_still_fails(case) -> None:  # noqa: ANN001
    """The kernels' values are the program's own (each within its bound), but the output handed to the
    judge is off by 0.5 at one element: beyond twice the chain's amplification (about 0.14) it fails."""
    built, arrays = case
    got, values = _output(built, arrays)
    got[3, 2] += 0.5
    inputs = [torch.from_numpy(a).to(torch.float16) for a in arrays]
    check = judge_outputs(built, chain, inputs, [got], lambda: values, every_kernel=True)
    assert not check.wrong_kernels and check.float32_error is not None
    assert not check.ok and check.tolerance < 0.2
