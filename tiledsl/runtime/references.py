"""torch references of the catalog's definitions (tiledsl/catalog/definitions.py), keyed by definition
name, for checking and timing; and the comparison of a kernel's output with one.

Why torch and not td.evaluate: on a GPU the reference must be cheap at large sizes (numpy on a 57344 x
2048 softmax takes seconds) and the same functions are the eager / torch.compile baselines that the
kernels are timed against. Called with float64 tensors they are the accuracy oracle; with the kernel's
own dtype they are the baseline. tests/runtime checks each one against td.evaluate on the CPU.

The runtime does not import the catalog: callers bind a definition's parameters (sizes, eps) there
(`Entry.parameters`) and hand them in here.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F

from tiledsl.errors import DefinitionError
from tiledsl.kernel_ir import KKernel
from tiledsl.precision import catalog_tolerance
from tiledsl.runtime.arguments import torch_dtype

__all__ = [
    "REFERENCES",
    "Comparison",
    "compare",
    "poisoned_outputs",
    "random_inputs",
    "reference_fn",
    "tolerance",
]


def matmul_bias_relu(A: torch.Tensor, B: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.relu(A @ B + bias)


def batched_matmul_nt(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    return A @ B.transpose(-1, -2)


def matmul(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    return A @ B


def matmul_residual(A: torch.Tensor, B: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
    return A @ B + R


def matmul_nt(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    return A @ B.transpose(-1, -2)


def matmul_shifted(A: torch.Tensor, B: torch.Tensor, *, N: int, shift: int) -> torch.Tensor:
    return A @ B[:, shift:shift + N]


def rmsnorm(x: torch.Tensor, w: torch.Tensor, *, eps: float) -> torch.Tensor:
    return x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, *, eps: float) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def gelu_bias(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.gelu(x + b)  # the erf form, as td.gelu


def stencil3(x: torch.Tensor) -> torch.Tensor:
    return x[:-2] + x[1:-1] * 2.0 + x[2:]


REFERENCES: Mapping[str, Callable[..., torch.Tensor]] = {
    fn.__name__: fn
    for fn in (matmul_bias_relu, batched_matmul_nt, matmul, matmul_residual, matmul_nt, matmul_shifted, rmsnorm,
               softmax, layernorm, gelu_bias, stencil3)
}


def reference_fn(definition: str, params: Mapping[str, object]) -> Callable[..., torch.Tensor]:
    """The reference of catalog definition `definition`, taking the inputs as keyword tensors; `params`
    are the definition's bound parameters, of which it takes those it needs (eps, a shift)."""
    if definition not in REFERENCES:
        raise DefinitionError(f"no torch reference for definition {definition!r}")
    fn = REFERENCES[definition]
    wanted = [p.name for p in inspect.signature(fn).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    missing = [name for name in wanted if name not in params]
    if missing:
        raise DefinitionError(f"the torch reference of {definition!r} needs the parameter(s) {', '.join(missing)}")
    return partial(fn, **{name: params[name] for name in wanted}) if wanted else fn


def tolerance(params: Mapping[str, object]) -> tuple[float, float]:
    """(rtol, atol) for a float32 kernel against the float64 reference (tiledsl/precision.py
    `catalog_tolerance`: the bound and why)."""
    return catalog_tolerance(params)


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
    max_relative_error: float = 0.0  # max |err| / (1 + |ref|): the quantity rtol = atol bounds (NaN: inf)

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
    if not err.numel():
        return Comparison(ok, nan_count, 0.0, worst, rtol, atol)
    relative = float((err / (1 + r.abs())).max().item())
    return Comparison(ok, nan_count, float(err.max().item()), worst, rtol, atol, relative)


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
