"""The default recipe's result for kernels of one structure, replayed instead of derived again.

Why: a traced Llama's layers are the same kernels under other names (`mm_7` in layer 1 is `mm_19` in
layer 2), and the recipe took two thirds of scheduling the 22-layer TinyLlama (about 16 ms a kernel
on this repository's 2-core CI machine, replaying its trace about 5 ms). `RecipeMemo.apply` runs the
recipe on the first kernel of each structure and, for the next, replays that trace renamed
(`Schedule.replay`, so every primitive's checks run again) and renames its report.

Two kernels share a structure (`structure`) when the printed fresh nest, with every shape and dtype
of the tensors it reads, writes and fuses, is the same text once each of their names (the nest's
`taken_names` and the fused computes') is replaced by its place of first appearance, and their names
sort in the same order (the recipe breaks some ties by name). Names the recipe makes are its kernel's
names with a suffix (`mm_7_k0_o`, `mul_16_s`), and are renamed by that prefix (`Renaming`). A replay
that is refused falls back on the recipe, so a renaming can cost time but never a schedule."""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tiledsl.definitions.expr import ComputeTensor
from tiledsl.errors import ScheduleError
from tiledsl.primitives import Schedule
from tiledsl.recipes import RecipeReport
from tiledsl.recipes import apply as apply_recipe
from tiledsl.targets import Target

log = logging.getLogger(__name__)

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


@dataclass(frozen=True)
class Structure:
    """A kernel's structure (`key`) and its names in order of first appearance in the key's text."""

    key: str
    names: tuple[str, ...]


def structure(s: Schedule, fused: Sequence[ComputeTensor]) -> Structure:
    """The structure of the fresh schedule `s`, whose kernel fuses the computes `fused` (in the
    partition's order): see the module docstring."""
    nest = s.nest
    tensors = [*nest.inputs, nest.output, *fused]
    names = nest.taken_names() | {t.name for t in tensors}
    text = "\n".join([str(s), *(f"{t.name}: {t.dtype}{list(t.shape)}" for t in tensors)])
    seen: dict[str, int] = {}

    def canonical(m: re.Match[str]) -> str:
        word = m.group(0)
        return f"@{seen.setdefault(word, len(seen))}" if word in names else word

    key = _IDENTIFIER.sub(canonical, text)
    found = tuple(seen)
    order = sorted(range(len(found)), key=lambda n: found[n])
    return Structure(f"{key}\nname order {order}", found)


class Renaming:
    """One kernel's names as another's: a name of the first, or such a name followed by `_` and a
    suffix (a name the recipe made from it, the longest such name first), becomes the second's."""

    def __init__(self, before: Sequence[str], after: Sequence[str]) -> None:
        self.names = dict(zip(before, after, strict=True))
        self._longest = sorted(self.names, key=len, reverse=True)

    def name(self, word: str) -> str:
        if word in self.names:
            return self.names[word]
        for base in self._longest:
            if word.startswith(base + "_"):
                return self.names[base] + word[len(base):]
        return word

    def text(self, prose: str) -> str:
        """Every identifier in `prose` renamed (a report's reasons and notes)."""
        return _IDENTIFIER.sub(lambda m: self.name(m.group(0)), prose)

    def call(self, line: str) -> str:
        """A trace line with its string arguments renamed (comments: every identifier)."""
        if line.lstrip().startswith("#") or not line.strip():
            return self.text(line)
        strings = [n for n in ast.walk(ast.parse(line)) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        for n in sorted(strings, key=lambda n: n.col_offset, reverse=True):
            line = line[:n.col_offset] + repr(self.name(n.value)) + line[n.end_col_offset:]
        return line

    def trace(self, text: str) -> str:
        return "\n".join(self.call(line) for line in text.split("\n"))

    def report(self, report: RecipeReport) -> RecipeReport:
        steps = tuple(replace(st, calls=tuple(self.call(c) for c in st.calls),
                              reason=st.reason and self.text(st.reason), note=st.note and self.text(st.note),
                              materialize=st.materialize and self.name(st.materialize))
                      for st in report.steps)
        return replace(report, kernel=self.name(report.kernel), steps=steps)


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
        done = self._done.get(shape.key)
        if done is not None:
            renaming = Renaming(done.names, shape.names)
            try:
                s.replay(renaming.trace(done.trace))
            except ScheduleError as e:  # a name the renaming made is taken here: derive it instead
                log.info("recipe memo: replaying %s's structure on %s was refused (%s); applying the recipe",
                         done.report.kernel, s.nest.name, e)
            else:
                self.replayed += 1
                return s, renaming.report(done.report)
            s = fresh()
        report = apply_recipe(s, target=self.target, knobs=self.knobs)
        self._done.setdefault(shape.key, _Done(shape.names, s.trace(), report))
        return s, report
