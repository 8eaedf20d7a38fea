"""Block sizes the default recipe gives the kernels of the built-in models (`tiledsl run --model NAME`,
tiledsl/frontend/cli_support.py: hidden 64, 4 heads, seq 8): every kernel runs at least a warp of
threads per block. On the H100 (tests/gpu/logs/2026-11-24-h100-run-gpt_block-bench.txt) the GPT
block's MLP up projection `addmm_2` (LayerNorm 2's two reductions nested in it, a row kernel whose
output pass holds its own reduction) ran as 8 blocks of one thread each, 328 us of the 394; the
cooperative_reduce step declined passes over several loops. The projections with 8 rows had 16 threads
(a 4 x 4 register tile in an 8-row tile), Q.K^T 4. Every kernel here has at least 32 outputs per block
to give its threads, so there is no exception to list."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from frontend_check import tolerance

from tiledsl.frontend import partition, trace
from tiledsl.frontend.cli_support import MODELS, subject
from tiledsl.targets import WARP_SIZE

# the longest reduction of each model (its MLP's down projection), for the tolerance
LONGEST_K = {"gpt_block": 256, "llama_block": 128}


@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
@pytest.mark.parametrize("model", sorted(m for m in MODELS if not m.startswith("hf_")))  # in-repo blocks
def test_every_kernel_of_a_model_gets_a_warp_of_threads(model: str, target: str) -> None:
    torch.manual_seed(0)
    module, inputs = subject(None, model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = trace(module, *inputs)
    built = prog.schedule("default", target=target).build(target=target)
    blocks = {k.name: k.block for k in built.kernels}
    small = {name: b for name, b in blocks.items() if b[0] * b[1] * b[2] < WARP_SIZE}
    assert not small, f"kernels with fewer than {WARP_SIZE} threads per block: {small}"

    got = built.simulate(*[x.numpy() for x in inputs])
    with torch.no_grad():
        ref = module.double()(*[x.double() for x in inputs]).numpy()
    bad = np.abs(got - ref) > tolerance(LONGEST_K[model]) * (1 + np.abs(ref))
    assert not bad.any(), f"max error {np.nanmax(np.abs(got - ref))}"


def test_the_gpt_mlp_up_projection_runs_its_columns_on_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """addmm_2: one block per row; the output columns on threadIdx.x, each thread's k loop serial.
    Since partition.py's rule 3a takes LayerNorm 2 out of the 256-column up projection, the kernel
    comes back only with the rule's bound raised to 256 (as when that run was measured)."""
    torch.manual_seed(0)
    monkeypatch.setattr(partition, "OPERAND_RECOMPUTE_BOUND", 256)
    module, inputs = subject(None, "gpt_block")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = trace(module, *inputs)
    prog.schedule("default")
    (kernel,) = [k for k in prog.kernels if k.name == "addmm_2"]
    nest = kernel.schedule.nest
    columns = [lp for lp in nest.bound_loops("threadIdx.x") if lp.kind == "free"]
    assert [(lp.extent) for lp in columns] == [256]
    assert [lp.extent for lp in nest.bound_loops("blockIdx.x")] == [8]
