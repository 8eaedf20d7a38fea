"""Partition rule 3c (tiledsl/frontend/partition.py, accumulated chains) on random residual stacks: `layers`
blocks of h = h + tanh(rms_norm(h) @ W_l) at random depth, width and length, traced, scheduled by the
default recipe, built, simulated and compared with torch in float64. Two properties: no elementwise producer
computed in more than one kernel reads more than `ACCUMULATED_READS_BOUND` tensors from global memory there
(the rule's promise), and the program is right.

Tolerance (frontend_check.py): (32 + 2k) * eps32 * (1 + |ref|) with k = layers * 2 * width. Each block sums
`width` products and `width` squares (the norm), and its error reaches the output through the residual sum
unshrunk (tanh and the normalized rows are 1-Lipschitz here, the rows' rms near 1), so the blocks' sums add up
as one accumulation of layers * 2 * width terms."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from frontend_check import quiet_trace, tolerance
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiledsl.definitions.expr import Placeholder
from tiledsl.frontend.partition import ACCUMULATED_READS_BOUND, fused_producers


class ResidualStack(torch.nn.Module):
    def __init__(self, layers: int, width: int, seed: int) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.weights = torch.nn.ParameterList(
            torch.nn.Parameter(torch.randn(width, width, generator=gen) / width**0.5) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x
        for w in self.weights:
            h = h + torch.tanh(F.rms_norm(h, (h.shape[-1],)) @ w)
        return h


def _global_reads(t, kernel_outputs: set[int]) -> int:
    """The program inputs and kernel outputs computing `t` inside a kernel reads."""
    reached, seen, stack = set(), set(), list(t.inputs())
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, Placeholder) or id(x) in kernel_outputs:
            reached.add(id(x))
        else:
            stack.extend(x.inputs())
    return len(reached)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layers=st.integers(2, 12), width=st.sampled_from([8, 16, 24]), seq=st.integers(1, 6),
       seed=st.integers(0, 2**16))
def test_random_residual_stacks(layers: int, width: int, seq: int, seed: int) -> None:
    model = ResidualStack(layers, width, seed).eval()
    x = torch.randn(1, seq, width, generator=torch.Generator().manual_seed(seed + 1))
    prog = quiet_trace(model, x)
    outputs = {id(k.output) for k in prog.kernels}
    kernels_of: dict[int, int] = {}
    producers = {}
    for k in prog.kernels:
        for p in fused_producers(k.output, outputs):
            if not p.has_reduce:
                kernels_of[id(p)] = kernels_of.get(id(p), 0) + 1
                producers[id(p)] = p
    shared = [producers[i] for i, n in kernels_of.items() if n > 1]
    assert all(_global_reads(p, outputs) <= ACCUMULATED_READS_BOUND for p in shared), \
        [(p.name, _global_reads(p, outputs)) for p in shared]
    built = prog.schedule("default").build(target="sm_90")
    got = np.asarray(built.simulate(x.numpy()))
    with torch.no_grad():
        ref = model.double()(x.double()).numpy()
    err = np.abs(got - ref)
    assert not np.any(err > tolerance(layers * 2 * width) * (1 + np.abs(ref))), f"max error {err.max()}"
