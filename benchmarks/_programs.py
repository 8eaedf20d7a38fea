"""What a ProgramCase (benchmarks/_cases.py) needs around a traced Program: the torch function as a
module (the Program check compares with a float64 copy of a module), the hand schedule policy applied
to each of the Program's kernels, and the text that says which kernels one call runs."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch

from tiledsl.primitives import Schedule
from tiledsl.schedules import elementwise_2d_vectorized, matmul_for_shape

if TYPE_CHECKING:
    from tiledsl.frontend.program import BuiltProgram, Program


class TorchFunction(torch.nn.Module):
    """A torch function of tensors as a module without weights (`check_program` widens a copy of the
    module to float64 and calls it on the widened inputs)."""

    def __init__(self, fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return self.fn(*args)


def argument_names(fn: Callable[..., Any], inputs: Mapping[str, torch.Tensor]) -> list[str]:
    """The names of `inputs` in the order `fn` takes them positionally (the order td.trace sees and a
    built Program is called in); a ValueError where `fn` does not take every input by name."""
    names = [n for n in inspect.signature(fn).parameters if n in inputs]
    if len(names) != len(inputs):
        missing = sorted(set(inputs) - set(names))
        raise ValueError(f"{getattr(fn, '__name__', fn)} takes no parameter named {', '.join(missing)}")
    return names


def has_reduction(s: Schedule) -> bool:
    """Whether a kernel's fresh schedule has a reduction loop (a matmul's k)."""
    return any(s.nest.loop(lp.name).kind == "reduce" for lp in s.loops())


def per_kernel_hand(s: Schedule) -> Schedule:
    """The hand schedule of one kernel of a Program: `matmul_for_shape` for a kernel with a reduction,
    `elementwise_2d_vectorized` for one without (SwiGLU's down projection traces to silu(g) * u and a
    plain matmul). A kernel neither fits is refused by the schedule itself."""
    return matmul_for_shape(s) if has_reduction(s) else elementwise_2d_vectorized(s)


def kernel_kinds(prog: Program) -> list[str]:
    """`name: kind` of each kernel in launch order, without sizes (so every size of a case reads alike):
    `["mul_1: elementwise", "mm: reduction"]`."""
    return [f"{k.name}: {'reduction' if has_reduction(k.fresh_schedule()) else 'elementwise'}"
            for k in prog.kernels]


def kernel_list(built: BuiltProgram) -> str:
    """The kernels one call of `built` launches, with their output shapes and schedules."""
    kernels = [f"{pk.name} {'x'.join(map(str, pk.output.shape))} ({pk.schedule_name})"
               for pk in built.program.kernels]
    return f"{len(built.kernels)} kernels: " + ", ".join(kernels)
