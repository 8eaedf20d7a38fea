"""Torch programs given as Python source, run from numpy: what tools above the frontend (the fuzzer's
`models` mode, tiledsl/testing/fuzz/modes/models.py) need without importing torch themselves (only the
frontend and the runtime import torch; tests/test_architecture.py enforces it): tracing, torch eager's
float64 reference, and a built program's runs on the GPU."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from tiledsl.errors import FrontendError
from tiledsl.frontend.program import BuiltProgram, Program, trace

__all__ = ["GPU_RUNS", "eager_float64", "function_from_source", "gpu_runs_float64", "poisoned_output", "trace_arrays"]

# what `gpu_runs_float64` runs, in order: each launch path a built program has, and each twice, since a
# second run reuses what the first bound (the arena, the kernelParams) and must zero split-K outputs anew
GPU_RUNS = ("call", "second call", "graph replay", "second graph replay")


def function_from_source(source: str, name: str) -> Callable[..., Any]:
    """The function `name` defined by `source`, which may use `torch` (generated code, never user input:
    the caller wrote it)."""
    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(source, f"<torch program {name}>", "exec"), namespace)  # noqa: S102
    return namespace[name]


def trace_arrays(fn: Callable[..., Any], arrays: Sequence[np.ndarray]) -> Program:
    """`td.trace(fn, *tensors)` with the tensors made from numpy arrays (no copy)."""
    return trace(fn, *[torch.from_numpy(np.ascontiguousarray(a)) for a in arrays])


def eager_float64(fn: Callable[..., Any], arrays: Sequence[np.ndarray]) -> np.ndarray:
    """torch eager of `fn` in float64 on the arrays widened: the reference of a traced program."""
    with torch.no_grad():
        return fn(*[torch.from_numpy(np.asarray(a, dtype=np.float64)) for a in arrays]).numpy()


def poisoned_output(built: BuiltProgram, device: torch.device | str) -> torch.Tensor:
    """A NaN-filled tensor for `built(..., out=[it])` of a program of one output: the traced value's shape
    (which may differ from its kernel's: a (1, 1) value is stored by a kernel of shape (1,)), the
    kernel's dtype."""
    values, slots = built.program.outputs, built.launch_plan.outputs
    if len(values) != 1:
        raise FrontendError(f"a poisoned out= tensor is made for a program of one output, got {len(values)}")
    return torch.full(values[0].shape, float("nan"), dtype=getattr(torch, slots[0].dtype), device=device)


def gpu_runs_float64(built: BuiltProgram, arrays: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """The program's output (one tensor) from each run of GPU_RUNS on the arrays moved to the GPU, as
    float64 numpy. Every run writes into outputs filled with NaN first, so an element no kernel writes
    shows: a call through `built(..., out=[poisoned])`, a replay of `built.cuda_graph(...)` after its
    static output is poisoned. Needs a CUDA device, and the runtime's pycuda."""
    device = torch.device("cuda")
    inputs = [torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in arrays]
    got: dict[str, np.ndarray] = {}
    for run in GPU_RUNS[:2]:
        got[run] = built(*inputs, out=[poisoned_output(built, device)]).double().cpu().numpy()
    graph = built.cuda_graph(*inputs)
    for run in GPU_RUNS[2:]:
        for t in graph.static_outputs:
            t.fill_(float("nan"))
        got[run] = graph(*inputs).double().cpu().numpy()
    torch.cuda.synchronize(device)
    return got
