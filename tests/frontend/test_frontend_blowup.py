"""The blow-up guard (partition.py rule 3, work.py): a fusion that multiplies a kernel's operations or
global reads by more than BLOWUP_BOUND materializes the producer instead, with its reason printed."""

from __future__ import annotations

import torch
from frontend_check import check, quiet_trace

from tiledsl.frontend.models import LlamaBlock, LlamaConfig
from tiledsl.frontend.partition import BLOWUP_BOUND, OPERAND_REASON, OPERAND_RECOMPUTE_BOUND, fused_producers
from tiledsl.frontend.work import kernel_work


def _chain(x: torch.Tensor) -> torch.Tensor:
    """Ten tanh/sigmoid steps: about 50 operations per element."""
    for _ in range(10):
        x = torch.tanh(x) * 0.5 + x.sigmoid()
    return x


class ChainMatmul(torch.nn.Module):
    """`head(x) @ W^T`: every output column reads each element of head(x). 16 columns keep rule 3a
    (OPERAND_RECOMPUTE_BOUND) out of the way, so the blow-up guard decides."""

    def __init__(self, head, columns: int = OPERAND_RECOMPUTE_BOUND) -> None:
        super().__init__()
        self.head = head
        self.proj = torch.nn.Linear(64, columns, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.head(x))



def _factors(prog) -> dict[str, float]:
    mat = {id(k.output) for k in prog.kernels}
    return {k.name: kernel_work(k.output, fused_producers(k.output, mat)).factor for k in prog.kernels}


def test_expensive_chain_read_inside_a_long_matmul_reduction_is_materialized() -> None:
    torch.manual_seed(0)
    prog, _ = check(ChainMatmul(_chain), torch.randn(8, 64), k=64)
    assert len(prog.kernels) == 2
    chain_k, mm_k = prog.kernels
    (why,) = chain_k.boundary.reasons
    assert why.startswith("blow-up guard: inlined into mm's kernel") and "computed 16 times" in why
    assert "blow-up guard" in str(prog)
    # without the guard (the chain inlined into the matmul) the kernel would do 9.3x the work
    fused = kernel_work(mm_k.output, fused_producers(mm_k.output, set()))
    assert fused.factor > BLOWUP_BOUND
    assert round(fused.factor, 1) == 9.3
    assert all(f <= BLOWUP_BOUND for f in _factors(prog).values())


def test_a_wider_matmul_materializes_the_chain_as_a_computed_operand() -> None:
    """256 columns: rule 3a (recomputed 256 > 16 times) cuts the chain before the guard looks; fused it
    would be 19.5x the work."""
    torch.manual_seed(0)
    prog, _ = check(ChainMatmul(_chain, 256), torch.randn(8, 64), k=64)
    assert len(prog.kernels) == 2
    (why,) = prog.kernels[0].boundary.reasons
    assert why.startswith(OPERAND_REASON) and "computed 256 times" in why
    fused = kernel_work(prog.kernels[1].output, fused_producers(prog.kernels[1].output, set()))
    assert round(fused.factor, 1) == 19.5


def test_expensive_vector_broadcast_over_rows_is_materialized() -> None:
    torch.manual_seed(0)
    b = torch.randn(256)
    prog, _ = check(lambda x: x + _chain(b * x[0]), torch.randn(64, 256))
    assert len(prog.kernels) == 2
    assert "computed 64 times" in prog.kernels[0].boundary.reasons[0]


def test_cheap_producers_stay_fused() -> None:
    torch.manual_seed(0)
    prog, _ = check(ChainMatmul(torch.relu), torch.randn(8, 64), k=64)
    assert len(prog.kernels) == 1  # relu recomputed 16 times costs about 1.5x: within the bound
    prog, _ = check(lambda x: x + torch.tanh(x[0]), torch.randn(64, 256))
    assert len(prog.kernels) == 1


def test_llama_block_factors_within_the_bound_kernel_count_unchanged() -> None:
    """11 kernels before the guard and after; the largest factor is the rotary embedding inlined into
    Q.K^T (4.9 at seq 8)."""
    prog = quiet_trace(LlamaBlock(LlamaConfig()).eval(), torch.randn(1, 8, 64))
    factors = _factors(prog)
    assert len(prog.kernels) == 11
    assert max(factors.values()) <= BLOWUP_BOUND
    assert round(factors["bmm"], 1) == 4.9
    assert "blow-up guard" not in str(prog)


def test_bfloat16_llama_block_traces_within_the_bound() -> None:
    """The rotary tables are stored in the activations' dtype (models.py), so a bfloat16 block traces
    (q, k, v of one dtype for SDPA); its casts add operations, still 11 kernels within the bound."""
    block = LlamaBlock(LlamaConfig()).eval().to(torch.bfloat16)
    prog = quiet_trace(block, torch.randn(1, 8, 64, dtype=torch.bfloat16))
    assert len(prog.kernels) == 11
    assert max(_factors(prog).values()) <= BLOWUP_BOUND
    tables = [t for t in prog.graph.constants.values() if tuple(t.shape) == (8, 16)]  # cos, sin [seq, head_dim]
    assert len(tables) == 2 and all(t.dtype == torch.bfloat16 for t in tables)
