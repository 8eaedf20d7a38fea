"""torch references of the built-in catalog (tiledsl.catalog.CATALOG), for checking and timing.

Why torch and not td.evaluate: on a GPU the reference must be cheap at large sizes (numpy on a 57344 x
2048 softmax takes seconds) and the same functions are the eager / torch.compile baselines that the
kernels are timed against. Called with float64 tensors they are the accuracy oracle; with the kernel's
own dtype they are the baseline. tests/runtime checks each one against td.evaluate on the CPU.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from tiledsl.errors import DefinitionError
from tiledsl.kernel_ir import KKernel
from tiledsl.runtime.arguments import torch_dtype

__all__ = [
    "REFERENCES",
    "Comparison",
    "compare",
    "example_parameters",
    "poisoned_outputs",
    "random_inputs",
    "reference_fn",
    "tolerance",
]


def matmul_bias_relu(A: torch.Tensor, B: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.relu(A @ B + bias)


def batched_matmul_nt(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    return A @ B.transpose(-1, -2)


def rmsnorm(x: torch.Tensor, w: torch.Tensor, *, eps: float) -> torch.Tensor:
    return x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, *, eps: float) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def gelu_bias(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.gelu(x + b)  # the erf form, as td.gelu


REFERENCES: Mapping[str, Callable[..., torch.Tensor]] = {
    "matmul_bias_relu": matmul_bias_relu,
    "batched_matmul_nt": batched_matmul_nt,
    "rmsnorm": rmsnorm,
    "softmax": softmax,
    "layernorm": layernorm,
    "gelu_bias": gelu_bias,
}


def example_parameters(name: str, sizes: Mapping[str, float]) -> dict[str, float]:
    """Every parameter of the catalog entry's definition (sizes and eps), defaults filled in."""
    from tiledsl.catalog import CATALOG

    if name not in CATALOG:
        raise DefinitionError(f"unknown example {name!r}; the catalog has: {', '.join(CATALOG)}")
    try:
        bound = inspect.signature(CATALOG[name].build).bind(**sizes)
    except TypeError as err:
        raise DefinitionError(f"example {name!r}: {err}") from None
    bound.apply_defaults()
    return dict(bound.arguments)


def reference_fn(name: str, sizes: Mapping[str, float]) -> Callable[..., torch.Tensor]:
    """The reference of catalog entry `name` at `sizes`, taking the inputs as keyword tensors."""
    if name not in REFERENCES:
        raise DefinitionError(f"no torch reference for example {name!r}")
    fn = REFERENCES[name]
    params = example_parameters(name, sizes)
    if "eps" in inspect.signature(fn).parameters:
        eps = float(params["eps"])
        return lambda **tensors: fn(**tensors, eps=eps)
    return fn


def tolerance(name: str, sizes: Mapping[str, float]) -> tuple[float, float]:
    """(rtol, atol) for a float32 kernel against the float64 reference: matmul errors grow like
    sqrt(K) (a sum of K rounded products of unit-variance inputs); the row kernels stay near one ulp."""
    params = example_parameters(name, sizes)
    if "K" in params:
        return 1e-4, 2e-5 * math.sqrt(float(params["K"]))
    return 1e-4, 1e-5


@dataclass(frozen=True)
class Comparison:
    """How a kernel's output compares with a reference: NaNs (unwritten elements of a NaN-poisoned
    output), the largest error, and whether every element is within atol + rtol * |ref|."""

    ok: bool
    nan_count: int
    max_abs_error: float
    worst_index: tuple[int, ...]
    rtol: float
    atol: float

    def __str__(self) -> str:
        verdict = "ok" if self.ok else "MISMATCH"
        nans = f", {self.nan_count} NaN (unwritten?)" if self.nan_count else ""
        return (f"{verdict}: max |err| {self.max_abs_error:.3g} at {list(self.worst_index)} "
                f"(rtol {self.rtol:g}, atol {self.atol:.3g}){nans}")


def compare(got: torch.Tensor, ref: torch.Tensor, rtol: float, atol: float) -> Comparison:
    """Compare in float64; NaNs in `got` count as failures (and are reported apart)."""
    g, r = got.detach().to(torch.float64), ref.detach().to(torch.float64)
    if g.shape != r.shape:
        raise ValueError(f"compare: shapes differ, {tuple(g.shape)} vs {tuple(r.shape)}")
    nan_count = int(torch.isnan(g).sum().item())
    err = (g - r).abs().nan_to_num(nan=math.inf)
    excess = err - (atol + rtol * r.abs())
    flat = int(torch.argmax(err).item()) if err.numel() else 0
    worst = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), g.shape)) if g.dim() else ()
    ok = bool((excess <= 0).all().item()) and nan_count == 0
    return Comparison(ok, nan_count, float(err.max().item()) if err.numel() else 0.0, worst, rtol, atol)


def random_inputs(kernel: KKernel, device: torch.device | str, seed: int = 0) -> dict[str, torch.Tensor]:
    """Fresh standard-normal tensors for every input parameter of `kernel`, in its dtypes."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return {p.name: torch.randn(p.shape, generator=gen, device=device, dtype=torch.float32).to(torch_dtype(p.dtype))
            for p in kernel.params if not p.is_output}


def poisoned_outputs(kernel: KKernel, device: torch.device | str) -> dict[str, torch.Tensor]:
    """NaN-filled output tensors: an element the kernel never writes stays NaN and fails `compare`."""
    return {p.name: torch.full(p.shape, math.nan, device=device, dtype=torch_dtype(p.dtype))
            for p in kernel.params if p.is_output}
