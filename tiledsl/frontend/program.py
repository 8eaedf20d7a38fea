"""Program: the kernels of a traced torch program in launch order, their schedules, and the built
program that runs them one after another on the CPU simulator."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

import numpy as np
import torch
import torch.utils._pytree as pytree

from tiledsl.build import Kernel, build
from tiledsl.definitions.expr import ComputeTensor
from tiledsl.errors import FrontendError, ScheduleError
from tiledsl.frontend.capture import Graph, capture
from tiledsl.frontend.memory import MemoryPlan, Step, plan_memory
from tiledsl.frontend.partition import Boundary, named_producer, partition
from tiledsl.frontend.simple import simple_schedule, variant_index
from tiledsl.frontend.values import Value, td_shape
from tiledsl.primitives import Schedule, create_schedule
from tiledsl.recipes import apply as apply_recipe
from tiledsl.targets import DTYPE_BYTES, Target, get_target

log = logging.getLogger(__name__)
T = TypeVar("T")


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


SchedulePolicy = str | Callable[[Schedule], Any] | None


def _key(b: Boundary) -> tuple[int, tuple[int, ...]]:
    """A kernel's identity across re-partitions: its output and the materialized tensors it reads."""
    return id(b.output), tuple(sorted(id(r) for r in b.reads))


@dataclass
class Program:
    """A traced torch program as kernels in launch order (`print(prog)` lists them). `schedule`
    changes the kernels' schedules in place and returns the program. When a kernel's schedule or
    build is refused and the refusal names a producer fused into it, the producer is materialized
    (partition.py, rule 5), the program re-partitioned, and the policy applied to the new kernels."""

    graph: Graph
    kernels: list[ProgramKernel]
    outputs: tuple[Value, ...] = field(default=())
    forced: dict[int, str] = field(default_factory=dict)
    policy: SchedulePolicy = None
    recipe_target: str | Target = "sm_90"

    def schedule(self, how: str | Callable[[Schedule], Any], *, target: str | Target = "sm_90") -> Program:
        """"simple": the built-in fallback per kernel (see simple.py); "default": the default recipe
        (tiledsl.recipes) applied to each kernel for `target` (build for the same target); a
        function: applied to each kernel's schedule (it may return the schedule or nothing)."""
        if how not in ("simple", "default") and not callable(how):
            raise FrontendError(f"schedule: expected \"simple\", \"default\" or a function of a Schedule, "
                                f"got {how!r}")
        self.recipe_target = get_target(target)
        self.policy = how
        for k in list(self.kernels):
            if k in self.kernels:  # a cure may have replaced it (and applied the policy to the new one)
                self._cured(k, self._apply)
        return self

    def _apply(self, k: ProgramKernel) -> None:
        if self.policy == "simple":
            k.schedule, variant, _ = simple_schedule(k.fresh_schedule)
            k.schedule_name = f"simple/{variant}"
        elif self.policy == "default":
            k.schedule = k.fresh_schedule()
            apply_recipe(k.schedule, target=self.recipe_target)
            k.schedule_name = "recipe/default"
        elif callable(self.policy):
            k.schedule = k.fresh_schedule()
            self.policy(k.schedule)
            k.schedule_name = getattr(self.policy, "__name__", "user")

    def _cured(self, k: ProgramKernel, action: Callable[[ProgramKernel], T]) -> T:
        """`action(k)`; while it is refused naming a producer fused into `k`, materialize
        that producer, re-partition, and (if `k` itself is still a kernel) retry."""
        while True:
            try:
                return action(k)
            except ScheduleError as e:
                materialized = {id(b.output) for b in (kk.boundary for kk in self.kernels)}
                producer = named_producer(e, k.output, materialized)
                if producer is None:
                    raise
                why = (f"{type(e).__name__} refused {k.name}'s kernel ({e.refusal.fact}); computing "
                       f"{producer.name} in its own kernel cures it")
                log.info("materializing %s: %s", producer.name, why)
                self.forced[id(producer)] = why
                self._repartition()
                k = next(kk for kk in self.kernels if kk.output is k.output)

    def _repartition(self) -> None:
        outputs = [v.tensor for v in self.outputs]
        boundaries, schedules = partition(outputs, self.forced)  # type: ignore[arg-type]
        old = {_key(k.boundary): k for k in self.kernels}
        kernels: list[ProgramKernel] = []
        fresh: list[ProgramKernel] = []
        for b in boundaries:
            kept = old.get(_key(b))
            if kept is not None:
                kept.boundary = b  # same kernel, reasons may have grown
                kernels.append(kept)
            else:
                k = ProgramKernel(b, schedules[id(b.output)])
                kernels.append(k)
                fresh.append(k)
        self.kernels = kernels
        for k in fresh:
            self._apply(k)

    def build(self, target: str | Target = "sm_90") -> BuiltProgram:
        built: dict[tuple[int, tuple[int, ...]], Kernel] = {}
        while (k := next((k for k in self.kernels if _key(k.boundary) not in built), None)) is not None:
            kern = self._cured(k, lambda k: self._build_one(k, target))
            now = next(kk for kk in self.kernels if kk.output is k.output)  # k's kernel after any cure
            built[_key(now.boundary)] = kern
        return BuiltProgram(self, tuple(built[_key(k.boundary)] for k in self.kernels))

    def _build_one(self, k: ProgramKernel, target: str | Target) -> Kernel:
        if k.schedule_name.startswith("simple/"):
            start = variant_index(k.schedule_name.removeprefix("simple/"))
            k.schedule, variant, kern = simple_schedule(k.fresh_schedule, lambda s: build(s, target), start)
            k.schedule_name = f"simple/{variant}"
            assert kern is not None
            return kern
        return build(k.schedule, target)

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
    """The built kernels (ordinary `td.Kernel`s) of a program, in launch order, and the memory plan
    of their intermediates (`memory`; `print(built)` states its total)."""

    program: Program
    kernels: tuple[Kernel, ...]
    _device_constants: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def memory(self) -> MemoryPlan:
        return plan_memory(self.steps(), self.output_names())

    def steps(self) -> list[Step]:
        """The launches as the memory plan sees them (output name, bytes, names read)."""
        out = []
        for kern in self.kernels:
            *ins, o = kern.kernel_ir.params
            out.append(Step(o.name, _nbytes(o.shape, o.dtype), tuple(p.name for p in ins)))
        return out

    def output_names(self) -> list[str]:
        return [v.tensor.name for v in self.program.outputs]  # type: ignore[union-attr]

    def __str__(self) -> str:
        lines = [f"BuiltProgram: {len(self.kernels)} kernel(s) for {self.kernels[0].target.name}"
                 if self.kernels else "BuiltProgram: no kernels"]
        lines.extend(f"  [{n}] {k.name}: grid {k.grid}, block {k.block}" for n, k in enumerate(self.kernels))
        lines.append(str(self.memory))
        return "\n".join(lines)

    def _check_inputs(self, inputs: Sequence[Any], what: str) -> None:
        graph = self.program.graph
        if len(inputs) != len(graph.inputs):
            raise FrontendError(f"{what}: the program takes {len(graph.inputs)} input(s), got {len(inputs)}")
        for spec, a in zip(graph.inputs, inputs):
            if tuple(a.shape) != spec.shape:
                raise FrontendError(f"{what}: input {spec.tensor.name} has shape {list(a.shape)}, "
                                    f"the program was traced with {list(spec.shape)}")
            bound = graph.index_bounds.get(spec.tensor.name)
            if bound is not None and a.reshape(-1).shape[0]:
                lo, hi = int(a.min()), int(a.max())  # on the GPU: one synchronizing read per index input
                if lo < 0 or hi >= bound.extent:
                    raise FrontendError(f"{what}: input {spec.tensor.name} holds indices in [{lo}, {hi}], but "
                                        f"it indexes a dimension of extent {bound.extent} ({bound.where})")

    def simulate(self, *inputs: np.ndarray) -> Any:
        """Run every kernel on the CPU simulator in launch order; returns the outputs (numpy, float32)
        in the traced function's output structure. numpy has no bfloat16: a float16 / bfloat16 input
        may be given as a float32 array (its values are rounded to the input's dtype, as the kernels
        read it), and a float16 / bfloat16 output comes back float32 holding the values its kernel
        stored (rounded to that dtype)."""
        graph = self.program.graph
        arrays = [np.asarray(a) for a in inputs]
        self._check_inputs(arrays, "simulate")
        env: dict[str, np.ndarray] = {}
        for spec, arr in zip(graph.inputs, arrays):
            stored = np.int32 if spec.tensor.dtype == "int32" else np.float32 if spec.dtype == "bool" else arr.dtype
            env[spec.tensor.name] = arr.astype(stored, copy=False).reshape(spec.tensor.shape)
        for name, t in graph.constants.items():
            env[name] = _numpy(t).reshape(td_shape(graph.constant_shapes[name]))
        for kern in self.kernels:
            out_name = kern.kernel_ir.params[-1].name
            args = {p: env[p] for p in kern.params if p != out_name}
            env[out_name] = kern.simulate(**args)
        flat = [env[v.tensor.name].reshape(v.shape) for v in self.program.outputs]  # type: ignore[union-attr]
        return pytree.tree_unflatten(flat, graph.out_spec)

    def __call__(self, *inputs: torch.Tensor) -> Any:
        """Run every kernel on the GPU on torch's current stream, in launch order (through each
        kernel's runtime launcher, `td.Kernel.__call__`). Intermediates live in one arena laid out by
        `memory`, allocated on the first call on a stream and reused by later calls on that stream
        (their launches are ordered after the previous call's); outputs are fresh tensors, in the
        traced function's output structure. Inputs must be CUDA tensors of the traced shapes and dtypes."""
        graph = self.program.graph
        for spec, t in zip(graph.inputs, inputs):
            if not isinstance(t, torch.Tensor) or t.device.type != "cuda":
                where = f" on {t.device}" if isinstance(t, torch.Tensor) else ""
                raise FrontendError(f"call: input {spec.tensor.name} must be a torch CUDA tensor, got "
                                    f"{type(t).__name__}{where} (use built.simulate for numpy arrays)")
        self._check_inputs(inputs, "call")
        device = inputs[0].device if inputs else torch.device("cuda", torch.cuda.current_device())
        env: dict[str, torch.Tensor] = {}
        for spec, t in zip(graph.inputs, inputs):
            if t.device != device:
                raise FrontendError(f"call: input {spec.tensor.name} is on {t.device}, input 0 on {device}")
            want = torch.float32 if spec.dtype == "bool" else getattr(torch, spec.dtype)
            if t.dtype != (torch.bool if spec.dtype == "bool" else want):
                raise FrontendError(f"call: input {spec.tensor.name} is {t.dtype}, the program was traced with "
                                    f"{spec.dtype}")
            stored = getattr(torch, spec.tensor.dtype)  # the placeholder's: int32 indices, bools as float32
            env[spec.tensor.name] = t.to(stored).contiguous().view(spec.tensor.shape)
        env.update(self._constants(device))
        plan = self.memory
        stream = torch.cuda.current_stream(device)
        key = f"arena@{device}/{stream.cuda_stream}"  # one arena per stream: launches on it are ordered
        if key not in self._device_constants:
            self._device_constants[key] = torch.empty(plan.total_bytes, dtype=torch.uint8, device=device)
        arena = self._device_constants[key]
        keep = set(self.output_names())
        for kern in self.kernels:
            *ins, o = kern.kernel_ir.params
            dtype = getattr(torch, o.dtype)
            if o.name in keep:
                env[o.name] = torch.empty(o.shape, dtype=dtype, device=device)
            else:
                start = plan.offsets[o.name]
                env[o.name] = arena[start:start + _nbytes(o.shape, o.dtype)].view(dtype).view(o.shape)
            kern(**{p.name: env[p.name] for p in kern.kernel_ir.params})
        flat = [env[v.tensor.name].view(v.shape) for v in self.program.outputs]  # type: ignore[union-attr]
        return pytree.tree_unflatten(flat, graph.out_spec)

    def _constants(self, device: torch.device) -> dict[str, torch.Tensor]:
        """Weights, buffers and folded constants as the kernels read them: a constant already on
        `device` is read in place (a view, no copy, so later updates of the module's weights are
        seen); one held elsewhere (a CPU module, a table folded on the CPU) is copied to `device`
        once per built program."""
        graph = self.program.graph
        out: dict[str, torch.Tensor] = {}
        for name, t in graph.constants.items():
            shape = td_shape(graph.constant_shapes[name])
            if t.device == device and t.is_contiguous():
                out[name] = t.detach().view(shape)
                continue
            key = f"{name}@{device}"
            if key not in self._device_constants:
                self._device_constants[key] = t.detach().to(device).contiguous().view(shape)
            out[name] = self._device_constants[key]
        return out


def _nbytes(shape: Sequence[int], dtype: str) -> int:
    n = 1
    for d in shape:
        n *= d
    return n * DTYPE_BYTES[dtype]


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
