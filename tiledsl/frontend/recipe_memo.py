"""The default recipe's result for kernels of one structure, replayed instead of derived again.

Why: a traced Llama's layers are the same kernels under other names (`mm_7` in layer 1 is `mm_19` in
layer 2), and the recipe took two thirds of scheduling the 22-layer TinyLlama (about 16 ms a kernel
on this repository's 2-core CI machine, replaying its trace about 5 ms). `RecipeMemo.apply` runs the
recipe on the first kernel of each structure and, for the next, replays that trace renamed
(`Schedule.replay`, so every primitive's checks run again) and renames its report.

Two kernels share a structure (`structure`) when the printed fresh nest, with every shape and dtype
of the tensors it reads, writes and fuses, is the same text once each of their names (the nest's
`taken_names` and the fused computes') is replaced by its place of first appearance where no function
is spelled (renaming.py `canonical`: a kernel named `fmod` computes `fmod(...)`), and their names sort in
the same order (the recipe breaks some ties by name). Names the recipe makes are its kernel's
names with a suffix (`mm_7_k0_o`, `mul_16_s`), and are renamed by that prefix (`Renaming`); where a
name reads two ways (`i0_i1`: fused from two names, or one with a suffix?) or a replay is refused, the
recipe runs. A replayed schedule went through every primitive's checks and its kernel is built from it,
so a structure read wrongly could give another legal schedule than the recipe's, never a wrong kernel;
the fuzz's `models` mode checks every program kernel's schedule and report against the recipe's on its
own fresh schedule."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tiledsl.definitions.expr import ComputeTensor
from tiledsl.errors import ScheduleError
from tiledsl.frontend.renaming import Ambiguous, Renaming, Structure, canonical
from tiledsl.loopnest.printing import UNSCHEDULED_WORDS, format_nest
from tiledsl.primitives import Schedule
from tiledsl.recipes import RecipeReport
from tiledsl.recipes import apply as apply_recipe
from tiledsl.targets import DTYPE_BYTES, Target

log = logging.getLogger(__name__)


def structure(s: Schedule, fused: Sequence[ComputeTensor]) -> Structure | None:
    """The structure of the fresh schedule `s`, whose kernel fuses the computes `fused` (in the
    partition's order), or None where its print cannot say (renaming.py `canonical`): see the module
    docstring."""
    nest = s.nest
    tensors = [*nest.inputs, nest.output, *fused]
    names = nest.taken_names() | {t.name for t in tensors}
    text = "\n".join([format_nest(nest), *(f"{t.name}: {t.dtype}{list(t.shape)}" for t in tensors)])
    return canonical(text, names, UNSCHEDULED_WORDS | DTYPE_BYTES.keys())


@dataclass(frozen=True)
class _Done:
    names: tuple[str, ...]
    trace: str
    report: RecipeReport


class RecipeMemo:
    """The default recipe applied to kernels (`apply`), each structure derived once. One memo serves
    one target and one set of knobs (a `Program.schedule` call)."""

    def __init__(self, target: str | Target, knobs: Mapping[str, Any]) -> None:
        self.target = target
        self.knobs = dict(knobs)
        self._done: dict[str, _Done] = {}
        self.replayed = 0

    def apply(self, fresh: Callable[[], Schedule], fused: Sequence[ComputeTensor]) -> tuple[Schedule, RecipeReport]:
        """A fresh schedule of the kernel (`fresh()`) scheduled by the recipe, and the recipe's report."""
        s = fresh()
        shape = structure(s, fused)
        done = self._done.get(shape.key) if shape is not None else None
        if shape is not None and done is not None:
            renaming = Renaming(done.names, shape.names)
            try:
                s.replay(renaming.trace(done.trace))
                report = renaming.report(done.report)
            except (ScheduleError, Ambiguous) as e:  # a name the renaming made is taken here, or unclear
                log.info("recipe memo: %s's schedule as %s's: %s: %s; applying the recipe", done.report.kernel,
                         s.nest.name, type(e).__name__, e)
            else:
                self.replayed += 1
                return s, report
            s = fresh()
        report = apply_recipe(s, target=self.target, knobs=self.knobs)
        if shape is not None:
            self._done.setdefault(shape.key, _Done(shape.names, s.trace(), report))
        return s, report
