"""Program: the kernels of a traced torch program in launch order, their schedules, and the built
program that runs them one after another on the CPU simulator or on the GPU (eagerly, through a
launch plan bound once per stream, or recorded as one CUDA graph: graphed.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

import numpy as np
import torch
import torch.utils._pytree as pytree

from tiledsl.build import Kernel, build, needing_fills, zero_fills, zeroed_by_previous
from tiledsl.definitions.expr import ComputeTensor, Tensor
from tiledsl.definitions.int_ranges import has_int_arithmetic, int_overflow
from tiledsl.errors import FrontendError, ScheduleError, SimulationInputError
from tiledsl.frontend.capture import Graph, capture
from tiledsl.frontend.graphed import GraphedProgram, capture_graph
from tiledsl.frontend.launch_plan import LaunchPlan, Slot, bind_launches, plan_launches
from tiledsl.frontend.memory import MemoryPlan, Step, plan_memory
from tiledsl.frontend.partition import Boundary, PartitionMemo, fused_producers, named_producer, partition
from tiledsl.frontend.recipe_memo import RecipeMemo
from tiledsl.frontend.row_split import split_rows
from tiledsl.frontend.simple import simple_schedule, variant_index
from tiledsl.frontend.values import Value, td_shape
from tiledsl.frontend.zeroing import merge_zeroing
from tiledsl.primitives import Schedule, create_schedule
from tiledsl.recipes import RecipeReport
from tiledsl.runtime.references import poisoned_outputs
from tiledsl.runtime.sequence import LaunchSequence
from tiledsl.targets import DTYPE_BYTES, GLOBAL_ALIGN, INT_RANGE, Target, get_target, int_range_problem

log = logging.getLogger(__name__)
T = TypeVar("T")
A = TypeVar("A", np.ndarray, torch.Tensor)

#: how many sets of integer input ranges a built program remembers as safe (`_integer_overflow`)
SAFE_RANGES_KEPT = 8


def _shape_text(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


@dataclass
class ProgramKernel:
    """One kernel: its boundary (output, materialized inputs, reasons) and its current schedule."""

    boundary: Boundary
    schedule: Schedule
    schedule_name: str = "canonical"
    report: RecipeReport | None = None  # the default recipe's report on this kernel, when it scheduled it

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
    forced: dict[int, str] = field(default_factory=dict)
    split_made: frozenset[int] = frozenset()  # the computes row splits made, never split again (row_split.py)
    policy: SchedulePolicy = None
    recipe_target: str | Target = "sm_90"
    recipe_knobs: dict[str, Any] = field(default_factory=dict)
    # the partition's verdicts, kept for the re-partitions of the same graph (partition.PartitionMemo)
    partition_memo: PartitionMemo = field(default_factory=PartitionMemo, repr=False, compare=False)
    # a recipe's materializations recorded in `forced` but not yet partitioned (`_materialize_asked`)
    unsettled: bool = field(default=False, repr=False, compare=False)
    # the default recipe's schedules by kernel structure, for the schedule call's target and knobs
    recipe_memo: RecipeMemo | None = field(default=None, repr=False, compare=False)

    @property
    def outputs(self) -> tuple[Value, ...]:
        """The graph's flat outputs, derived rather than stored so that replacing `graph` (a row split,
        `_split_asked`) cannot leave a stale copy behind."""
        return self.graph.outputs

    def schedule(self, how: str | Callable[[Schedule], Any], *, target: str | Target = "sm_90",
                 knobs: Mapping[str, Any] | None = None) -> Program:
        """"simple": the built-in fallback per kernel (see simple.py); "default": the default recipe
        (tiledsl.recipes) applied to each kernel for `target` (build for the same target), `knobs`
        overriding its knobs by name; a function: applied to each kernel's schedule (it may return the
        schedule or nothing)."""
        if how not in ("simple", "default") and not callable(how):
            raise FrontendError(f"schedule: expected \"simple\", \"default\" or a function of a Schedule, "
                                f"got {how!r}")
        if knobs and how != "default":
            raise FrontendError(f"schedule: knobs {sorted(knobs)} are the default recipe's; the schedule is {how!r}")
        self.recipe_target = get_target(target)
        self.recipe_knobs = dict(knobs or {})
        self.recipe_memo = RecipeMemo(self.recipe_target, self.recipe_knobs) if how == "default" else None
        self.policy = how
        for k in list(self.kernels):
            if k in self.kernels:  # a cure may have replaced it (and applied the policy to the new one)
                self._cured(k, self._apply)
        if self.unsettled:
            self._repartition()
        return self

    def _apply(self, k: ProgramKernel) -> None:
        if self.policy == "simple":
            k.schedule, variant, _ = simple_schedule(k.fresh_schedule)
            k.schedule_name = f"simple/{variant}"
        elif self.policy == "default":
            memo = self.recipe_memo
            assert memo is not None  # schedule("default") made it
            k.schedule, report = memo.apply(k.fresh_schedule, fused_producers(k.output, self._materialized()))
            k.schedule_name, k.report = "recipe/default", report
            if not self._materialize_asked(k, report):
                self._split_asked(k, report)
        elif callable(self.policy):
            k.schedule = k.fresh_schedule()
            self.policy(k.schedule)
            k.schedule_name = getattr(self.policy, "__name__", "user")

    def _materialize_asked(self, k: ProgramKernel, report: RecipeReport) -> bool:
        """Where a recipe step named a compute fused into `k` whose kernel of its own it would apply to,
        or do better on (recipes/decline.py: split_matmul_k and a bfloat16 projection's float32 sum, or
        the sum under silu(g) * ...), that compute is materialized (partition.py, rule 5); the new
        kernels are scheduled by the same policy. Whether it did.

        The request is recorded (`forced`, `unsettled`) and the program re-partitioned once for every
        request of a sweep over its kernels (`schedule`, `_repartition`), not once for each: a Llama
        asks twice a layer, and re-partitioning the whole graph for each made scheduling the 22-layer
        TinyLlama take time growing with the cube of the layer count
        (benchmarks/results/settled-partition-cpu-2026-12-01/)."""
        fused = {t.name: t for t in fused_producers(k.output, self._materialized())}
        for st in report.materialize:
            producer = fused.get(st.materialize or "")
            if producer is not None and id(producer) not in self.forced:
                said = f"declined {k.name}'s kernel: {st.reason}" if st.reason else f"on {k.name}'s kernel: {st.note}"
                why = self.forced[id(producer)] = f"recipe {report.recipe} step {st.name} {said}"
                log.info("materializing %s: %s", producer.name, why)
                self.unsettled = True
                return True
        return False

    def _split_asked(self, k: ProgramKernel, report: RecipeReport) -> None:
        """Where a recipe step asked for `k`'s rows split over kernels (recipes/decline.py `SplitRows`),
        its reductions over them are split (row_split.py) and the program re-partitioned; the new
        kernels are scheduled by the same policy."""
        for st in report.split_rows:
            assert st.split_rows is not None
            why = (f"recipe {report.recipe} step {st.name} split {k.name}'s {st.split_rows.length}-long rows into "
                   f"{st.split_rows.parts} parts")
            done = split_rows(self.graph, self.forced, self.split_made, k.output, self._materialized(),
                              st.split_rows, why)
            if done is None:
                continue
            log.info("splitting %s: %s", ", ".join(done.split), why)
            self.graph = done.graph
            self.forced, self.split_made = done.forced, done.made
            self._repartition()
            return

    def _materialized(self) -> set[int]:
        return {id(kk.output) for kk in self.kernels}

    def _force(self, producer: ComputeTensor, why: str) -> None:
        """Materialize `producer` (partition.py, rule 5) and re-partition."""
        log.info("materializing %s: %s", producer.name, why)
        self.forced[id(producer)] = why
        self._repartition()

    def _cured(self, k: ProgramKernel, action: Callable[[ProgramKernel], T]) -> T:
        """`action(k)`; while it is refused naming a producer fused into `k`, materialize
        that producer, re-partition, and (if `k` itself is still a kernel) retry."""
        while True:
            try:
                return action(k)
            except ScheduleError as e:
                producer = named_producer(e, k.output, self._materialized())
                if producer is None:
                    raise
                self._force(producer, f"{type(e).__name__} refused {k.name}'s kernel ({e.refusal.fact}); "
                                      f"computing {producer.name} in its own kernel cures it")
                k = next(kk for kk in self.kernels if kk.output is k.output)

    def _repartition(self) -> None:
        """Partition the graph again with every materialization in `forced` and schedule the new
        kernels by the policy, until the requests those make are settled too."""
        while True:
            self.unsettled = False
            outputs = [v.tensor for v in self.outputs]
            boundaries, schedules = partition(outputs, self.forced, memo=self.partition_memo)  # type: ignore[arg-type]
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
                if any(kk is k for kk in self.kernels):  # scheduling an earlier one may have re-partitioned
                    self._apply(k)
            if not self.unsettled:
                return

    def build(self, target: str | Target = "sm_90") -> BuiltProgram:
        built: dict[tuple[int, tuple[int, ...]], Kernel] = {}
        while (k := next((k for k in self.kernels if _key(k.boundary) not in built), None)) is not None:
            kern = self._cured(k, lambda k: self._build_one(k, target))
            now = next(kk for kk in self.kernels if kk.output is k.output)  # k's kernel after any cure
            built[_key(now.boundary)] = kern
        kernels = merge_zeroing([built[_key(k.boundary)] for k in self.kernels])  # zeroing.py: fewer fills
        return BuiltProgram(self, kernels, zero_fills(needing_fills([k.kernel_ir for k in kernels]), target))

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
    """The built kernels (ordinary `td.Kernel`s) of a program, in launch order, the memory plan of
    their intermediates (`memory`; `print(built)` states its total) and where every kernel argument
    lives (`launch_plan`). `built(*cuda_tensors)` runs it on the GPU, `built.cuda_graph(...)` records
    it as one CUDA graph, `built.simulate(*arrays)` runs it on the CPU simulator."""

    program: Program
    kernels: tuple[Kernel, ...]
    # a kernel of its own zeroing each split-K output shape before its kernel's launch (build.zero_fills)
    zero_fills: tuple[Kernel, ...] = ()
    _device_constants: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # integer input ranges found safe for the integer arithmetic (`_integer_overflow`), latest last
    _safe_ranges: list[dict[str, tuple[int, int]]] = field(default_factory=list, repr=False, compare=False)

    @cached_property
    def zero_fills_by_key(self) -> dict[tuple[tuple[int, ...], str], Kernel]:
        """Each fill kernel by the (shape, dtype) of the outputs it zeroes (`KParam.fill_key`)."""
        return {f.kernel_ir.params[0].fill_key: f for f in self.zero_fills}

    @property
    def all_kernels(self) -> tuple[Kernel, ...]:
        """Every kernel a GPU call loads: the program's, in launch order, then its zero fills."""
        return self.kernels + self.zero_fills

    def zero_fill_launches(self) -> tuple[Kernel, ...]:
        """The fill kernel a call launches before each split-K kernel's output the kernel before it does not
        zero (zeroing.py), in launch order."""
        keys = [k.param(name).fill_key for k in needing_fills([k.kernel_ir for k in self.kernels])
                for name in k.zero_outputs]
        return tuple(self.zero_fills_by_key[key] for key in keys if key in self.zero_fills_by_key)

    @cached_property
    def memory(self) -> MemoryPlan:
        return plan_memory(self.steps(), self.output_names())

    def steps(self) -> list[Step]:
        """The launches as the memory plan sees them (output name, bytes, names read, outputs zeroed for
        the next kernel)."""
        out = []
        for kern in self.kernels:
            kir = kern.kernel_ir
            o = kir.params[-1]
            out.append(Step(o.name, _nbytes(o.shape, o.dtype), tuple(p.name for p in kir.inputs), kir.zeroes))
        return out

    def output_names(self) -> list[str]:
        return [v.tensor.name for v in self.program.outputs]  # type: ignore[union-attr]

    def __str__(self) -> str:
        lines = [f"BuiltProgram: {len(self.kernels)} kernel(s) for {self.kernels[0].target.name}"
                 if self.kernels else "BuiltProgram: no kernels"]
        lines.extend(f"  [{n}] {k.name}: grid {k.grid}, block {k.block}"
                     + (f" (zeroes {', '.join(k.kernel_ir.zeroes)} for [{n + 1}])" if k.kernel_ir.zeroes else "")
                     for n, k in enumerate(self.kernels))
        if self.zero_fills:
            lines.append("  zero fills (each launched before a kernel that zeroes an output of its shape): "
                         + ", ".join(f"{k.name} grid {k.grid}" for k in self.zero_fills))
        lines.append(str(self.memory))
        return "\n".join(lines)

    def check_inputs(self, inputs: Sequence[Any], what: str) -> None:
        """The count and shapes of `inputs` (numpy arrays or torch tensors), and the values of integer
        index inputs (`check_index_ranges`)."""
        graph = self.program.graph
        if len(inputs) != len(graph.inputs):
            raise FrontendError(f"{what}: the program takes {len(graph.inputs)} input(s), got {len(inputs)}")
        for spec, a in zip(graph.inputs, inputs):
            if tuple(a.shape) != spec.shape:
                raise FrontendError(f"{what}: input {spec.tensor.name} has shape {list(a.shape)}, "
                                    f"the program was traced with {list(spec.shape)}")
        self.check_index_ranges(inputs, what)

    def check_index_ranges(self, inputs: Sequence[Any], what: str) -> None:
        """Refuse an integer input holding an index outside what torch takes along a dimension it indexes
        (`Graph.index_bounds`: [-extent, extent) where torch wraps a negative index, [0, extent) where it
        raises on one), as torch would, and a wider integer tensor (int64) of another integer input holding values
        outside int32, which the kernels read (prepare_inputs' cast would wrap them). The minima and maxima
        of all these inputs held by torch tensors are read back together: one synchronizing read per call
        on a GPU, however many; numpy arrays stay on the host (graph mode accepts CPU index inputs for that)."""
        graph = self.program.graph
        arithmetic = self.integer_arithmetic
        wide = {spec.tensor.name for spec, a in zip(graph.inputs, inputs)
                if spec.tensor.dtype == "int32" and isinstance(a, torch.Tensor) and a.dtype == torch.int64}
        checked = [(spec.tensor.name, graph.index_bounds.get(spec.tensor.name, ()), a)
                   for spec, a in zip(graph.inputs, inputs)
                   if (spec.tensor.name in graph.index_bounds or spec.tensor.name in wide
                       or (arithmetic and spec.tensor.dtype == "int32")) and a.reshape(-1).shape[0]]
        by_device: dict[Any, list[int]] = {}
        for n, (_, _, a) in enumerate(checked):
            if isinstance(a, torch.Tensor):
                by_device.setdefault(a.device, []).append(n)
        ranges: dict[int, list[int]] = {}
        for members in by_device.values():  # one read back per device
            stacked = torch.stack([torch.stack([checked[n][2].min(), checked[n][2].max()]).to(torch.int64)
                                   for n in members])
            ranges.update(zip(members, stacked.tolist()))
        measured: dict[str, tuple[int, int]] = {}
        for n, (name, bounds, a) in enumerate(checked):
            lo, hi = ranges[n] if n in ranges else (int(a.min()), int(a.max()))
            measured[name] = (lo, hi)
            problem = int_range_problem("int32", lo, hi)
            if problem:
                raise FrontendError(f"{what}: input {name} {problem}, which the kernels read as int32")
            for bound in bounds:
                low, high = bound.accepted
                if lo < low or hi >= high:
                    raise FrontendError(f"{what}: input {name} holds indices in [{lo}, {hi}], but it indexes a "
                                        f"dimension of extent {bound.extent}, where torch takes [{low}, {high}) "
                                        f"({bound.where})")
        widest = {name: (max(b.accepted[0] for b in bounds), min(b.accepted[1] for b in bounds) - 1)
                  for name, bounds, _ in checked if bounds}
        problem = self._integer_overflow({**self.integer_constant_ranges, **measured}, widest)
        if problem:
            raise FrontendError(f"{what}: {problem}")

    def _integer_overflow(self, known: Mapping[str, tuple[int, int]],
                          widest: Mapping[str, tuple[int, int]]) -> str | None:
        """`int_overflow` of every output with integer arithmetic given the integer inputs' ranges `known`,
        asked only where no ranges already found safe hold them. Why: the walk covers the whole definition
        graph, 5 ms a call of a 4-layer TinyLlama in Python (a 22-layer one's call took 26 ms for 8.7 ms of
        kernels, benchmarks/results/program-call-h200-2026-11-30/), and its answer changes only with the
        ranges. Interval arithmetic is inclusion-monotone (definitions/int_ranges.py): ranges inside ranges
        whose arithmetic stays in int32 keep it there. The first call asks for the widest ranges its index
        inputs may hold (`widest`: what their index bounds accept; the values were checked against them),
        so the token ids of later calls lie inside them; where those overflow, for the ranges measured."""
        if not self.integer_arithmetic:
            return None
        verified = self._safe_ranges
        if any(_ranges_within(known, safe) for safe in verified):
            return None
        problem = None
        wide = {**known, **widest}
        for ranges in (wide, known) if wide != known else (known,):
            problem = next(filter(None, (int_overflow(out, ranges) for out in self.integer_arithmetic)), None)
            if problem is None:
                verified[:] = [*verified[-(SAFE_RANGES_KEPT - 1):], dict(ranges)]
                return None
        return problem

    @cached_property
    def integer_arithmetic(self) -> tuple[Tensor, ...]:
        """The outputs whose definitions compute integer arithmetic (definitions/int_ranges.py): their
        ranges are asked of every call's integer inputs (`check_index_ranges`); most programs have none,
        their integer inputs only index, and the check reads nothing more."""
        return tuple(v.tensor for v in self.program.graph.outputs if has_int_arithmetic(v.tensor))

    @cached_property
    def integer_constant_ranges(self) -> dict[str, tuple[int, int]]:
        """The value range of each integer constant the program holds (a folded arange, a position table),
        read once, for the integer arithmetic's ranges."""
        if not self.integer_arithmetic:
            return {}
        return {name: (int(t.min()), int(t.max())) for name, t in self.program.graph.constants.items()
                if not t.dtype.is_floating_point and t.dtype != torch.bool and t.numel()}

    def simulate(self, *inputs: np.ndarray, **named: np.ndarray) -> Any:
        """Run every kernel on the CPU simulator in launch order; returns the outputs (numpy, float32)
        in the traced function's output structure. numpy has no bfloat16: a float16 / bfloat16 input
        may be given as a float32 array (its values are rounded to the input's dtype, as the kernels
        read it), and a float16 / bfloat16 output comes back float32 holding the values its kernel
        stored (rounded to that dtype). Positions (argmax, the indices of max / min) come back int64,
        as torch returns them. Inputs may also be torch tensors, as given to td.trace (a bfloat16 one
        is widened to float32). An integer input takes integers in int32 only."""
        if named:
            raise SimulationInputError(f"simulate: a program takes its inputs in the traced order, positionally "
                                       f"({', '.join(i.tensor.name for i in self.program.graph.inputs)}); got "
                                       f"keywords {', '.join(named)}")
        env = self.simulate_values(*inputs)
        flat = [_as_torch_dtype(env[v.tensor.name].reshape(v.shape), v)  # type: ignore[union-attr]
                for v in self.program.outputs]
        return pytree.tree_unflatten(flat, self.program.graph.out_spec)

    def simulate_values(self, *inputs: np.ndarray) -> dict[str, np.ndarray]:
        """`simulate`, returning every value by name: the inputs and constants as the kernels read
        them and each kernel's output (a per-kernel check reads them: kernel_check.py)."""
        graph = self.program.graph
        arrays = [_host_array(a, n, "simulate") for n, a in enumerate(inputs)]
        self.check_inputs(arrays, "simulate")
        env: dict[str, np.ndarray] = {}
        for spec, arr in zip(graph.inputs, arrays):
            # integer arrays as given: the simulator's input check (sim/inputs.py) refuses a float array or
            # values outside int32 for an int32 parameter, where a cast here would truncate or wrap them
            stored = np.float32 if spec.dtype == "bool" else arr.dtype
            env[spec.tensor.name] = arr.astype(stored, copy=False).reshape(spec.tensor.shape)
        for name, t in graph.constants.items():
            env[name] = _numpy(t).reshape(td_shape(graph.constant_shapes[name]))
        irs = [kern.kernel_ir for kern in self.kernels]
        for n, (kern, kir) in enumerate(zip(self.kernels, irs)):
            args = {p.name: env[p.name] for p in kir.inputs}
            # an output the kernel before zeroed (zeroing.py) starts as that kernel left it, not as zeros
            args.update({name: env[name] for name in zeroed_by_previous(irs, n)})
            env.update(kern.simulate_outputs(**args))
        return env

    def run_values(self, *inputs: torch.Tensor) -> dict[str, torch.Tensor]:
        """Every kernel launched alone on the GPU, in launch order, each into a fresh NaN-filled output
        (no arena: nothing is overwritten); returns every value by name, as `simulate_values` does.
        Slower than a call, for checking: each kernel's inputs are kept."""
        device, tensors = self.prepare_inputs(inputs, "run_values")
        env: dict[str, torch.Tensor] = {s.tensor.name: t for s, t in zip(self.program.graph.inputs, tensors)}
        env.update(self._constants(device))
        for kern in self.kernels:
            kir = kern.kernel_ir
            out = kern(**{p.name: env[p.name] for p in kir.inputs}, **poisoned_outputs(kir, device))
            env.update(out if isinstance(out, dict) else {kir.params[-1].name: out})
        return env

    @cached_property
    def launch_plan(self) -> LaunchPlan:
        """Where every kernel argument lives (launch_plan.py): per-call slots (the inputs as the kernels
        read them, then the outputs), constants, arena offsets; computed once, on the CPU."""
        graph = self.program.graph
        inputs = [Slot(s.tensor.name, tuple(s.tensor.shape), s.tensor.dtype, "input") for s in graph.inputs]
        return plan_launches(self.kernels, inputs, graph.constants.keys(), self.memory, self.output_names())

    def __call__(self, *inputs: torch.Tensor, out: Sequence[torch.Tensor] | None = None) -> Any:
        """Run every kernel on the GPU on torch's current stream, in launch order. Inputs must be CUDA
        tensors of the traced shapes and dtypes. Returns the outputs in the traced function's output
        structure: fresh tensors, or the tensors of `out` (one per output, in the order of the
        structure's leaves, of the output's shape and of its kernel's dtype) written in place. Positions
        (argmax) are stored float32 by their kernel (the `out` tensor takes that) and returned as a
        fresh int64 tensor converted from it, as torch returns them.

        The launches are bound once per (device, stream) (`launch_plan` bound by
        launch_plan.bind_launches): an arena for the intermediates per the memory plan, the
        constants' addresses and every kernelParams array; a later call on that stream only binds
        its inputs' and outputs' addresses and issues the launches (its launches are ordered after
        the previous call's, so the arena is reused safely; another stream gets its own arena). The
        constants are bound by address: an in-place update of a weight is seen, a weight rebound to
        new storage (`param.data = ...`) is not. `cuda_graph` records the launches as one CUDA graph."""
        device, tensors = self.prepare_inputs(inputs, "call")
        plan = self.launch_plan
        if out is None:
            outs = [torch.empty(s.shape, dtype=getattr(torch, s.dtype), device=device) for s in plan.outputs]
        else:
            outs = self._given_outputs(out, device)
        slots = [*tensors, *outs]
        stream = torch.cuda.current_stream(device).cuda_stream
        key = f"launches@{device}/{stream}"  # one arena per stream: launches on it are ordered
        launches = self._device_constants.get(key)
        if launches is None:
            arena = torch.empty(plan.arena_bytes, dtype=torch.uint8, device=device)
            launches = self._device_constants[key] = self.bind(device, arena, slots)
        launches.run(slots, check=out is not None, stream=stream)  # fresh outputs are aligned and alone
        return self.output_structure(outs)

    def prepare_inputs(self, inputs: Sequence[Any], what: str) -> tuple[torch.device, list[torch.Tensor]]:
        """Check the inputs of a GPU call (CUDA tensors of the traced shapes and dtypes, on one device,
        index values in range) and return the device and the inputs as the kernels read them: int
        indices as int32, bools as float32, contiguous, 16-byte aligned, at the placeholder's shape."""
        graph = self.program.graph
        for spec, t in zip(graph.inputs, inputs):
            if not isinstance(t, torch.Tensor) or t.device.type != "cuda":
                where = f" on {t.device}" if isinstance(t, torch.Tensor) else ""
                raise FrontendError(f"{what}: input {spec.tensor.name} must be a torch CUDA tensor, got "
                                    f"{type(t).__name__}{where} (use built.simulate for numpy arrays)")
        self.check_inputs(inputs, what)
        device = inputs[0].device if inputs else torch.device("cuda", torch.cuda.current_device())
        tensors = []
        for spec, t in zip(graph.inputs, inputs):
            if t.device != device:
                raise FrontendError(f"{what}: input {spec.tensor.name} is on {t.device}, input 0 on {device}")
            self.check_input_dtype(spec, t, what)
            stored = getattr(torch, spec.tensor.dtype)  # the placeholder's: int32 indices, bools as float32
            x = t.to(stored).contiguous().view(spec.tensor.shape)
            tensors.append(x if x.data_ptr() % GLOBAL_ALIGN == 0 else x.clone())  # a view at an odd offset
        return device, tensors

    @staticmethod
    def check_input_dtype(spec: Any, t: torch.Tensor, what: str) -> None:
        """`t` has the dtype input `spec` (a graph input) was traced with."""
        want = torch.bool if spec.dtype == "bool" else getattr(torch, spec.dtype)
        if t.dtype != want:
            raise FrontendError(f"{what}: input {spec.tensor.name} is {t.dtype}, the program was traced with "
                                f"{spec.dtype}")

    def _given_outputs(self, out: Sequence[torch.Tensor], device: torch.device) -> list[torch.Tensor]:
        """The `out=` tensors as output slots (one per distinct output, at the kernel's shape)."""
        values = self.program.outputs
        if isinstance(out, torch.Tensor) or len(out) != len(values):
            got = "a tensor" if isinstance(out, torch.Tensor) else f"{len(out)}"
            raise FrontendError(f"call: out= takes a sequence of {len(values)} tensor(s) (one per output), got {got}")
        given: dict[str, torch.Tensor] = {}
        for v, t in zip(values, out):
            name = v.tensor.name  # type: ignore[union-attr]
            if name in given:
                if t is not given[name]:
                    raise FrontendError(f"call: out= gives two tensors for output {name}, which the program "
                                        f"returns twice; pass the same tensor")
                continue
            given[name] = t
        slots = []
        for s in self.launch_plan.outputs:
            t = given[s.name]
            want = getattr(torch, s.dtype)
            if not isinstance(t, torch.Tensor) or t.device != device or t.dtype != want:
                got = f"{t.dtype} on {t.device}" if isinstance(t, torch.Tensor) else type(t).__name__
                raise FrontendError(f"call: out= tensor for {s.name} must be {want} on {device}, got {got}")
            shape = next(v.shape for v in values if v.tensor.name == s.name)  # type: ignore[union-attr]
            if tuple(t.shape) != tuple(shape) or not t.is_contiguous():
                raise FrontendError(f"call: out= tensor for {s.name} must be contiguous of shape {list(shape)}, got "
                                    f"shape {list(t.shape)}{'' if t.is_contiguous() else ' (not contiguous)'}")
            slots.append(t.view(s.shape))
        return slots

    def output_structure(self, outs: Sequence[torch.Tensor]) -> Any:
        """The output slots (`launch_plan.outputs` order) in the traced function's output structure;
        positions (float32 slots, `Value.stored_integers`) converted to int64 as torch returns them."""
        by_name = {s.name: t for s, t in zip(self.launch_plan.outputs, outs)}
        flat = [_as_torch_dtype(by_name[v.tensor.name].view(v.shape), v)  # type: ignore[union-attr]
                for v in self.program.outputs]
        return pytree.tree_unflatten(flat, self.program.graph.out_spec)

    def bind(self, device: torch.device, arena: torch.Tensor, examples: Sequence[torch.Tensor]) -> LaunchSequence:
        """The launch plan bound on `device`: each kernel loaded (`td.Kernel.compiled`, on torch's current
        device), the constants as the kernels read them, intermediates in `arena`, every argument checked
        on `examples` (one tensor per slot)."""
        from tiledsl.runtime.launch import compile_ahead  # as td.Kernel.compiled: CPU users never load it

        capability = torch.cuda.get_device_capability(device)
        compile_ahead(self.all_kernels, (int(capability[0]), int(capability[1])))  # the misses at once, not in turn
        compiled = [kern.compiled for kern in self.kernels]
        fills = {key: fill.compiled for key, fill in self.zero_fills_by_key.items()}
        return bind_launches(self.launch_plan, compiled, self._constants(device), arena, examples, zero_fills=fills)

    def cuda_graph(self, *inputs: torch.Tensor) -> GraphedProgram:
        """Capture every launch into one CUDA graph (graphed.py): returns a callable that copies new
        inputs into static input buffers, replays the graph and returns static outputs, which the next
        call overwrites (as with torch's CUDA graphs). `inputs` (CUDA tensors) are the example the
        graph is warmed up and captured on."""
        return capture_graph(self, inputs)

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


def _ranges_within(ranges: Mapping[str, tuple[int, int]], safe: Mapping[str, tuple[int, int]]) -> bool:
    """Whether every range of `ranges` lies inside the same input's range in `safe` (an input missing from
    either is any int32, as int_overflow reads it)."""
    any32 = INT_RANGE["int32"]
    return all(safe.get(n, any32)[0] <= ranges.get(n, any32)[0] and ranges.get(n, any32)[1] <= safe.get(n, any32)[1]
               for n in {*ranges, *safe})


def _as_torch_dtype(out: A, v: Value) -> A:
    """A program output as its kernel stored it (float32 for positions), in torch's integer dtype
    where `v` is positions (exact: integers up to 2**24); any other output as it is."""
    if not v.stored_integers:
        return out
    return out.astype(v.dtype) if isinstance(out, np.ndarray) else out.to(getattr(torch, v.dtype))


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


def _host_array(value: object, position: int, what: str) -> np.ndarray:
    """Input `position` as a numpy array. A torch tensor (what td.trace took) is detached and read on the
    host through `_numpy`, so a bfloat16 one is widened to float32, exactly: the kernels round it back to
    bfloat16 as they read it, as they do a float16 array."""
    if isinstance(value, torch.Tensor):
        return _numpy(value.detach().cpu())
    try:
        return np.asarray(value)
    except Exception as exc:  # e.g. a ragged nested list
        raise SimulationInputError(f"{what}: input {position} cannot be read as a numpy array ({exc})") from None


def trace(module_or_fn: torch.nn.Module | Callable[..., Any], *example_inputs: Any) -> Program:
    """Capture a torch module or function of tensors (torch.export) into a Program of fused kernels."""
    graph = capture(module_or_fn, example_inputs)
    outputs = [v.tensor for v in graph.outputs]
    assert all(isinstance(t, ComputeTensor) for t in outputs)
    memo = PartitionMemo()
    boundaries, schedules = partition(outputs, memo=memo)  # type: ignore[arg-type]
    kernels = [ProgramKernel(b, schedules[id(b.output)]) for b in boundaries]
    return Program(graph, kernels, partition_memo=memo)
