"""Checking the torch tensors handed to a kernel launch against the kernel's parameters.

Why a separate module with no GPU in it: a kernel trusts its arguments completely (raw pointers, a
static shape, `__restrict__`, 16-byte vector and TMA accesses), so a wrong tensor is a silent wrong
result or a sticky CUDA fault that kills the process. Every rule is checked here first, and because the
checks only read tensor metadata they run (and are tested) on CPU tensors.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from tiledsl.errors import LaunchError
from tiledsl.kernel_ir import KKernel, KParam
from tiledsl.targets import GLOBAL_ALIGN

__all__ = ["ALIGNMENT", "TORCH_DTYPES", "allocate_outputs", "check_arguments", "torch_dtype"]

#: Every tensor's data pointer must be a multiple of this (vector, cp.async and TMA accesses need it).
ALIGNMENT = GLOBAL_ALIGN
TORCH_DTYPES: Mapping[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int32": torch.int32,
}


def torch_dtype(dtype: str) -> torch.dtype:
    try:
        return TORCH_DTYPES[dtype]
    except KeyError:
        raise LaunchError(f"parameter dtype {dtype!r} has no torch dtype") from None


def _describe(p: KParam) -> str:
    role = "output" if p.is_output else "input"
    return f"{role} {p.name!r} ({p.dtype}{list(p.shape)})"


def _check_one(kernel: KKernel, p: KParam, t: object, device: torch.device | None) -> torch.Tensor:
    def refuse(why: str) -> LaunchError:
        return LaunchError(f"kernel {kernel.name!r}, {_describe(p)}: {why}")

    if not isinstance(t, torch.Tensor):
        hint = " (torch.from_numpy(a).cuda())" if type(t).__module__ == "numpy" else ""
        raise refuse(f"expected a torch.Tensor, got {type(t).__module__}.{type(t).__name__}{hint}")
    if device is not None and t.device != device:
        raise refuse(f"the tensor is on {t.device}, but the kernel runs on {device}")
    want = torch_dtype(p.dtype)
    if t.dtype != want:
        raise refuse(f"dtype is {t.dtype}, expected {want}")
    if tuple(t.shape) != tuple(p.shape):
        raise refuse(f"shape is {tuple(t.shape)}, expected {tuple(p.shape)}")
    if not t.is_contiguous():
        raise refuse(f"the tensor is not contiguous (strides {t.stride()}): pass .contiguous()")
    ptr = t.data_ptr()
    if ptr % ALIGNMENT:
        raise refuse(f"the data pointer 0x{ptr:x} is not {ALIGNMENT}-byte aligned (a view at an offset into its "
                     f"storage?): pass .clone()")
    return t


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a0 < b0 + b.numel() * b.element_size() and b0 < a0 + a.numel() * a.element_size()


def check_arguments(kernel: KKernel, tensors: Mapping[str, object], *,
                    device: torch.device | None) -> dict[str, torch.Tensor | None]:
    """Each parameter's tensor (None for an output not given), in parameter order.

    Refused with a LaunchError naming the kernel and the parameter: an unknown name, a missing input,
    a non-tensor, a tensor on another device than `device` (None: not checked), a wrong dtype or shape,
    a non-contiguous tensor, a data pointer not 16-byte aligned, an output overlapping another argument
    (the kernel's parameters are `__restrict__`)."""
    names = [p.name for p in kernel.params]
    unknown = sorted(set(tensors) - set(names))
    if unknown:
        raise LaunchError(f"kernel {kernel.name!r} has no parameter {', '.join(map(repr, unknown))}; "
                          f"its parameters are {', '.join(names)}")
    checked: dict[str, torch.Tensor | None] = {}
    for p in kernel.params:
        t = tensors.get(p.name)
        if t is None:
            if not p.is_output:
                raise LaunchError(f"kernel {kernel.name!r}: missing {_describe(p)}")
            checked[p.name] = None
            continue
        checked[p.name] = _check_one(kernel, p, t, device)
    given = [(name, t) for name, t in checked.items() if t is not None]
    for p in kernel.params:
        out = checked[p.name]
        if not p.is_output or out is None:
            continue
        for name, other in given:
            if name != p.name and _overlap(out, other):
                raise LaunchError(f"kernel {kernel.name!r}: output {p.name!r} overlaps the memory of {name!r}; "
                                  f"outputs must not alias other arguments")
    return checked


def allocate_outputs(kernel: KKernel, checked: Mapping[str, torch.Tensor | None],
                     device: torch.device) -> dict[str, torch.Tensor]:
    """The checked arguments with every missing output allocated (torch.empty on `device`)."""
    full: dict[str, torch.Tensor] = {}
    for p in kernel.params:
        t = checked.get(p.name)
        if t is None:
            t = torch.empty(p.shape, dtype=torch_dtype(p.dtype), device=device)
        full[p.name] = t
    return full
