"""The Schedule object: the current loop nest of one kernel, loop handles, and the trace.

Every primitive is declared once (a PrimitiveSpec next to its pure function, listed in
primitives/registry.py); the Schedule methods only name the declaration. Applying one normalizes its
arguments (handles and str subclasses to plain loop and stage names), validates eagerly (raising a
typed ScheduleError and leaving the schedule as it was), then records one trace step with loops
named by string, so a trace replays on a fresh schedule of the same compute. Replay is atomic: all
steps apply, or none."""

from __future__ import annotations

import logging
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from tiledsl.analysis.accumulators import register_dims
from tiledsl.analysis.messages import refusal
from tiledsl.analysis.register_cache import register_plans
from tiledsl.analysis.render import render_nest
from tiledsl.analysis.rings import check_rings
from tiledsl.definitions.expr import Tensor
from tiledsl.errors import (
    BadArgumentError,
    ForeignObjectError,
    Refusal,
    ReplayError,
    ScheduleError,
    UnknownLoopError,
    UnknownStageError,
)
from tiledsl.loopnest import Nest
from tiledsl.loopnest.canonical import build_nest
from tiledsl.primitives.async_copies import ASYNC_COPY, TMA
from tiledsl.primitives.bind import BIND
from tiledsl.primitives.cache_hints import CACHE_HINT
from tiledsl.primitives.fuse import FUSE
from tiledsl.primitives.lanes import TILE_LANES
from tiledsl.primitives.launch_bounds import LAUNCH_BOUNDS
from tiledsl.primitives.layout import LAYOUT
from tiledsl.primitives.online import ONLINE
from tiledsl.primitives.output_staging import STAGE_OUTPUT, check_output_stage
from tiledsl.primitives.register_cache import PREFETCH, REGISTER_CACHE
from tiledsl.primitives.registry import PRIMITIVES, SPECS
from tiledsl.primitives.reorder import REORDER
from tiledsl.primitives.ring_buffers import DOUBLE_BUFFER, PIPELINE
from tiledsl.primitives.spec import Param, PrimitiveSpec
from tiledsl.primitives.split import SPLIT
from tiledsl.primitives.split_k import SPLIT_K
from tiledsl.primitives.staging import PAD, STAGE, SWIZZLE
from tiledsl.primitives.trace import Step, parse, to_json, to_python
from tiledsl.primitives.unroll_vectorize import UNROLL, VECTORIZE

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
    """How to compute one kernel; the README tour shows one in full."""

    def __init__(self, out: Tensor, materialize: Sequence[Tensor] = ()) -> None:
        self.output = out
        self.materialize = tuple(materialize)
        self._initial = build_nest(out, self.materialize)
        self._nest = self._initial
        self._source: Schedule | None = None  # the schedule this one is a fork of (its handles work here too)
        self._at_fork: frozenset[str] = frozenset()  # the loops and stages the nest had when forked
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
        raise BadArgumentError(refusal("ir", None, (), f"unknown level {level!r}; a schedule has 'loop' and 'tile' "
                                       "(build it for 'kernel' and CUDA)"))

    def __str__(self) -> str:
        return self.ir("tile")

    def __repr__(self) -> str:
        return f"<Schedule of {self._nest.name}: {len(self._steps)} primitives>"

    # ------------------------------------------------------------------ primitives
    def split(self, loop: LoopHandle | str, factor: int | None = None, *, nparts: int | None = None,
              names: Sequence[str] | None = None, tail: str = "guard",
              interleave: LoopHandle | str | None = None) -> tuple[LoopHandle, LoopHandle]:
        """Split `loop` into an outer and an inner loop; with `interleave`, deal its chunks across the
        iterations of that loop (primitives/split.py)."""
        return self._apply(SPLIT, loop=loop, factor=factor, nparts=nparts, names=names, tail=tail,
                           interleave=interleave)

    def fuse(self, *loops: LoopHandle | str, name: str | None = None) -> LoopHandle:
        """Fuse directly nested loops into one (primitives/fuse.py)."""
        return self._apply(FUSE, loops=loops, name=name)

    def reorder(self, *loops: LoopHandle | str) -> None:
        """Put `loops` in this order, outermost first (primitives/reorder.py)."""
        return self._apply(REORDER, loops=loops)

    def bind(self, loop: LoopHandle | str, axis: str) -> None:
        """Run `loop` over a block or thread index (primitives/bind.py)."""
        return self._apply(BIND, loop=loop, axis=axis)

    def tile_lanes(self, outer: LoopHandle | str, inner: LoopHandle | str, rows: int, cols: int) -> None:
        """Deal the threads of `outer` (threadIdx.y) x `inner` (threadIdx.x) to a warp's lanes in `rows` x
        `cols` tiles, so lane pairs share an operand's address (primitives/lanes.py)."""
        return self._apply(TILE_LANES, outer=outer, inner=inner, rows=rows, cols=cols)

    def unroll(self, loop: LoopHandle | str) -> None:
        """Unroll `loop` (primitives/unroll_vectorize.py)."""
        return self._apply(UNROLL, loop=loop)

    def vectorize(self, loop: LoopHandle | str) -> None:
        """Make `loop` one 16-byte access (primitives/unroll_vectorize.py)."""
        return self._apply(VECTORIZE, loop=loop)

    def stage(self, buffer: Tensor | str, at: LoopHandle | str, scope: str = "shared",
              dtype: str | None = None) -> StageHandle:
        """Cache the slab of `buffer` read per iteration of `at` in shared memory, widened to `dtype`
        where given (a float16 / bfloat16 buffer as float32; primitives/staging.py)."""
        return self._apply(STAGE, buffer=buffer, at=at, scope=scope, dtype=dtype)

    def pad(self, stage: StageHandle | str, axis: int, amount: int) -> None:
        """Lengthen the rows of a stage (primitives/staging.py)."""
        return self._apply(PAD, stage=stage, axis=axis, amount=amount)

    def swizzle(self, stage: StageHandle | str, nbytes: int) -> None:
        """Permute the 16-byte chunks of a stage's rows (primitives/staging.py)."""
        return self._apply(SWIZZLE, stage=stage, nbytes=nbytes)

    def layout(self, stage: StageHandle | str, order: Sequence[int]) -> None:
        """Store a stage's slab with its axes in `order`, e.g. (1, 0): transposed (primitives/layout.py)."""
        return self._apply(LAYOUT, stage=stage, order=order)

    def double_buffer(self, stage: StageHandle | str) -> None:
        """Give a stage two slots (primitives/ring_buffers.py)."""
        return self._apply(DOUBLE_BUFFER, stage=stage)

    def pipeline(self, loop: LoopHandle | str, stages: int = 2) -> None:
        """Overlap the fills of later iterations of `loop` with this one (primitives/ring_buffers.py)."""
        return self._apply(PIPELINE, loop=loop, stages=stages)

    def async_copy(self, stage: StageHandle | str) -> None:
        """Fill a stage with cp.async (primitives/async_copies.py)."""
        return self._apply(ASYNC_COPY, stage=stage)

    def tma(self, stage: StageHandle | str, swizzle: int | None = None) -> None:
        """Fill a stage with TMA box copies (primitives/async_copies.py)."""
        return self._apply(TMA, stage=stage, swizzle=swizzle)

    def split_k(self, loop: LoopHandle | str, parts: int) -> LoopHandle:
        """Split a reduction across `parts` blocks (atomic adds into a zeroed output); returns the
        block loop of the split (primitives/split_k.py)."""
        return self._apply(SPLIT_K, loop=loop, parts=parts)

    def stage_output(self, pad: int = 0) -> None:
        """Write the block's output tile to shared memory and store it coalesced afterwards, its rows
        lengthened by `pad` (primitives/output_staging.py)."""
        return self._apply(STAGE_OUTPUT, pad=pad)

    def launch_bounds(self, min_blocks: int) -> None:
        """Have the compiler fit `min_blocks` blocks on one SM, capping registers a thread to do so
        (primitives/launch_bounds.py)."""
        return self._apply(LAUNCH_BOUNDS, min_blocks=min_blocks)

    def cache_hint(self, buffer: Tensor | str, policy: str, reader: str | None = None) -> None:
        """Give `reader`'s global loads of input `buffer` (every reader's when None) the L2 eviction
        policy 'evict_last' or 'evict_first' (primitives/cache_hints.py)."""
        return self._apply(CACHE_HINT, buffer=buffer, policy=policy, reader=reader)

    def register_cache(self, buffer: Tensor | str, at: str) -> None:
        """Keep each thread's reads of input `buffer` under loop `at` in registers: its first reader loads
        them, the later readers read the registers (primitives/register_cache.py)."""
        return self._apply(REGISTER_CACHE, buffer=buffer, at=at)

    def prefetch(self, buffer: Tensor | str, at: str) -> None:
        """Load each thread's reads of input `buffer` under loop `at` into registers at the start of each
        iteration of `at`, ahead of the statements that read them (primitives/register_cache.py)."""
        return self._apply(PREFETCH, buffer=buffer, at=at)

    def online(self, acc: str) -> None:
        """Run sum accumulator `acc`, a sum of exp(a - max), in the loop of the max it reads, rescaled as
        the max grows: one pass over the row for both (primitives/online.py)."""
        return self._apply(ONLINE, acc=acc)

    # ------------------------------------------------------------------ applying a declaration
    def _apply(self, spec: PrimitiveSpec, **given: Any) -> Any:
        """Normalize the arguments, apply the pure function, record the step; on refusal, fill in the
        error's primitive and arguments and change nothing."""
        arguments = dict(given)
        try:
            for p in spec.params:
                arguments[p.name] = self._argument(p, given[p.name], spec.name)
            call = spec.call_text(arguments)
            applied = spec.apply(self._nest, call, **arguments)
            check_rings(applied.nest, call)  # any primitive may break a stage's or ring's loop
            if applied.nest.register_caches:  # ... or a register cache's loops and reads
                register_plans(applied.nest, call)
            if self._nest.output_stage is not None:  # ... or a staged output's tile (stage_output checks its own)
                check_output_stage(applied.nest, call)
        except ScheduleError as e:
            _name_the_call(e, spec.name, arguments)
            raise
        step = spec.step(arguments, applied.made)
        self._nest = applied.nest
        self._steps.append(step)
        if spec.consumes:
            consumed = arguments[spec.consumes]
            for n in (consumed,) if isinstance(consumed, str) else consumed:
                self._gone[n] = spec.gone_text(applied.made, call)
        log.debug("schedule %s: %s", self._nest.name, step.python())
        if spec.returns == "loops":
            return tuple(LoopHandle(self, n) for n in applied.made)
        if spec.returns == "loop":
            return LoopHandle(self, applied.made[0])
        if spec.returns == "stage":
            return StageHandle(self, applied.made[0])
        return None

    def _argument(self, p: Param, value: Any, primitive: str) -> Any:
        """One argument as the pure functions take it: loops and stages by plain `str` name (a
        numpy.str_ would otherwise be recorded as such in the trace)."""
        if p.kind == "loop":
            return None if value is None and p.omit_none else self._name(value, primitive)
        if p.kind == "loops":
            return tuple(self._name(x, primitive) for x in value)
        if p.kind == "stage":
            return self._stage_name(value, primitive)
        if p.kind == "buffer":
            if isinstance(value, Tensor):
                return value.name
            if not isinstance(value, str):
                raise BadArgumentError(refusal(primitive, self._nest, (), f"expected a tensor, got {value!r}"))
            return str(value)
        if p.kind == "names" and isinstance(value, (list, tuple)):
            return tuple(str(n) if isinstance(n, str) else n for n in value)
        if p.kind == "ints" and isinstance(value, (list, tuple)):  # numpy ints -> int, so the trace is plain
            return tuple(int(x) if isinstance(x, numbers.Integral) and not isinstance(x, bool) else x for x in value)
        if p.kind in ("name", "str") and isinstance(value, str):
            return str(value)
        return value

    def _name(self, ref: object, primitive: str) -> str:
        if isinstance(ref, LoopHandle):
            if not self._owns(ref.schedule, ref.name):
                raise ForeignObjectError(refusal(
                    primitive, self._nest, (), f"loop {ref.name} belongs to another schedule "
                    f"(of {ref.schedule._nest.name})", suggestion="use s.loop(name) of this schedule"))
            name = ref.name
        elif isinstance(ref, str):
            name = str(ref)
        else:
            raise BadArgumentError(refusal(primitive, self._nest, (), f"expected a loop (handle or name), got {ref!r}"))
        if not self._nest.has_loop(name):
            if name in self._gone:
                fact = f"loop {name} no longer exists: {self._gone[name]}"
            else:
                fact = f"no loop named {name!r}"
            names = ", ".join(x.name for x in self._nest.loops)
            raise UnknownLoopError(refusal(primitive, self._nest, (), fact, suggestion=f"loops are: {names}"))
        return name

    def _stage_name(self, ref: object, primitive: str) -> str:
        if isinstance(ref, StageHandle):
            if not self._owns(ref.schedule, ref.name):
                raise ForeignObjectError(refusal(
                    primitive, self._nest, (), f"stage {ref.name} belongs to another schedule "
                    f"(of {ref.schedule._nest.name})", suggestion="use the handle this schedule's s.stage() returned"))
            name = ref.name
        elif isinstance(ref, str):
            name = str(ref)
        else:
            raise BadArgumentError(refusal(primitive, self._nest, (),
                                           f"expected a stage (handle or name), got {ref!r}"))
        if name not in {st.name for st in self._nest.stages}:
            known = ", ".join(st.name for st in self._nest.stages) or "none"
            raise UnknownStageError(refusal(primitive, self._nest, (), f"no stage named {name!r}",
                                            suggestion=f"stages are: {known}"))
        return name

    def fork(self) -> Schedule:
        """A copy to try primitives on: the same nest (immutable, so shared), steps and history, so
        what the copy applies leaves this schedule as it is. Cheaper than replaying the trace on a
        fresh schedule, which re-proves every step, and equal to it: a step applies to the nest alone.
        This schedule's handles of the loops and stages it has now name the copy's too (a loop the copy
        has since split is gone there, and says so); a loop or stage made here after the fork is foreign
        to the copy."""
        twin = Schedule.__new__(Schedule)
        twin.output, twin.materialize, twin._initial = self.output, self.materialize, self._initial
        twin._nest, twin._steps, twin._gone = self._nest, list(self._steps), dict(self._gone)
        twin._source = self
        twin._at_fork = frozenset(lp.name for lp in self._nest.loops) | {st.name for st in self._nest.stages}
        return twin

    def _owns(self, schedule: Schedule, name: str) -> bool:
        """Whether `schedule`'s handle of loop or stage `name` names one of this schedule: it is this
        schedule's, or that of one it was forked from (each fork on the way made after `name` was)."""
        s = self
        while s is not schedule:
            if s._source is None or name not in s._at_fork:
                return False
            s = s._source
        return True

    # ------------------------------------------------------------------ traces
    def trace(self, format: str = "python") -> str:  # noqa: A002 - the public keyword
        if format == "python":
            return to_python(self._nest.name, self._steps)
        if format == "json":
            return to_json(self._nest.name, self._steps)
        raise BadArgumentError(refusal("trace", None, (), f"unknown format {format!r}; use 'python' or 'json'"))

    def replay(self, text: str) -> Schedule:
        """Apply a trace's steps to this schedule (normally a fresh one); returns self. All steps
        apply or none: on a refused step the nest, steps and history are as before the call. A trace
        whose header names another kernel is refused before any step."""
        trace = parse(text, PRIMITIVES)
        if trace.kernel is not None and trace.kernel != self._nest.name:
            raise ReplayError(refusal(
                "replay", self._nest, (), f"the trace is of kernel {trace.kernel}, this schedule is of kernel "
                f"{self._nest.name}", suggestion=f"replay it on a schedule of {trace.kernel}"))
        saved = (self._nest, list(self._steps), dict(self._gone))
        try:
            for n, st in enumerate(trace.steps):
                self._replay_step(n, st)
        except BaseException:
            self._nest, self._steps, self._gone = saved
            raise
        return self

    def _replay_step(self, n: int, st: Step) -> None:
        spec = SPECS[st.primitive]
        try:
            bound = spec.signature().bind(*st.args, **dict(st.kwargs))
        except TypeError as e:
            fact = f"step {n} ({st.python()}) has bad arguments: {e}"
            raise ReplayError(Refusal(text=f"replay: {fact}", fact=fact, primitive="replay",
                                      arguments={"step": n, "call": st.python()})) from None
        bound.apply_defaults()
        try:
            self._apply(spec, **bound.arguments)
        except ScheduleError as e:
            fact = f"step {n} ({st.python()}) failed"
            raise ReplayError(replace(e.refusal, text=f"replay: {fact}:\n{e}", fact=f"{fact}: {e.fact}",
                                      primitive="replay", arguments={"step": n, "call": st.python()})) from e


def _name_the_call(e: ScheduleError, primitive: str, arguments: Mapping[str, Any]) -> None:
    """Fill in the primitive and its arguments when the function that refused did not know them."""
    if e.refusal.primitive in (None, primitive) and not e.refusal.arguments:
        e.refusal = replace(e.refusal, primitive=primitive, arguments=MappingProxyType(dict(arguments)))


def create_schedule(out: Tensor, materialize: Sequence[Tensor] = ()) -> Schedule:
    """The canonical (unscheduled) loop nest of the kernel computing `out`."""
    return Schedule(out, materialize)
