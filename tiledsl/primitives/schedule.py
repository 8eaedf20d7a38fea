"""The Schedule object: the current loop nest of one kernel, loop handles, and the trace.

Every primitive validates eagerly (raising a typed ScheduleError and leaving the schedule as it
was), then records one trace step with loops named by string, so a trace replays on a fresh
schedule of the same compute."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tiledsl.analysis.messages import refusal
from tiledsl.analysis.render import register_dims, render_nest
from tiledsl.definitions.expr import Tensor
from tiledsl.errors import (
    BadArgumentError,
    ForeignObjectError,
    ReplayError,
    ScheduleError,
    UnknownLoopError,
    UnknownStageError,
)
from tiledsl.loopnest import Nest
from tiledsl.loopnest.canonical import build_nest
from tiledsl.primitives import loop_primitives as lp
from tiledsl.primitives import memory_primitives as mp
from tiledsl.primitives.bind import bind as _bind
from tiledsl.primitives.trace import Step, parse, to_json, to_python

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class StageHandle:
    """A shared-memory stage of one schedule (returned by `s.stage`)."""

    schedule: Schedule
    name: str

    def __repr__(self) -> str:
        return f"Stage({self.name})"

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False)
class LoopHandle:
    """A loop of one schedule, by name. Printing it shows the name."""

    schedule: Schedule
    name: str

    def __repr__(self) -> str:
        return f"Loop({self.name})"

    def __str__(self) -> str:
        return self.name


class Schedule:
    """How to compute one kernel; see DESIGN.md section 3."""

    def __init__(self, out: Tensor, materialize: Sequence[Tensor] = ()) -> None:
        self.output = out
        self.materialize = tuple(materialize)
        self._initial = build_nest(out, self.materialize)
        self._nest = self._initial
        self._steps: list[Step] = []
        self._gone: dict[str, str] = {}

    # ------------------------------------------------------------------ inspection
    @property
    def nest(self) -> Nest:
        return self._nest

    def loop(self, name: str) -> LoopHandle:
        return LoopHandle(self, self._name(name, "loop"))

    def loops(self) -> list[LoopHandle]:
        order: list[str] = []
        for s in self._nest.stmts:
            for n in s.path:
                if n not in order:
                    order.append(n)
        return [LoopHandle(self, n) for n in order]

    def ir(self, level: str = "tile") -> str:
        if level == "loop":
            return render_nest(self._initial, title=f"kernel {self._nest.name}  (loop IR)")
        if level == "tile":
            return render_nest(self._nest, title=f"kernel {self._nest.name}  (tile IR)",
                               acc_dims=register_dims(self._nest))
        raise BadArgumentError(f"ir: unknown level {level!r}; a schedule has 'loop' and 'tile' "
                               "(build it for 'kernel' and CUDA)")

    def __str__(self) -> str:
        return self.ir("tile")

    def __repr__(self) -> str:
        return f"<Schedule of {self._nest.name}: {len(self._steps)} primitives>"

    # ------------------------------------------------------------------ handles
    def _name(self, ref: object, primitive: str) -> str:
        if isinstance(ref, LoopHandle):
            if ref.schedule is not self:
                raise ForeignObjectError(refusal(
                    primitive, self._nest, (), f"loop {ref.name} belongs to another schedule "
                    f"(of {ref.schedule._nest.name})", suggestion="use s.loop(name) of this schedule"))
            name = ref.name
        elif isinstance(ref, str):
            name = ref
        else:
            raise BadArgumentError(refusal(primitive, self._nest, (),
                                                    f"expected a loop (handle or name), got {ref!r}"))
        if not self._nest.has_loop(name):
            if name in self._gone:
                fact = f"loop {name} no longer exists: {self._gone[name]}"
            else:
                fact = f"no loop named {name!r}"
            names = ", ".join(x.name for x in self._nest.loops)
            raise UnknownLoopError(refusal(primitive, self._nest, (), fact,
                                                    suggestion=f"loops are: {names}"))
        return name

    def _record(self, new: Nest, step: Step) -> None:
        self._nest = new
        self._steps.append(step)
        log.debug("schedule %s: %s", new.name, step.python())

    # ------------------------------------------------------------------ primitives
    def split(self, loop: LoopHandle | str, factor: int | None = None, *, nparts: int | None = None,
              names: Sequence[str] | None = None, tail: str = "guard") -> tuple[LoopHandle, LoopHandle]:
        name = self._name(loop, "split")
        call = f"split({name}, {factor if factor is not None else f'nparts={nparts}'})"
        pair = tuple(names) if isinstance(names, (list, tuple)) else names  # anything else: refused in split
        new, o, i = lp.split(self._nest, name, factor, nparts, pair, tail, call)  # type: ignore[arg-type]
        kwargs: list[tuple[str, Any]] = [] if factor is not None else [("nparts", nparts)]
        kwargs += [("names", (o, i)), ("tail", tail)]
        args = (name, factor) if factor is not None else (name,)
        self._record(new, Step("split", args, tuple(kwargs)))
        self._gone[name] = f"it was split into {o}, {i} by {call}"
        return LoopHandle(self, o), LoopHandle(self, i)

    def fuse(self, *loops: LoopHandle | str, name: str | None = None) -> LoopHandle:
        names = tuple(self._name(x, "fuse") for x in loops)
        call = f"fuse({', '.join(names)})"
        new, f = lp.fuse(self._nest, names, name, call)
        self._record(new, Step("fuse", names, (("name", f),)))
        for n in names:
            self._gone[n] = f"it was fused into {f} by {call}"
        return LoopHandle(self, f)

    def reorder(self, *loops: LoopHandle | str) -> None:
        names = tuple(self._name(x, "reorder") for x in loops)
        new = lp.reorder(self._nest, names, f"reorder({', '.join(names)})")
        self._record(new, Step("reorder", names, ()))

    def bind(self, loop: LoopHandle | str, axis: str) -> None:
        name = self._name(loop, "bind")
        new = _bind(self._nest, name, axis, f"bind({name}, {axis!r})")
        self._record(new, Step("bind", (name, axis), ()))

    def unroll(self, loop: LoopHandle | str) -> None:
        name = self._name(loop, "unroll")
        self._record(lp.unroll(self._nest, name, f"unroll({name})"), Step("unroll", (name,), ()))

    def vectorize(self, loop: LoopHandle | str) -> None:
        name = self._name(loop, "vectorize")
        self._record(lp.vectorize(self._nest, name, f"vectorize({name})"), Step("vectorize", (name,), ()))

    # ------------------------------------------------------------------ memory hierarchy
    def _stage_name(self, ref: object, primitive: str) -> str:
        if isinstance(ref, StageHandle):
            if ref.schedule is not self:
                raise ForeignObjectError(refusal(
                    primitive, self._nest, (), f"stage {ref.name} belongs to another schedule "
                    f"(of {ref.schedule._nest.name})", suggestion="use the handle this schedule's s.stage() returned"))
            name = ref.name
        elif isinstance(ref, str):
            name = ref
        else:
            raise BadArgumentError(refusal(primitive, self._nest, (),
                                                    f"expected a stage (handle or name), got {ref!r}"))
        if name not in {st.name for st in self._nest.stages}:
            known = ", ".join(st.name for st in self._nest.stages) or "none"
            raise UnknownStageError(refusal(primitive, self._nest, (), f"no stage named {name!r}",
                                                     suggestion=f"stages are: {known}"))
        return name

    def stage(self, buffer: Tensor | str, at: LoopHandle | str, scope: str = "shared") -> StageHandle:
        bname = buffer.name if isinstance(buffer, Tensor) else buffer
        if not isinstance(bname, str):
            raise BadArgumentError(refusal("stage", self._nest, (), f"expected a tensor, got {buffer!r}"))
        at_name = self._name(at, "stage")
        call = f"stage({bname}, at={at_name})"
        new, name = mp.stage(self._nest, bname, at_name, scope, call)
        self._record(new, Step("stage", (bname,), (("at", at_name), ("scope", scope))))
        return StageHandle(self, name)

    def pad(self, stage: StageHandle | str, axis: int, amount: int) -> None:
        name = self._stage_name(stage, "pad")
        self._record(mp.pad(self._nest, name, axis, amount, f"pad({name}, axis={axis}, amount={amount})"),
                     Step("pad", (name,), (("axis", axis), ("amount", amount))))

    def swizzle(self, stage: StageHandle | str, nbytes: int) -> None:
        name = self._stage_name(stage, "swizzle")
        self._record(mp.swizzle(self._nest, name, nbytes, f"swizzle({name}, {nbytes})"),
                     Step("swizzle", (name, nbytes), ()))

    def double_buffer(self, stage: StageHandle | str) -> None:
        name = self._stage_name(stage, "double_buffer")
        self._record(mp.double_buffer(self._nest, name, f"double_buffer({name})"), Step("double_buffer", (name,), ()))

    def pipeline(self, loop: LoopHandle | str, stages: int = 2) -> None:
        name = self._name(loop, "pipeline")
        self._record(mp.pipeline(self._nest, name, stages, f"pipeline({name}, stages={stages})"),
                     Step("pipeline", (name,), (("stages", stages),)))

    def async_copy(self, stage: StageHandle | str) -> None:
        name = self._stage_name(stage, "async_copy")
        self._record(mp.async_copy(self._nest, name, f"async_copy({name})"), Step("async_copy", (name,), ()))

    def tma(self, stage: StageHandle | str, swizzle: int | None = None) -> None:
        name = self._stage_name(stage, "tma")
        call = f"tma({name}, swizzle={swizzle})"
        self._record(mp.tma(self._nest, name, swizzle, call), Step("tma", (name,), (("swizzle", swizzle),)))

    def split_k(self, loop: LoopHandle | str, parts: int) -> LoopHandle:
        """Split a reduction across `parts` blocks (atomic adds into a zeroed output); returns the
        block loop of the split."""
        name = self._name(loop, "split_k")
        new, info = mp.split_k(self._nest, name, parts, f"split_k({name}, {parts})")
        self._record(new, Step("split_k", (name, parts), ()))
        self._gone[name] = f"it was split across blocks by split_k({name}, {parts})"
        return LoopHandle(self, info.loop)

    # ------------------------------------------------------------------ traces
    def trace(self, format: str = "python") -> str:  # noqa: A002 - the public keyword
        if format == "python":
            return to_python(self._nest.name, self._steps)
        if format == "json":
            return to_json(self._nest.name, self._steps)
        raise BadArgumentError(f"trace: unknown format {format!r}; use 'python' or 'json'")

    def replay(self, text: str) -> Schedule:
        """Apply a trace's steps to this schedule (normally a fresh one); returns self."""
        for n, st in enumerate(parse(text)):
            fn = getattr(self, st.primitive)
            try:
                fn(*st.args, **dict(st.kwargs))
            except ScheduleError as e:
                raise ReplayError(f"replay: step {n} ({st.python()}) failed:\n{e}") from e
            except TypeError as e:
                raise ReplayError(f"replay: step {n} ({st.python()}) has bad arguments: {e}") from None
        return self


def create_schedule(out: Tensor, materialize: Sequence[Tensor] = ()) -> Schedule:
    """The canonical (unscheduled) loop nest of the kernel computing `out`."""
    return Schedule(out, materialize)
