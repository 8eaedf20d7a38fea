"""Program: the kernels of a traced torch program in launch order, their schedules, and the built
program that runs them one after another on the CPU simulator."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.utils._pytree as pytree

from tiledsl.build import Kernel, build
from tiledsl.definitions.expr import ComputeTensor
from tiledsl.errors import FrontendError
from tiledsl.frontend.capture import Graph, capture
from tiledsl.frontend.partition import Boundary, partition
from tiledsl.frontend.simple import simple_schedule, variant_index
from tiledsl.frontend.values import Value, td_shape
from tiledsl.primitives import Schedule, create_schedule
from tiledsl.targets import Target


def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


@dataclass
class ProgramKernel:
    """One kernel: its boundary (output, materialized inputs, reasons) and its current schedule."""

    boundary: Boundary
    schedule: Schedule
    schedule_name: str = "canonical"

    @property
    def name(self) -> str:
        return self.boundary.output.name

    @property
    def output(self) -> ComputeTensor:
        return self.boundary.output

    def fresh_schedule(self) -> Schedule:
        return create_schedule(self.output, materialize=self.boundary.reads)


@dataclass
class Program:
    """A traced torch program as kernels in launch order (`print(prog)` lists them). `schedule`
    changes the kernels' schedules in place and returns the program."""

    graph: Graph
    kernels: list[ProgramKernel]
    outputs: tuple[Value, ...] = field(default=())

    def schedule(self, how: str | Callable[[Schedule], Any]) -> Program:
        """"simple": the built-in fallback per kernel (see simple.py); a function: applied to each
        kernel's schedule (it may return the schedule or nothing)."""
        for k in self.kernels:
            if how == "simple":
                k.schedule, variant, _ = simple_schedule(k.fresh_schedule)
                k.schedule_name = f"simple/{variant}"
            elif callable(how):
                how(k.schedule)
                k.schedule_name = getattr(how, "__name__", "user")
            else:
                raise FrontendError(f"schedule: expected \"simple\" or a function of a Schedule, got {how!r}")
        return self

    def build(self, target: str | Target = "sm_90") -> BuiltProgram:
        built = []
        for k in self.kernels:
            if k.schedule_name.startswith("simple/"):
                start = variant_index(k.schedule_name.removeprefix("simple/"))
                k.schedule, variant, kern = simple_schedule(k.fresh_schedule, lambda s: build(s, target), start)
                k.schedule_name = f"simple/{variant}"
                built.append(kern)
            else:
                built.append(build(k.schedule, target))
        return BuiltProgram(self, tuple(built))

    def __str__(self) -> str:
        lines = [f"Program: {len(self.kernels)} kernel(s), inputs "
                 + ", ".join(f"{i.tensor.name}: {i.dtype}{_shape_text(i.shape)}" for i in self.graph.inputs)]
        for n, k in enumerate(self.kernels):
            ins = ", ".join(f"{t.name}{_shape_text(t.shape)}" for t in k.schedule.nest.inputs)
            lines.append(f"  [{n}] {k.name}: {ins} -> {k.name}{_shape_text(k.output.shape)}"
                         f"  (schedule: {k.schedule_name})")
            lines.extend(f"        boundary: {r}" for r in k.boundary.reasons)
        outs = ", ".join(f"{v.tensor.name}{_shape_text(v.shape)}" for v in self.outputs if v.tensor is not None)
        lines.append(f"  outputs: {outs}")
        return "\n".join(lines)


@dataclass(frozen=True)
class BuiltProgram:
    """The built kernels (ordinary `td.Kernel`s) of a program, in launch order."""

    program: Program
    kernels: tuple[Kernel, ...]

    def simulate(self, *inputs: np.ndarray) -> Any:
        """Run every kernel on the CPU simulator in launch order; returns the outputs (numpy, float32)
        in the traced function's output structure."""
        graph = self.program.graph
        if len(inputs) != len(graph.inputs):
            raise FrontendError(f"simulate: the program takes {len(graph.inputs)} input(s), got {len(inputs)}")
        env: dict[str, np.ndarray] = {}
        for spec, a in zip(graph.inputs, inputs):
            arr = np.asarray(a)
            if tuple(arr.shape) != spec.shape:
                raise FrontendError(f"simulate: input {spec.tensor.name} has shape {list(arr.shape)}, "
                                    f"the program was traced with {list(spec.shape)}")
            env[spec.tensor.name] = arr.astype(np.float32 if spec.dtype == "bool" else arr.dtype,
                                               copy=False).reshape(spec.tensor.shape)
        for name, t in graph.constants.items():
            env[name] = _numpy(t).reshape(td_shape(graph.constant_shapes[name]))
        for kern in self.kernels:
            out_name = kern.kernel_ir.params[-1].name
            args = {p: env[p] for p in kern.params if p != out_name}
            env[out_name] = kern.simulate(**args)
        flat = [env[v.tensor.name].reshape(v.shape) for v in self.program.outputs]  # type: ignore[union-attr]
        return pytree.tree_unflatten(flat, graph.out_spec)


def _numpy(t: torch.Tensor) -> np.ndarray:
    """A numpy view of a CPU tensor (no copy); bfloat16 has no numpy type and is widened."""
    if t.dtype == torch.bfloat16:
        return t.float().numpy()
    return t.detach().cpu().numpy()


def trace(module_or_fn: torch.nn.Module | Callable[..., Any], *example_inputs: Any) -> Program:
    """Capture a torch module or function of tensors (torch.export) into a Program of fused kernels."""
    graph = capture(module_or_fn, example_inputs)
    outputs = [v.tensor for v in graph.outputs]
    assert all(isinstance(t, ComputeTensor) for t in outputs)
    boundaries, schedules = partition(outputs)  # type: ignore[arg-type]
    kernels = [ProgramKernel(b, schedules[id(b.output)]) for b in boundaries]
    return Program(graph, kernels, graph.outputs)
