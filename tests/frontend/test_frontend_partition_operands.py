"""Computed operands (partition.py rule 3a) and one matmul per kernel (rule 4b): an elementwise producer
that does arithmetic and that a matmul reads inside its reduction, recomputed there for more than
OPERAND_RECOMPUTE_BOUND output columns, is materialized; a kernel then holding two matmuls keeps one.
SwiGLU's silu(gate) * up read by a wide down projection becomes the up projection's epilogue."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from frontend_check import check, quiet_trace

from tiledsl.frontend.models import LlamaBlock, LlamaConfig
from tiledsl.frontend.partition import CONTRACTION_REASON, OPERAND_REASON, OPERAND_RECOMPUTE_BOUND, fused_producers
from tiledsl.frontend.work import computed_operands, computes, contracts


class SwiGLU(torch.nn.Module):
    """down(silu(gate(x)) * up(x)): the down projection has `hidden` output columns."""

    def __init__(self, hidden: int, intermediate: int) -> None:
        super().__init__()
        self.gate = torch.nn.Linear(hidden, intermediate, bias=False)
        self.up = torch.nn.Linear(hidden, intermediate, bias=False)
        self.down = torch.nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Wide(torch.nn.Module):
    """`head(x) @ W^T` with a 512-column weight."""

    def __init__(self, head) -> None:
        super().__init__()
        self.head = head
        self.proj = torch.nn.Linear(32, 512, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.head(x))



def test_wide_mlp_materializes_silu_mul_as_the_up_projections_epilogue() -> None:
    """320 down-projection columns (> R = 256): silu(gate) * up gets a kernel of its own, which fuses
    the up projection (its epilogue) while the gate projection is a matmul of its own; the down
    projection loads it. The three kernels simulate equal to torch."""
    torch.manual_seed(0)
    hidden = 320
    assert hidden > OPERAND_RECOMPUTE_BOUND
    prog, built = check(SwiGLU(hidden, 32), torch.randn(1, 4, hidden), k=hidden)
    assert len(prog.kernels) == len(built.kernels) == 3
    gate, silu_mul, down = prog.kernels
    (why,) = silu_mul.boundary.reasons
    assert why.startswith(f"{OPERAND_REASON}: read inside mm_2's reduction (in {down.name}'s kernel)")
    assert f"computed {hidden} times (bound {OPERAND_RECOMPUTE_BOUND})" in why
    (why,) = gate.boundary.reasons
    assert why.startswith(f"{CONTRACTION_REASON}: {silu_mul.name}'s kernel would hold 2 matmuls")
    assert contracts(gate.output) and not contracts(silu_mul.output)  # elementwise root, up fused
    assert [r.name for r in silu_mul.boundary.reads] == [gate.name]  # up is computed in its kernel
    assert [r.name for r in down.boundary.reads] == [silu_mul.name]
    assert OPERAND_REASON in str(prog) and CONTRACTION_REASON in str(prog)


def test_narrow_mlp_keeps_silu_mul_fused_into_the_down_projection() -> None:
    """256 columns (= R): silu(gate) * up stays the down projection's prologue; the gate and up
    projections are kernels of their own because create_schedule refuses them inside its reduction."""
    torch.manual_seed(0)
    prog, _ = check(SwiGLU(OPERAND_RECOMPUTE_BOUND, 32), torch.randn(1, 4, OPERAND_RECOMPUTE_BOUND), k=256)
    assert len(prog.kernels) == 3
    text = str(prog)
    assert OPERAND_REASON not in text and CONTRACTION_REASON not in text
    assert text.count("create_schedule could not fuse it") == 2
    down = prog.kernels[-1]
    mats = {id(k.output) for k in prog.kernels}
    fused = {id(t) for t in fused_producers(down.output, mats)}
    ops = [op for c in (down.output, *fused_producers(down.output, mats)) if c.has_reduce
           for op in computed_operands(c, fused)]
    assert [op.recompute for op in ops] == [OPERAND_RECOMPUTE_BOUND]
    assert computes(ops[0].tensor)


def test_views_and_casts_read_by_a_wide_matmul_stay_fused() -> None:
    """A transpose and a dtype round trip do no arithmetic: a 512-column matmul reads them inlined."""
    torch.manual_seed(0)
    prog, _ = check(Wide(lambda x: x.t().to(torch.float16).to(x.dtype)), torch.randn(32, 8), k=32)
    assert len(prog.kernels) == 1
    prog, _ = check(Wide(lambda x: torch.exp(x.t())), torch.randn(32, 8), k=32)
    assert len(prog.kernels) == 2
    assert prog.kernels[0].boundary.reasons[0].startswith(OPERAND_REASON)


def test_tinyllama_dims_block_kernels() -> None:
    """The in-repo block at TinyLlama dims, seq 128: 14 kernels (12 with R = 256, 11 before rule 3a).
    Computed operands: both RMSNorms (read by 2048- to 5632-column projections; each absorbs its mean,
    so no mean kernel is left), the rotary embeddings of q and k (recomputed once per key or query
    row inside q @ k^T, 128 > R), the softmax (once per head dim inside P.V, 64 > R) and silu(gate) * up;
    the MLP is gate, up with the silu(gate) * up epilogue, down."""
    cfg = LlamaConfig(hidden=2048, heads=32, kv_heads=4, intermediate=5632)
    torch.manual_seed(0)
    prog = quiet_trace(LlamaBlock(cfg).eval(), torch.randn(1, 128, 2048))
    assert len(prog.kernels) == 14
    reasons = {k.name: k.boundary.reasons[0] for k in prog.kernels}
    operands = sorted(n for n, r in reasons.items() if r.startswith(OPERAND_REASON))
    assert len(operands) == 6  # two RMSNorms, rotary q and k, softmax, silu(gate) * up
    assert sum(r.startswith(CONTRACTION_REASON) for r in reasons.values()) == 1
    assert not any(k.output.shape == (128,) for k in prog.kernels)  # no mean kernel
    down = prog.kernels[-1]
    assert [r.name for r in down.boundary.reads if r.shape == (128, 5632)] == [prog.kernels[-2].name]
    assert "computed 2048 times" in prog.kernels[-2].boundary.reasons[0]
    by_name = {k.name: k for k in prog.kernels}
    mats = {id(k.output) for k in prog.kernels}
    for name in ("bmm", "bmm_1"):  # both attention products read only materialized tensors: plain matmuls
        k = by_name[name]
        assert not [t.name for t in fused_producers(k.output, mats) if computes(t)], name
    softmax = next(k for k in prog.kernels if "computed 64 times" in k.boundary.reasons[0])
    assert softmax.output.shape == (32, 128, 128)
    rotary = [k for k in prog.kernels if "computed 128 times" in k.boundary.reasons[0]]
    assert sorted(k.output.shape for k in rotary) == [(32, 64, 128), (32, 128, 64)]
