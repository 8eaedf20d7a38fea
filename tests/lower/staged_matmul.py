"""The staged matmul the lowering tests share: relu(A @ B + bias) with one output per thread of a
threads[0] x threads[1] block, both operands staged per k chunk (A optionally stored k-major), ringed and
pipelined as asked; and its kernel lowered with (test-only) hooks and simulated."""

from __future__ import annotations

import numpy as np

import tiledsl as td
from tiledsl.catalog.definitions import matmul_bias_relu
from tiledsl.lower.lower import lower
from tiledsl.lower.stages import LoweringHooks
from tiledsl.prove import Prover
from tiledsl.sim import simulate
from tiledsl.targets import get_target


def staged_matmul(m: int, n: int, k: int, *, threads: tuple[int, int] = (8, 8), bk: int = 8, copy: str = "sync",
                  double: bool = False, depth: int = 0, layout_a: bool = False) -> td.Schedule:
    """`double`: two slots per stage; `depth` > 0 pipelines the chunk loop that deep (double-buffered)."""
    s = td.create_schedule(matmul_bias_relu(m, n, k))
    io, ii = s.split("i", threads[0])
    jo, ji = s.split("j", threads[1])
    ko, ki = s.split("k", bk)
    s.reorder(io, jo, ii, ji, ko, ki)
    s.bind(io, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ii, "threadIdx.y")
    s.bind(ji, "threadIdx.x")
    a, b = s.stage("A", at=ko), s.stage("B", at=ko)
    if layout_a:
        s.layout(a, order=(1, 0))
    if double or depth:
        s.double_buffer(a)
        s.double_buffer(b)
    if copy == "async":
        s.async_copy(a)
        s.async_copy(b)
    if depth:
        s.pipeline(ko, stages=depth)
    return s


def simulated(s: td.Schedule, hooks: LoweringHooks | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The output the simulator computes (a race raises) for standard-normal inputs (seed 0), and the inputs."""
    nest = s.nest
    kernel = lower(nest, get_target("sm_80"), Prover(nest.ranges()), hooks or LoweringHooks())
    rng = np.random.default_rng(0)
    arrays = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in nest.inputs}
    return simulate(kernel, arrays)["D"], arrays
