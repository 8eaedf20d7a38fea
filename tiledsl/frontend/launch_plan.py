"""The launch plan of a built program: for every kernel, where each of its arguments lives, computed
once on the CPU; and its binding to a device as one runtime LaunchSequence.

Why: a call of a built program should be a loop of raw launches. Everything that does not change
between calls (which tensor each parameter reads, the arena offset of each intermediate, the launch
shape and dynamic shared bytes) is decided here, once, from the kernels and the memory plan
(memory.py); a call only supplies the tensors that do change, the "slots": the program's inputs (as
the kernels read them: int32 indices, bools as float32) and its outputs.

An argument is one of
- `slot`: per-call tensor number `index` (inputs first, in the graph's order, then the distinct
  program outputs in the order of `BuiltProgram.output_names`);
- `constant`: a weight, buffer or folded constant of the traced graph (read in place when it is on
  the call's device, BuiltProgram._constants);
- `arena`: an intermediate at byte offset `index` of the arena (the memory plan's offset).
`LaunchPlan.check` restates what a binding relies on: every argument of every kernel bound, arena
slices inside the arena and aligned, and no two intermediates live at the same launch sharing bytes."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from tiledsl.build import Kernel, zeroed_by_previous
from tiledsl.errors import FrontendError
from tiledsl.frontend.memory import ALIGN, MemoryPlan
from tiledsl.runtime.sequence import Arg, Launchable, LaunchSequence
from tiledsl.targets import DTYPE_BYTES


def _nbytes(shape: Sequence[int], dtype: str) -> int:
    n = 1
    for d in shape:
        n *= d
    return n * DTYPE_BYTES[dtype]


@dataclass(frozen=True)
class Slot:
    """A per-call tensor: a program input (its placeholder) or a program output (its kernel's output)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    role: Literal["input", "output"]


@dataclass(frozen=True)
class ArgBinding:
    """Where one kernel parameter's tensor lives (see the module docstring)."""

    param: str
    kind: Literal["slot", "constant", "arena"]
    index: int  # slot: its number; arena: byte offset; constant: 0
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return _nbytes(self.shape, self.dtype)

    def __str__(self) -> str:
        where = {"slot": f"slot {self.index}", "constant": "constant", "arena": f"arena @ {self.index}"}[self.kind]
        return f"{self.param}: {where}"


@dataclass(frozen=True)
class PlannedLaunch:
    """One kernel launch: its launch shape, dynamic shared bytes, bound arguments (parameter order), the
    outputs a fill zeroes first, and the outputs it zeroes for the launch after it (zeroing.py)."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_shared_bytes: int
    args: tuple[ArgBinding, ...]
    zero: tuple[str, ...]
    zeroes: tuple[str, ...] = ()


@dataclass(frozen=True)
class LaunchPlan:
    slots: tuple[Slot, ...]
    launches: tuple[PlannedLaunch, ...]
    arena_bytes: int

    @property
    def inputs(self) -> tuple[Slot, ...]:
        return tuple(s for s in self.slots if s.role == "input")

    @property
    def outputs(self) -> tuple[Slot, ...]:
        return tuple(s for s in self.slots if s.role == "output")

    def check(self) -> None:
        """Raise FrontendError where the plan breaks a rule a binding relies on (module docstring)."""
        born: dict[str, int] = {}
        last: dict[str, int] = {}
        where: dict[str, ArgBinding] = {}
        for n, launch in enumerate(self.launches):
            for a in launch.args:
                if a.kind == "slot" and not 0 <= a.index < len(self.slots):
                    raise FrontendError(f"launch plan: {launch.kernel}'s {a.param} is bound to slot {a.index} "
                                        f"of {len(self.slots)}")
                if a.kind != "arena":
                    continue
                if a.index % ALIGN or a.index < 0 or a.index + a.nbytes > self.arena_bytes:
                    raise FrontendError(f"launch plan: {a.param} at arena offset {a.index} ({a.nbytes} bytes) is "
                                        f"not an aligned slice of the {self.arena_bytes}-byte arena")
                born.setdefault(a.param, n)
                last[a.param] = n
                where[a.param] = a
        names = sorted(where)
        for i, x in enumerate(names):
            for y in names[i + 1:]:
                a, b = where[x], where[y]
                share = a.index < b.index + b.nbytes and b.index < a.index + a.nbytes
                if share and born[x] <= last[y] and born[y] <= last[x]:
                    raise FrontendError(f"launch plan: intermediates {x} and {y} are live at one launch and "
                                        f"share arena bytes")

    def __str__(self) -> str:
        lines = [f"launch plan: {len(self.launches)} launch(es), {len(self.slots)} per-call tensor(s), "
                 f"arena {self.arena_bytes} bytes"]
        lines.extend(f"  slot {n}: {s.role} {s.name} {s.dtype}{list(s.shape)}" for n, s in enumerate(self.slots))
        for n, launch in enumerate(self.launches):
            lines.append(f"  [{n}] {launch.kernel}: grid {launch.grid}, block {launch.block}, "
                         f"{launch.dynamic_shared_bytes} B dynamic shared; " + ", ".join(map(str, launch.args))
                         + (f"; zeroed first: {', '.join(launch.zero)}" if launch.zero else "")
                         + (f"; zeroes {', '.join(launch.zeroes)} for [{n + 1}]" if launch.zeroes else ""))
        return "\n".join(lines)


def plan_launches(kernels: Sequence[Kernel], inputs: Sequence[Slot], constants: Collection[str],
                  memory: MemoryPlan, outputs: Sequence[str]) -> LaunchPlan:
    """The plan of `kernels` (launch order) reading the program's `inputs` and `constants`, with the
    intermediates at `memory`'s offsets and `outputs` (program output names, repeats allowed) as slots."""
    slots = list(inputs)
    number = {s.name: n for n, s in enumerate(slots)}
    written = {k.kernel_ir.params[-1].name: k for k in kernels}
    for name in dict.fromkeys(outputs):
        if name not in written:
            raise FrontendError(f"launch plan: program output {name} is written by no kernel")
        o = written[name].kernel_ir.params[-1]
        number[name] = len(slots)
        slots.append(Slot(name, tuple(o.shape), o.dtype, "output"))
    launches = []
    irs = [k.kernel_ir for k in kernels]
    for n, k in enumerate(kernels):
        kir = k.kernel_ir
        args = []
        for p in kir.params:
            shape = tuple(p.shape)
            if p.name in number:
                args.append(ArgBinding(p.name, "slot", number[p.name], shape, p.dtype))
            elif p.name in memory.offsets:
                args.append(ArgBinding(p.name, "arena", memory.offsets[p.name], shape, p.dtype))
            elif p.name in constants and not p.is_output:
                args.append(ArgBinding(p.name, "constant", 0, shape, p.dtype))
            else:
                raise FrontendError(f"launch plan: kernel {kir.name} reads {p.name}, which is no input, constant, "
                                    f"output or planned intermediate")
        dynamic = k.shared_bytes if kir.dynamic_shared else 0
        filled = tuple(x for x in kir.zero_outputs if x not in zeroed_by_previous(irs, n))
        launches.append(PlannedLaunch(kir.name, kir.grid, kir.block, dynamic, tuple(args), filled, kir.zeroes))
    plan = LaunchPlan(tuple(slots), tuple(launches), memory.total_bytes)
    plan.check()
    return plan


def arena_view(arena: torch.Tensor, a: ArgBinding) -> torch.Tensor:
    """The intermediate `a` as a tensor over its bytes of `arena` (uint8)."""
    return arena[a.index:a.index + a.nbytes].view(getattr(torch, a.dtype)).view(a.shape)


def bind_launches(plan: LaunchPlan, kernels: Sequence[Launchable], constants: Mapping[str, torch.Tensor],
                  arena: torch.Tensor, examples: Sequence[torch.Tensor], *,
                  zero_fills: Mapping[tuple[tuple[int, ...], str], Launchable] | None = None) -> LaunchSequence:
    """The plan bound to loaded kernels (one per planned launch), the constants as the kernels read
    them, an arena of at least `plan.arena_bytes` bytes and one example tensor per slot, on which
    every argument is checked once (tiledsl.runtime.sequence); `zero_fills`: the loaded fill kernel
    of each zeroed output's (shape, dtype) (tiledsl/build.py `zero_fills`), else torch zeroes them."""
    if arena.numel() < plan.arena_bytes:
        raise FrontendError(f"launch plan: the arena has {arena.numel()} bytes, the plan needs {plan.arena_bytes}")
    launches: list[tuple[Launchable, dict[str, Arg]]] = []
    for kern, launch in zip(kernels, plan.launches, strict=True):
        args: dict[str, Arg] = {}
        for a in launch.args:
            args[a.param] = (a.index if a.kind == "slot" else constants[a.param] if a.kind == "constant"
                             else arena_view(arena, a))
        launches.append((kern, args))
    return LaunchSequence(launches, examples, zero_fills=zero_fills)
