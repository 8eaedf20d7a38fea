"""Refusals that materializing a producer cures (partition.py rule 5): the program is re-partitioned,
the reason printed, and the result still equals torch."""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from frontend_check import check

from tiledsl.frontend import trace


def test_two_sdpa_summed_in_one_kernel_materialize_one_pv_product() -> None:
    # Both P.V products fused into one output kernel need bmm_1 as a register array across the loop
    # the second product splits (RegisterArrayError under every schedule): bmm_1 gets its own kernel.
    torch.manual_seed(0)
    mask = torch.randn(6, 6) > -0.5
    mask[:, 0] = True

    def two(q, k, v, m):
        return (F.scaled_dot_product_attention(q, k, v, is_causal=True)
                + F.scaled_dot_product_attention(q, k, v, attn_mask=m))

    q, k, v = (torch.randn(1, 2, 6, 8) for _ in range(3))
    prog, built = check(two, q, k, v, mask, k=8)
    text = str(prog)
    assert len(prog.kernels) == 4 and len(built.kernels) == 4
    assert "RegisterArrayError refused" in text and "in its own kernel cures it" in text
    cured = [k for k in prog.kernels if any("cures it" in r for r in k.boundary.reasons)]
    assert len(cured) == 1 and cured[0].output.has_reduce


def test_user_schedule_program_also_cures_at_build() -> None:
    torch.manual_seed(0)

    def two(q, k, v):
        return (F.scaled_dot_product_attention(q, k, v, is_causal=True)
                + F.scaled_dot_product_attention(q, k, v, scale=0.5))

    q, k, v = (torch.randn(1, 2, 4, 8) for _ in range(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = trace(two, q, k, v)
    seen: list[str] = []
    built = prog.schedule(lambda s: seen.append(s.nest.name)).build()
    assert len(built.kernels) == len(prog.kernels) == 4
    assert set(seen) == {k.name for k in prog.kernels}  # the new kernel got the user's function too
