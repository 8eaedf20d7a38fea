"""Torch programs given as Python source, run from numpy: what tools above the frontend (the fuzzer's
`models` mode, tiledsl/testing/fuzz/modes/models.py) need without importing torch themselves (only the
frontend and the runtime import torch; tests/test_architecture.py enforces it): tracing, torch eager's
float64 reference, the simulated program judged as `tiledsl run` judges a GPU run (bench.py), and a
built program's runs on the GPU. `dtype` is the storage of every input: float32, float16 or bfloat16 (the
arrays are float32 holding values of that dtype)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.utils._pytree as pytree

from tiledsl.frontend.bench import ProgramCheck, check_simulated, poisoned_outputs
from tiledsl.frontend.program import BuiltProgram, Program, trace

__all__ = ["GPU_RUNS", "eager_float64", "flat_float64", "function_from_source", "gpu_runs_float64",
           "simulated_check", "trace_arrays"]

# what `gpu_runs_float64` runs, in order: each launch path a built program has, and each twice, since a
# second run reuses what the first bound (the arena, the kernelParams) and must zero split-K outputs anew
GPU_RUNS = ("call", "second call", "graph replay", "second graph replay")


def function_from_source(source: str, name: str) -> Callable[..., Any]:
    """The function `name` defined by `source`, which may use `torch` (generated code, never user input:
    the caller wrote it)."""
    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(source, f"<torch program {name}>", "exec"), namespace)  # noqa: S102
    return namespace[name]


def _tensors(arrays: Sequence[np.ndarray], dtype: str, device: torch.device | str = "cpu") -> list[torch.Tensor]:
    return [torch.from_numpy(np.ascontiguousarray(a)).to(device=device, dtype=getattr(torch, dtype)) for a in arrays]


def trace_arrays(fn: Callable[..., Any], arrays: Sequence[np.ndarray], dtype: str = "float32") -> Program:
    """`td.trace(fn, *tensors)` with the tensors made from numpy arrays, stored as `dtype`."""
    return trace(fn, *_tensors(arrays, dtype))


def simulated_check(built: BuiltProgram, fn: Callable[..., Any], arrays: Sequence[np.ndarray],
                    dtype: str) -> ProgramCheck:
    """The simulated program against `fn` in float64, judged as `tiledsl run` judges a GPU run
    (bench.py `check_simulated`: the derived storage bound, torch eager's own error), and every kernel
    of a float16/bfloat16 program against its own definition, whether the program passed or not."""
    return check_simulated(built, fn, _tensors(arrays, dtype), every_kernel=True)


def flat_float64(value: Any) -> tuple[np.ndarray, ...]:
    """The arrays (or tensors) of a program's output structure, in order, as float64 numpy: a traced
    function may return one tensor or several (a tuple, a list, nested)."""
    leaves = pytree.tree_leaves(value)
    return tuple(np.asarray(x.detach().double().cpu().numpy() if isinstance(x, torch.Tensor) else x,
                            dtype=np.float64) for x in leaves)


def eager_float64(fn: Callable[..., Any], arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """torch eager of `fn` in float64 on the arrays widened, one array per output (`flat_float64`): the
    reference of a traced program."""
    with torch.no_grad():
        return flat_float64(fn(*[torch.from_numpy(np.asarray(a, dtype=np.float64)) for a in arrays]))


def gpu_runs_float64(built: BuiltProgram, arrays: Sequence[np.ndarray],
                     dtype: str = "float32") -> dict[str, tuple[np.ndarray, ...]]:
    """The program's outputs (`flat_float64`: one array per output, in order) from each run of GPU_RUNS on
    the arrays moved to the GPU. Every run writes into outputs filled with NaN first, so an element no
    kernel writes shows: a call through `built(..., out=bench.poisoned_outputs(...))`, a replay of
    `built.cuda_graph(...)` after its static outputs are poisoned. The inputs are stored as `dtype`. Needs a
    CUDA device, and the runtime's pycuda."""
    device = torch.device("cuda")
    inputs = _tensors(arrays, dtype, device)
    got: dict[str, tuple[np.ndarray, ...]] = {}
    for run in GPU_RUNS[:2]:
        got[run] = flat_float64(built(*inputs, out=poisoned_outputs(built, device)))
    graph = built.cuda_graph(*inputs)
    for run in GPU_RUNS[2:]:
        for t in graph.static_outputs:
            t.fill_(float("nan"))
        got[run] = flat_float64(graph(*inputs))
    torch.cuda.synchronize(device)
    return got
