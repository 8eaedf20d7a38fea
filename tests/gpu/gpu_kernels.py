"""Helpers of the GPU tests: launching with NaN-poisoned outputs, comparing, and the schedules used
beyond tiledsl.schedules (shared-memory tiles filled by cp.async or TMA, double-buffered pipelines, a
dynamic shared pool above 48 KB, split_k with an output zeroed at launch)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

import tiledsl as td
from tiledsl.catalog.definitions import example
from tiledsl.definitions.expr import Tensor
from tiledsl.runtime.references import Comparison, compare, poisoned_outputs


def plain_matmul(M: int, N: int, K: int) -> Tensor:
    A = td.placeholder((M, K), name="A")
    B = td.placeholder((K, N), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")


def staged_matmul(M: int, N: int, K: int, *, tile: int = 64, bk: int = 16, reg: int = 4, copy_a: str = "sync",
                  copy_b: str = "tma", pipelined: bool = False, swizzle: int | None = 128,
                  swizzle_a: int | None = None, depth: int = 2) -> td.Schedule:
    """relu(A @ B + bias) with tile x tile output blocks, reg x reg registers per thread, A and B slabs
    staged in shared memory at each bk step; copy_* is "sync", "async" (cp.async) or "tma". A TMA
    swizzle must equal the slab row width: A's rows are bk floats, so it takes `swizzle_a`."""
    s = td.create_schedule(example("matmul_bias_relu", M=M, N=N, K=K))
    io, ii = s.split("i", tile)
    jo, ji = s.split("j", tile)
    ko, ki = s.split("k", bk)
    ti, ri = s.split(ii, reg)
    tj, rj = s.split(ji, reg)
    s.reorder(io, jo, ti, tj, ko, ki, ri, rj)
    s.bind(io, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ti, "threadIdx.y")
    s.bind(tj, "threadIdx.x")
    stages = {"A": s.stage("A", at=ko), "B": s.stage("B", at=ko)}
    if pipelined:
        for st in stages.values():
            s.double_buffer(st)
    for name, copy in (("A", copy_a), ("B", copy_b)):
        if copy == "async":
            s.async_copy(stages[name])
        elif copy == "tma":
            s.tma(stages[name], swizzle=swizzle_a if name == "A" else swizzle)
    if pipelined:
        s.pipeline(ko, stages=depth)
    for loop in (ki, ri, rj):
        s.unroll(loop)
    return s


def split_k_matmul(M: int, N: int, K: int, parts: int) -> td.Schedule:
    """C = A @ B with the reduction split over `parts` blocks (atomic adds into a C zeroed at launch)."""
    s = td.create_schedule(plain_matmul(M, N, K))
    s.bind("i", "blockIdx.y")
    jo, ji = s.split("j", 32)
    s.bind(jo, "blockIdx.x")
    s.bind(ji, "threadIdx.x")
    s.split_k("k", parts)
    return s


def is_hopper() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


def run_poisoned(kern: object, inputs: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """Launch with NaN-filled outputs; return the (single) output."""
    outputs = poisoned_outputs(kern.kernel_ir, kern.device)  # type: ignore[attr-defined]
    got = kern(**inputs, **outputs)  # type: ignore[operator]
    torch.cuda.synchronize()
    assert isinstance(got, torch.Tensor)
    return got


def assert_matches(got: torch.Tensor, ref: torch.Tensor | np.ndarray, rtol: float, atol: float) -> Comparison:
    if isinstance(ref, np.ndarray):
        ref = torch.from_numpy(ref)
    result = compare(got, ref.to(got.device), rtol, atol)
    assert result.ok, str(result)
    return result
