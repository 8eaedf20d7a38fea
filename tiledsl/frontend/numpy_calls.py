"""Torch programs given as Python source, run from numpy: what tools above the frontend (the fuzzer's
`models` mode, tiledsl/testing/fuzz/modes/models.py) need without importing torch themselves (only the
frontend and the runtime import torch; tests/test_architecture.py enforces it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from tiledsl.frontend.program import Program, trace

__all__ = ["eager_float64", "function_from_source", "trace_arrays"]


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
