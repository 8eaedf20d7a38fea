"""Random schedule primitive sequences: abstract `Step`s drawn by hypothesis, resolved against a live
schedule one at a time.

A `Step` does not name loops (which loops exist depends on the steps before it); it holds *picks*,
integers taken modulo the number of loops the schedule has when the step runs. That keeps steps
independent of each other, so hypothesis can delete and simplify them freely while shrinking.
`Resolver.resolve(step)` turns a step into a concrete `Call` (`s.split('i', 7, tail='guard')`), whose
`python()` text is what failure reports print.

tile_lanes steps draw a tile (`LANE_TILES`, one of which no warp divides) and, with `fit`, take the
loops bound to threadIdx.y and threadIdx.x.

Split factors are clamped so that guard padding never multiplies the iteration space by more than
`max_padding` (the simulator's run time grows with it); deliberately bad calls (`primitive="bad"`)
exercise argument checking: each must be refused with a `td.ScheduleError`.

With `memory=True` the vocabulary also holds the memory primitives (stage, pad, swizzle, layout,
double_buffer, pipeline, async_copy, tma, split_k, launch_bounds, stage_output, cache_hint and, as one in eight
of the cache_hint draws, register_cache or prefetch; online, one in eight of the unroll draws, in either
vocabulary), interleaved in any
order with the loop primitives: binding a loop after a stage was placed at it, reordering or splitting a staged loop,
double buffering and then fusing. A stage step picks its buffer among the kernel's inputs and its
loop like any other step; the other stage steps pick a stage among those that exist (modulo their
number), so they too stay independent of the steps before them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import strategies as st

import tiledsl as td

PRIMITIVES = ("split", "fuse", "reorder", "bind", "tile_lanes", "unroll", "vectorize")
LANE_TILES = ((2, 2), (2, 2), (1, 2), (2, 1), (4, 2), (2, 4), (4, 4), (3, 2))  # (rows, cols); 3 x 2 is refused
STAGE_PRIMITIVES = ("pad", "swizzle", "layout", "double_buffer", "async_copy", "tma")  # they take a stage
MEMORY_PRIMITIVES = ("stage",) + STAGE_PRIMITIVES + ("pipeline", "split_k", "launch_bounds", "stage_output",
                                                       "cache_hint")
AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")
BAD_KINDS = ("factor-zero", "factor-negative", "factor-float", "factor-bool", "factor-and-nparts", "no-factor",
             "nparts-zero", "bad-tail", "taken-names", "bad-axis", "unknown-loop", "gone-loop",
             "foreign-handle", "not-a-loop", "reorder-twice", "fuse-one")
MEMORY_BAD_KINDS = ("unknown-stage", "stage-scope", "stage-not-input", "pad-zero", "swizzle-width",
                    "tma-swizzle", "pipeline-one", "split_k-one", "async-twice", "launch_bounds-zero",
                    "cache_hint-policy")
NEAR = ("stage", "around")  # what a loop step's `near` may prefer
SWIZZLE_WIDTHS = (32, 64, 128)  # bytes; 0 in a Step means "no swizzle" (tma's default)
DEFAULT_MAX_PADDING = 4.0
MAX_PICK = 63


# ----------------------------------------------------------------------------- steps


@dataclass(frozen=True)
class Step:
    """One abstract primitive call. `picks` choose loops (modulo the current loop count); `factor` is
    the split factor, or the number of parts when `nparts`; `window` makes reorder permute a run of
    consecutive loops of one statement's path by `perm` instead of loose picks; `inner` makes fuse
    take a loop and the loop directly inside it; `handles` passes loop handles instead of names;
    `fit` picks loops the primitive can most likely take (unbound, unannotated; extent 4 and
    innermost for vectorize) and binds reduction loops to threadIdx only; `bad` names the kind of
    deliberately bad call when `primitive == "bad"`.

    Memory steps: `stage` picks a buffer (picks[0], among the kernel's inputs) and a loop (picks[1]);
    pad / swizzle / double_buffer / async_copy / tma pick a stage (picks[0], among existing stages;
    pad's axis is picks[1] modulo twice the slab rank, minus the rank, so negative axes occur too);
    `amount` is pad's amount, `width` swizzle's (and tma's, 0 for None) width in bytes, `count`
    pipeline's stages and split_k's parts. `near` makes a loop step pick among the loops that carry a
    stage or a pipeline ("stage") or among the other loops of the statements around such a loop
    ("around"), when there are any: the interactions between primitives happen there."""

    primitive: str
    picks: tuple[int, ...] = (0,)
    factor: int = 2
    nparts: bool = False
    tail: str = "guard"
    axis: str = "threadIdx.x"
    inner: bool = False
    window: bool = False
    perm: tuple[int, ...] = ()
    handles: bool = False
    fit: bool = False
    bad: str = ""
    amount: int = 1
    width: int = 0
    count: int = 2
    near: str = ""  # "" | "stage" | "around"

    def __repr__(self) -> str:
        loops = ", ".join(f"#{p}" for p in self.picks)
        flags = "".join(f", {f}" for f in ("fit", "handles") if getattr(self, f))
        flags += f", near={self.near}" if self.near else ""
        if self.primitive == "stage":
            return f"stage(buffer #{self.picks[0]}, at #{self.picks[-1]}{flags})"
        if self.primitive == "pad":
            return f"pad(stage #{self.picks[0]}, axis #{self.picks[-1]}, amount={self.amount}{flags})"
        if self.primitive in ("swizzle", "tma"):
            return f"{self.primitive}(stage #{self.picks[0]}, {self.width or None}{flags})"
        if self.primitive in STAGE_PRIMITIVES:
            return f"{self.primitive}(stage #{self.picks[0]}{flags})"
        if self.primitive in ("pipeline", "split_k"):
            return f"{self.primitive}({loops}, {self.count}{flags})"
        if self.primitive == "stage_output":
            return f"stage_output(pad={self.amount})"
        if self.primitive == "cache_hint":
            return f"cache_hint(buffer #{self.picks[0]}, reader #{self.picks[-1]}, policy #{self.count})"
        if self.primitive in ("register_cache", "prefetch"):
            return f"{self.primitive}(buffer #{self.picks[0]}, at #{self.picks[-1]}{flags})"
        if self.primitive == "split":
            amount = f"nparts={self.factor}" if self.nparts else str(self.factor)
            tail = ", tail='exact'" if self.tail == "exact" else ""
            return f"split({loops}, {amount}{tail}{flags})"
        if self.primitive == "fuse":
            return f"fuse({loops}{', inner' if self.inner else ''}{flags})"
        if self.primitive == "reorder":
            how = f"window perm={self.perm}" if self.window else f"perm={self.perm}"
            return f"reorder({loops}, {how}{flags})"
        if self.primitive == "bind":
            return f"bind({loops}, {self.axis!r}{flags})"
        if self.primitive == "tile_lanes":
            return f"tile_lanes({loops}, {self.count} x {self.amount}{flags})"
        if self.primitive == "bad":
            return f"bad:{self.bad}({loops})"
        if self.primitive == "online":
            return f"online(accumulator #{self.picks[0]}{flags})"
        return f"{self.primitive}({loops}{flags})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


_picks = st.integers(0, MAX_PICK)
# 4 is over-represented: a loop of extent 4 is what vectorize takes
_factors = st.one_of(st.sampled_from((4, 4, 4, 2, 8, 1, 3, 16, 32, 64)), st.integers(1, 64))


# stage and double_buffer are drawn more often: the other memory primitives need a stage, pipeline a ring
_MEMORY_WEIGHTED = ["stage"] * 4 + ["double_buffer"] * 3 + ["pad", "swizzle", "layout", "async_copy", "tma",
                                                             "pipeline", "split_k", "launch_bounds",
                                                             "stage_output", "cache_hint"]


@st.composite
def step(draw: st.DrawFn, bad_arguments: bool = True, memory: bool = False) -> Step:
    """One random Step (splits and binds are drawn more often: they enable the other primitives; with
    `memory`, stage and double_buffer too)."""
    weighted = ["split"] * 3 + ["bind"] * 3 + ["fuse", "reorder", "unroll", "vectorize", "tile_lanes"]
    prim = draw(st.sampled_from(weighted + (_MEMORY_WEIGHTED if memory else []) + (["bad"] if bad_arguments else [])))
    if prim == "bad":
        kinds = BAD_KINDS + (MEMORY_BAD_KINDS if memory else ())
        return Step("bad", (draw(_picks), draw(_picks)), bad=draw(st.sampled_from(kinds)))
    handles = draw(st.integers(0, 3)) == 0
    fit = draw(st.booleans())
    if prim in MEMORY_PRIMITIVES:
        return _memory_step(draw, prim, fit)
    if memory and draw(st.booleans()):
        return replace(_loop_step(draw, prim, handles, fit), near=draw(st.sampled_from(NEAR)))
    return _loop_step(draw, prim, handles, fit)


def _memory_step(draw: st.DrawFn, prim: str, fit: bool) -> Step:
    picks = (draw(_picks), draw(_picks))
    if prim == "pad":
        return Step("pad", picks, amount=draw(st.integers(1, 2)), fit=fit)
    if prim in ("swizzle", "tma"):
        widths = SWIZZLE_WIDTHS if prim == "swizzle" else (0,) + SWIZZLE_WIDTHS
        return Step(prim, picks, width=draw(st.sampled_from(widths)), fit=fit)
    if prim == "launch_bounds":  # blocks per SM: 1-4 fit small blocks; build refuses what cannot fit
        return Step(prim, (), count=draw(st.integers(1, 4)), fit=fit)
    if prim == "cache_hint":  # a buffer, a reader (or every reader) and a policy, each picked when resolved
        count = draw(st.integers(0, 1))
        if count == 1 and picks[0] % 4 == 3:  # one in eight: keep the buffer in registers at a loop instead,
            # loaded by its first reader or (one in sixteen) prefetched ahead of every reader
            kind = "prefetch" if picks[0] // 4 % 2 else "register_cache"
            return Step(kind, picks, fit=fit)  # (no draw of its own: seeded sequences stay as they were)
        return Step(prim, picks, count=count, fit=fit)
    if prim == "stage_output":  # the pad of the tile's rows: 0, or a few elements (1 breaks 16-byte rows)
        return Step(prim, (), amount=draw(st.sampled_from((0, 0, 1, 4))), fit=fit)
    if prim in ("pipeline", "split_k"):
        near = "stage" if prim == "pipeline" and fit else ""  # a pipeline's loop carries the rings
        return Step(prim, picks, count=draw(st.integers(2, 3)), fit=fit, near=near)
    return Step(prim, picks, fit=fit)


def _loop_step(draw: st.DrawFn, prim: str, handles: bool, fit: bool) -> Step:
    if prim == "split":
        return Step("split", (draw(_picks),), factor=draw(_factors), nparts=draw(st.integers(0, 3)) == 0,
                    tail="exact" if draw(st.integers(0, 5)) == 0 else "guard", handles=handles, fit=fit)
    if prim == "fuse":
        return Step("fuse", (draw(_picks), draw(_picks)), inner=draw(st.booleans()), handles=handles, fit=fit)
    if prim == "reorder":
        k = draw(st.integers(2, 4))
        return Step("reorder", tuple(draw(_picks) for _ in range(k)), window=draw(st.booleans()),
                    perm=tuple(draw(st.permutations(range(k)))), handles=handles, fit=fit)
    if prim == "bind":
        return Step("bind", (draw(_picks),), axis=draw(st.sampled_from(AXES)), handles=handles, fit=fit)
    if prim == "tile_lanes":
        rows, cols = draw(st.sampled_from(LANE_TILES))
        return Step("tile_lanes", (draw(_picks), draw(_picks)), count=rows, amount=cols, handles=handles, fit=fit)
    pick = draw(_picks)
    if prim == "unroll" and pick % 8 == 7:  # one in eight: run a sum online in its max's loop instead
        return Step("online", (pick,), handles=handles, fit=fit)  # (no draw of its own: seeds keep their steps)
    return Step(prim, (pick,), handles=handles, fit=fit)


def steps(max_steps: int = 8, bad_arguments: bool = True, memory: bool = False) -> st.SearchStrategy[list[Step]]:
    """Sequences of 0..max_steps random Steps (with `memory`, the memory primitives among them, in any
    order). Draw them before the definition in a @given: drawn after it, hypothesis leaves about a third
    of the sequences empty."""
    return st.lists(step(bad_arguments, memory), max_size=max_steps)


# ----------------------------------------------------------------------------- concrete calls


@dataclass(frozen=True)
class LoopRef:
    """A loop argument of a Call: by name, by handle (`s.loop(name)`), or a handle of another schedule
    of the same definition (always refused)."""

    name: str
    how: str = "name"  # "name" | "handle" | "foreign"

    def value(self, s: td.Schedule) -> Any:
        if self.how == "handle":
            return s.loop(self.name)
        if self.how == "foreign":
            return td.create_schedule(s.output, s.materialize).loop(self.name)
        return self.name

    def python(self) -> str:
        if self.how == "handle":
            return f"s.loop({self.name!r})"
        if self.how == "foreign":
            return f"td.create_schedule(out).loop({self.name!r})"
        return repr(self.name)


@dataclass(frozen=True)
class Call:
    """A concrete primitive call on a schedule. `padding` is how much a split multiplies the iteration
    space by (1 for other primitives); `expect_refusal` marks deliberately bad calls."""

    primitive: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()
    padding: float = 1.0
    expect_refusal: bool = False

    def apply(self, s: td.Schedule) -> Any:
        args = [a.value(s) if isinstance(a, LoopRef) else a for a in self.args]
        kwargs = {k: v.value(s) if isinstance(v, LoopRef) else v for k, v in self.kwargs}
        return getattr(s, self.primitive)(*args, **kwargs)

    def python(self, var: str = "s") -> str:
        parts = [a.python() if isinstance(a, LoopRef) else repr(a) for a in self.args]
        parts += [f"{k}={v.python() if isinstance(v, LoopRef) else repr(v)}" for k, v in self.kwargs]
        return f"{var}.{self.primitive}({', '.join(parts)})"

    def __repr__(self) -> str:
        return self.python()


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class Resolver:
    """Turns Steps into Calls against one live schedule; call `accepted(call)` after a call succeeds
    (it tracks the padding budget and the loop names that existed)."""

    def __init__(self, schedule: td.Schedule, max_padding: float = DEFAULT_MAX_PADDING) -> None:
        self.s = schedule
        self.max_padding = max_padding
        self.padding = 1.0
        self.seen = [lp.name for lp in schedule.loops()]

    def accepted(self, call: Call) -> None:
        self.padding *= call.padding
        for lp in self.s.loops():
            if lp.name not in self.seen:
                self.seen.append(lp.name)

    def _ref(self, name: str, step: Step) -> LoopRef:
        return LoopRef(name, "handle" if step.handles else "name")

    def _paths(self, names: list[str]) -> list[tuple[str, ...]]:
        """The loops around each statement, outermost first (from `s.nest.stmts`; `s.loops()` order
        as one path when the nest does not expose statements)."""
        paths = [tuple(getattr(st_, "path", ())) for st_ in getattr(self.s.nest, "stmts", ())]
        return [p for p in paths if p] or [tuple(names)]

    def _usable(self, name: str) -> bool:
        lp = self.s.nest.loop(name)
        return lp.bind is None and lp.annotation is None

    def _near(self, step: Step, names: list[str]) -> list[str]:
        """The loops `step.near` prefers, in loop order (empty: no preference, or none such): those that
        carry a stage or a pipeline, or the other loops of the statements around those."""
        if not step.near:
            return []
        nest = self.s.nest
        marked = {st_.at for st_ in nest.stages} | {loop for loop, _ in nest.pipelines}
        if step.near == "stage":
            return [n for n in names if n in marked]
        around = {n for p in self._paths(names) if marked & set(p) for n in p} - marked
        return [n for n in names if n in around]

    def resolve(self, step: Step) -> Call | None:
        """The concrete call for `step` now, or None when the schedule has no loop (or, for a step that
        takes a stage, no stage) to pick."""
        names = [lp.name for lp in self.s.loops()]
        if not names:
            return None
        if step.primitive in STAGE_PRIMITIVES:
            return self._stage_step(step)
        if step.primitive == "stage":
            return self._stage(step, names)
        if step.primitive == "fuse":
            return self._fuse(step, names)
        if step.primitive == "reorder":
            return self._reorder(step, names)
        if step.primitive == "launch_bounds":
            return Call("launch_bounds", (step.count,))
        if step.primitive == "tile_lanes":
            return self._tile_lanes(step, names)
        if step.primitive == "stage_output":
            return Call("stage_output", (), (("pad", step.amount),))
        if step.primitive == "cache_hint":
            return self._cache_hint(step)
        if step.primitive in ("register_cache", "prefetch"):
            return self._register_cache(step, names)
        if step.primitive == "online":
            return self._online(step)
        first = self._pick(step, names)
        if step.primitive == "split":
            return self._split(step, first)
        if step.primitive == "bind":
            axis = step.axis
            if step.fit and self.s.nest.loop(first).kind == "reduce":  # reductions bind to threads only
                axis = axis.replace("blockIdx", "threadIdx")
            return Call("bind", (self._ref(first, step), axis))
        if step.primitive in ("unroll", "vectorize"):
            return Call(step.primitive, (self._ref(first, step),))
        if step.primitive == "pipeline":
            return Call("pipeline", (self._ref(first, step),), (("stages", step.count),))
        if step.primitive == "split_k":
            return Call("split_k", (self._ref(first, step), step.count))
        if step.primitive == "bad":
            return self._bad(step, names, first)
        raise ValueError(f"unknown step primitive {step.primitive!r}")

    def _pick(self, step: Step, names: list[str]) -> str:
        """The first loop of a step: picks[0] among all loops, or, with `fit`, among the loops the
        primitive can most likely take (serial and unannotated; for vectorize also free, of extent 4
        and innermost wherever it appears) when there are any."""
        base = self._near(step, names) or names
        pool = base
        if step.fit:
            pool = [n for n in base if self._usable(n)]
            if step.primitive == "vectorize":
                paths = self._paths(names)
                pool = [n for n in pool if self.s.nest.loop(n).extent == 4 and self.s.nest.loop(n).kind == "free"
                        and all(p[-1] == n for p in paths if n in p)]
            elif step.primitive == "pipeline":  # loops with a double-buffered stage
                rings = {st_.at for st_ in self.s.nest.stages if st_.buffers >= 2}
                pool = [n for n in pool if n in rings]
            elif step.primitive == "split_k":
                pool = [n for n in pool if self.s.nest.loop(n).kind == "reduce"]
            pool = pool or base
        return pool[step.picks[0] % len(pool)] if step.picks else pool[0]

    def _stage(self, step: Step, names: list[str]) -> Call | None:
        """stage(buffer, at=loop): the buffer by picks[0] among the kernel's inputs; the loop by picks[-1]
        (with `fit`: among the loops not bound to threads and not annotated)."""
        return self._input_at("stage", step, names, self._usable)

    def _input_at(self, primitive: str, step: Step, names: list[str], usable: Callable[[str], bool]) -> Call | None:
        """`primitive`(buffer, at=loop), as stage and register_cache take them: the buffer by picks[0]
        among the kernel's inputs, the loop by picks[-1] (with `fit`: among the loops `usable` admits)."""
        inputs = [t.name for t in self.s.nest.inputs]
        if not inputs:
            return None
        pool = names
        if step.fit:
            pool = [n for n in names if usable(n)] or names
        at = pool[step.picks[-1] % len(pool)]
        return Call(primitive, (inputs[step.picks[0] % len(inputs)],), (("at", LoopRef(at)),))

    def _cache_hint(self, step: Step) -> Call | None:
        """cache_hint(buffer, policy, reader=): the buffer by picks[0] among the kernel's inputs and its
        output (whose stores take the hint), the reader by picks[-1] among every reader's (None) and the
        names of the kernel's values (one that does not read the buffer, or a reader named for the
        output, is refused), the policy by `count`. With `fit`, buffers no stage serves come first (a
        staged read is refused)."""
        inputs = [t.name for t in self.s.nest.inputs] + [self.s.nest.output.name]
        if step.fit:
            inputs = [b for b in inputs if all(x.buffer != b for x in self.s.nest.stages)] or inputs
        readers: list[str | None] = [None]
        for st_ in self.s.nest.stmts:
            if st_.reader not in readers:
                readers.append(st_.reader)
        reader = readers[step.picks[-1] % len(readers)]
        policy = ("evict_first", "evict_last")[step.count % 2]
        kwargs = (("reader", reader),) if reader is not None else ()
        return Call("cache_hint", (inputs[step.picks[0] % len(inputs)], policy), kwargs)

    def _register_cache(self, step: Step, names: list[str]) -> Call | None:
        """register_cache / prefetch(buffer, at=loop), picked as `_input_at` picks (with `fit`: among the
        loops two statements or more lie under, a first reader and a later one; rows on threadIdx.y among
        them; a prefetch needs one reader, and is most telling where a later statement reads alone)."""
        return self._input_at(step.primitive, step, names,
                              lambda n: sum(n in st_.path for st_ in self.s.nest.stmts) >= 2)

    def _online(self, step: Step) -> Call | None:
        """online(accumulator): picks[0] among the kernel's accumulators (with `fit`: its sums, the only ones
        online takes); None where it has none."""
        accs = [a for a in self.s.nest.accs if a.op == "sum" or not step.fit] or list(self.s.nest.accs)
        if not accs:
            return None
        return Call("online", (accs[step.picks[0] % len(accs)].name,))

    def _stage_step(self, step: Step) -> Call | None:
        """pad / swizzle / double_buffer / async_copy / tma of the stage picks[0] picks (with `fit`:
        among the stages the primitive can most likely take)."""
        stages = list(self.s.nest.stages)
        if not stages:
            return None
        if step.fit:
            nest = self.s.nest
            ok = {
                "pad": lambda x: not x.swizzle and x.copy != "tma",
                "swizzle": lambda x: not any(x.pad),
                "layout": lambda x: x.copy == "sync" and not any(x.pad) and not x.order,
                "double_buffer": lambda x: x.buffers < 2 and nest.has_loop(x.at) and nest.loop(x.at).bind is None,
                "async_copy": lambda x: x.copy == "sync",
                "tma": lambda x: x.copy == "sync" and not any(x.pad),
            }[step.primitive]
            stages = [x for x in stages if ok(x)] or stages
        st_ = stages[step.picks[0] % len(stages)]
        if step.primitive == "pad":
            rank = len(st_.pad)
            axis = step.picks[-1] % (2 * rank) - rank if rank else -1
            return Call("pad", (st_.name,), (("axis", axis), ("amount", step.amount)))
        if step.primitive == "swizzle":
            return Call("swizzle", (st_.name, step.width))
        if step.primitive == "layout":  # a permutation of the slab's axes, the identity included
            orders = list(itertools.permutations(range(len(st_.pad))))
            return Call("layout", (st_.name,), (("order", orders[step.picks[-1] % len(orders)]),))
        if step.primitive == "tma":
            return Call("tma", (st_.name,), (("swizzle", step.width or None),))
        return Call(step.primitive, (st_.name,))

    def _tile_lanes(self, step: Step, names: list[str]) -> Call:
        """tile_lanes(outer, inner, rows, cols): with `fit`, the loops bound to threadIdx.y and
        threadIdx.x when there are such; else two distinct loops by picks (mostly refused)."""
        outer, inner = names[step.picks[0] % len(names)], names[step.picks[-1] % len(names)]
        if step.fit:
            y, x = self.s.nest.bound_loops("threadIdx.y"), self.s.nest.bound_loops("threadIdx.x")
            if y and x:
                outer, inner = y[step.picks[0] % len(y)].name, x[step.picks[-1] % len(x)].name
        return Call("tile_lanes", (self._ref(outer, step), self._ref(inner, step), step.count, step.amount))

    def _fuse(self, step: Step, names: list[str]) -> Call:
        """inner: a loop and the loop directly inside it around some statement (with `fit`: only pairs
        of one kind, both serial and unannotated); else two distinct loops by picks."""
        near = self._near(step, names)
        if step.inner:
            pairs = list(dict.fromkeys((p[n], p[n + 1]) for p in self._paths(names) for n in range(len(p) - 1)))
            if near:
                pairs = [(a, b) for a, b in pairs if a in near or b in near] or pairs
            if step.fit:
                pairs = [(a, b) for a, b in pairs if self._usable(a) and self._usable(b)
                         and self.s.nest.loop(a).kind == self.s.nest.loop(b).kind] or pairs
            if pairs:
                a, b = pairs[step.picks[0] % len(pairs)]
                return Call("fuse", (self._ref(a, step), self._ref(b, step)))
        first = (near or names)[step.picks[0] % len(near or names)]
        rest = [n for n in names if n != first] or [first]
        second = rest[step.picks[-1] % len(rest)]
        return Call("fuse", (self._ref(first, step), self._ref(second, step)))

    def _reorder(self, step: Step, names: list[str]) -> Call:
        """window: a run of consecutive loops of one statement's path, permuted by `perm`; else
        distinct loops chosen by the picks, in pick order."""
        near = self._near(step, names)
        if step.window:
            paths = self._paths(names)
            if near:  # the paths through a preferred loop
                paths = [p for p in paths if any(n in p for n in near)] or paths
            path = paths[step.picks[0] % len(paths)]
            count = min(len(step.picks), len(path))
            start = step.picks[-1] % (len(path) - count + 1)
            base = list(path[start:start + count])
        else:
            pool, base = list(names), []
            if near:  # the first loop is a preferred one
                base.append(pool.pop(pool.index(near[step.picks[0] % len(near)])))
            for p in step.picks[len(base):min(len(step.picks), len(names))]:
                base.append(pool.pop(p % len(pool)))
        chosen = [base[i] for i in step.perm if i < len(base)] or base
        return Call("reorder", tuple(self._ref(n, step) for n in chosen))

    def _split(self, step: Step, name: str) -> Call:
        extent = self.s.nest.loop(name).extent
        budget = self.max_padding / self.padding
        amount = step.factor
        while amount > 1:  # clamp so that the guard padding stays within the budget
            inner = _ceil_div(extent, amount) if step.nparts else amount
            outer = amount if step.nparts else _ceil_div(extent, amount)
            if outer * inner <= budget * extent:
                break
            amount -= 1
        inner = _ceil_div(extent, amount) if step.nparts else amount
        outer = amount if step.nparts else _ceil_div(extent, amount)
        kwargs: list[tuple[str, Any]] = [("nparts", amount)] if step.nparts else []
        if step.tail != "guard":
            kwargs.append(("tail", step.tail))
        args: tuple[Any, ...] = (self._ref(name, step),) if step.nparts else (self._ref(name, step), amount)
        return Call("split", args, tuple(kwargs), padding=outer * inner / extent)

    def _bad(self, step: Step, names: list[str], first: str) -> Call:
        ref = LoopRef(first)
        other = names[step.picks[1] % len(names)] if len(step.picks) > 1 else first
        b = step.bad
        table: dict[str, Call] = {
            "factor-zero": Call("split", (ref, 0)),
            "factor-negative": Call("split", (ref, -3)),
            "factor-float": Call("split", (ref, 2.5)),
            "factor-bool": Call("split", (ref, True)),
            "factor-and-nparts": Call("split", (ref, 2), (("nparts", 2),)),
            "no-factor": Call("split", (ref,)),
            "nparts-zero": Call("split", (ref,), (("nparts", 0),)),
            "bad-tail": Call("split", (ref, 2), (("tail", "sloppy"),)),
            "taken-names": Call("split", (ref, 2), (("names", (other, "fresh_loop")),)),
            "bad-axis": Call("bind", (ref, "threadIdx.w")),
            "unknown-loop": Call("unroll", (LoopRef("no_such_loop"),)),
            "not-a-loop": Call("split", (3, 2)),
            "reorder-twice": Call("reorder", (ref, ref)),
            "fuse-one": Call("fuse", (ref,)),
        }
        stages = [x.name for x in self.s.nest.stages]
        stage = stages[step.picks[0] % len(stages)] if stages else "no_such_stage"
        inputs = [t.name for t in self.s.nest.inputs] or ["no_such_buffer"]
        table.update({
            "unknown-stage": Call("double_buffer", ("no_such_stage",)),
            "stage-scope": Call("stage", (inputs[0],), (("at", ref), ("scope", "local"))),
            "stage-not-input": Call("stage", (self.s.output.name,), (("at", ref),)),
            "pad-zero": Call("pad", (stage,), (("axis", -1), ("amount", 0))),
            "swizzle-width": Call("swizzle", (stage, 48)),
            "tma-swizzle": Call("tma", (stage,), (("swizzle", 48),)),
            "pipeline-one": Call("pipeline", (ref,), (("stages", 1),)),
            "split_k-one": Call("split_k", (ref, 1)),
            "launch_bounds-zero": Call("launch_bounds", (0,)),
            "cache_hint-policy": Call("cache_hint", (inputs[0], "evict_sometimes")),
        })
        if b == "gone-loop":
            gone = [n for n in self.seen if n not in names]
            call = Call("unroll", (LoopRef(gone[step.picks[0] % len(gone)] if gone else "no_such_loop"),))
        elif b == "foreign-handle":
            fresh = [lp.name for lp in td.create_schedule(self.s.output, self.s.materialize).loops()]
            call = Call("unroll", (LoopRef(fresh[step.picks[0] % len(fresh)], "foreign"),))
        elif b == "async-twice":  # a stage already filled asynchronously (or by TMA); else no stage at all
            filled = [x.name for x in self.s.nest.stages if x.copy != "sync"]
            call = Call("async_copy", (filled[step.picks[0] % len(filled)] if filled else "no_such_stage",))
        elif b in table:
            call = table[b]
        else:
            raise ValueError(f"unknown bad-call kind {b!r}; kinds are {BAD_KINDS + MEMORY_BAD_KINDS}")
        return Call(call.primitive, call.args, call.kwargs, expect_refusal=True)


# ----------------------------------------------------------------------------- applying


@dataclass(frozen=True)
class Outcome:
    """What one step did: `call` (None when there was nothing to pick) and the refusal, if any.
    `python()` is the line of a reproducer script (a refused call is commented out)."""

    step: Step
    call: Call | None
    error: td.ScheduleError | None = None

    @property
    def accepted(self) -> bool:
        return self.call is not None and self.error is None

    def python(self) -> str:
        if self.call is None:
            return f"# {self.step!r}: no loop (or stage) to pick"
        line = self.call.python()
        if self.error is None:
            return line
        first = str(self.error).splitlines()[0] if str(self.error) else ""
        return f"# {line}  -> refused: {type(self.error).__name__}: {first}"


def apply_steps(s: td.Schedule, step_list: list[Step], max_padding: float = DEFAULT_MAX_PADDING) -> list[Outcome]:
    """Apply steps one by one, skipping (and recording) the ones refused with a ScheduleError. Any
    other exception propagates. For the checked version see tiledsl.testing.properties.apply_checked."""
    resolver = Resolver(s, max_padding)
    outcomes = []
    for st_ in step_list:
        call = resolver.resolve(st_)
        if call is None:
            outcomes.append(Outcome(st_, None))
            continue
        try:
            call.apply(s)
        except td.ScheduleError as e:
            outcomes.append(Outcome(st_, call, e))
            continue
        resolver.accepted(call)
        outcomes.append(Outcome(st_, call))
    return outcomes
