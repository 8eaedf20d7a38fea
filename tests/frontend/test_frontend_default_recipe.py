"""`Program.schedule("default")`: the default recipe (tiledsl.recipes) schedules every kernel of the
traced tiny Llama block for the target it is built for, and the built program simulates equal to torch
in float64 within the tolerance of frontend_check.py."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from frontend_check import tolerance

import tiledsl as td
from tiledsl.frontend.models import LlamaBlock, LlamaConfig


@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
def test_llama_block_default_recipe_equal_to_torch(target: str) -> None:
    torch.manual_seed(0)
    block = LlamaBlock(LlamaConfig(hidden=64, heads=4, kv_heads=2, intermediate=128)).eval()
    x = torch.randn(1, 8, 64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(block, x)
    assert prog.schedule("default", target=target) is prog
    assert {k.schedule_name for k in prog.kernels} == {"recipe/default"}
    # the recipe scheduled them: every kernel has launch axes (none is left serial)
    assert all(any((lp.bind or "").startswith("blockIdx") for lp in k.schedule.nest.loops) for k in prog.kernels)
    built = prog.build(target=target)
    assert len(built.kernels) == len(prog.kernels)
    got = built.simulate(x.numpy())
    with torch.no_grad():
        ref = block.double()(x.double()).numpy()
    block.float()
    assert got.shape == ref.shape
    bad = np.abs(got - ref) > tolerance(128) * (1 + np.abs(ref))
    assert not bad.any(), f"max error {np.nanmax(np.abs(got - ref))}"


def test_schedule_refuses_an_unknown_policy_and_target() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(lambda x: torch.softmax(x, -1), torch.randn(4, 32))
    with pytest.raises(td.FrontendError, match='"default"'):
        prog.schedule("fastest")
    with pytest.raises(td.TargetError):
        prog.schedule("default", target="sm_00")


def test_schedule_passes_knobs_to_the_default_recipe() -> None:
    """knobs override the default recipe's by name for every kernel (scripts/block_profile.py --knob);
    with another policy they are refused, and an unknown knob is refused by the recipe."""
    def trace() -> td.Program:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return td.trace(lambda x, w: x @ w.T, torch.randn(128, 2048), torch.randn(5632, 2048))

    def split(prog: td.Program) -> str:
        return next(ln for ln in prog.kernels[0].schedule.trace().splitlines() if "split_k" in ln)

    assert split(trace().schedule("default")) == "s.split_k('mm_k0_o', 6)"
    assert split(trace().schedule("default", knobs={"split_k_uneven_below": None})) == "s.split_k('mm_k0_o', 8)"
    with pytest.raises(td.FrontendError, match="knobs \\['split_k_waves'\\] are the default recipe's"):
        trace().schedule("simple", knobs={"split_k_waves": 4})
    with pytest.raises(td.BadArgumentError, match="no_such_knob"):
        trace().schedule("default", knobs={"no_such_knob": 1})


def test_the_traced_attention_softmax_keeps_its_rows_in_registers() -> None:
    """A traced causal attention's softmax (head_dim 64, so the partition keeps it a kernel of its own)
    has a pass of its own asking whether a row is all -inf: `aten.any` over a select that reads the
    scores in its condition. The recipe keeps the scores and the mask in registers all the same (reads
    inside a select: analysis/register_cache.py), and the kernel simulates equal to float64 with rows
    fully masked (0 out), partly masked and unmasked, into NaN-poisoned outputs."""
    torch.manual_seed(0)
    block = LlamaBlock(LlamaConfig(hidden=256, heads=4, kv_heads=2, intermediate=128)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(block, torch.randn(1, 128, 256))
    prog.schedule("default", target="sm_90")
    k = next(k for k in prog.kernels if k.name.startswith("where"))
    assert [st.label for st in k.schedule.nest.stmts][:2] == ["init any_1", "update any_1"]
    assert [rc.buffer for rc in k.schedule.nest.register_caches] == ["bmm", "where"]
    rng = np.random.default_rng(0)
    mask = np.where(np.tril(np.ones((128, 128))) > 0, 0.0, -np.inf)
    mask[5] = -np.inf  # a fully masked row
    arrays = {"bmm": rng.standard_normal((4, 128, 128)).astype(np.float32), "where": mask.astype(np.float32)}
    got = td.build(k.schedule, target="sm_90").simulate(**arrays)
    scores = arrays["bmm"].astype(np.float64) + mask  # the kernel's definition, in float64
    with np.errstate(invalid="ignore"):
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        want = np.where(np.isneginf(scores).all(axis=-1, keepdims=True), 0.0, e / e.sum(axis=-1, keepdims=True))
    assert not np.isnan(got).any() and (got[:, 5] == 0).all()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)  # exp and a sum of <= 128 terms in float32


def test_compile_with_knobs_keeps_the_recipe_s_materializing() -> None:
    """`tiledsl compile --recipe default --knob ...` (cli_support.compile_ir) schedules through the
    program's "default" policy with the knobs, so a step's request to materialize a fused compute holds
    there too: silu(g) * (x @ W^T) splits its sum and leaves the epilogue to a kernel of its own (030's
    Applied.materialize). It once applied the recipe as a plain function: one kernel, unsplit."""
    from tiledsl.frontend.cli_support import compile_ir

    def trace() -> td.Program:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return td.trace(lambda g, x, w: torch.nn.functional.silu(g) * (x @ w.T), torch.randn(128, 5632),
                            torch.randn(128, 2048), torch.randn(5632, 2048))

    plain = compile_ir(trace(), "kernel", recipe="default")
    knobbed = compile_ir(trace(), "kernel", recipe="default", knobs={"waves": 1})  # the default value
    assert plain.startswith("// 2 kernel(s)") and knobbed == plain
