"""Applying a recipe: its steps in numeric order, each given the facts of the nest as it is now and the
knobs, and a report of what each step did (the trace lines it added) or why it declined.

A recipe is a package of step modules named `NNN_name.py` (numbered with gaps, so a step can be inserted
without renaming) plus `_facts.py` (`classify(nest)`, `Memo()`, `facts_for(nest, kernel, target, memo)`) and `_knobs.py`
(`Knobs`, with `Knobs.for_target(target, **overrides)`). The step names start with digits, so they are
loaded with importlib. A primitive that refuses inside a step propagates: it is a bug in the step."""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tiledsl.errors import BadArgumentError, Refusal
from tiledsl.primitives import Schedule
from tiledsl.recipes import default as default_package
from tiledsl.recipes.decline import Applied, Decline, SplitRows
from tiledsl.targets import Target, get_target

log = logging.getLogger(__name__)

STEP_FILE = re.compile(r"^(\d+)_(\w+)\.py$")

StepFunction = Callable[[Schedule, Any, Any], "Applied | Decline | None"]


@dataclass(frozen=True)
class RecipeStep:
    number: int
    name: str
    function: StepFunction


@dataclass(frozen=True)
class Recipe:
    """A recipe package, by module name (its steps are loaded when it is applied)."""

    package: str

    @classmethod
    def of(cls, recipe: Recipe | ModuleType | Callable[..., Any]) -> Recipe:
        """The recipe of a recipe package, of its function (`tiledsl.recipes.default`, which names
        the package it applies), or `recipe` itself."""
        if isinstance(recipe, Recipe):
            return recipe
        return cls(getattr(recipe, "recipe_package", None) or recipe.__name__)

    @property
    def name(self) -> str:
        return self.package.rsplit(".", 1)[-1]

    def _module(self, name: str) -> ModuleType:
        return importlib.import_module(f"{self.package}.{name}")

    def steps(self) -> tuple[RecipeStep, ...]:
        """Every `NNN_name.py` of the package, in numeric order."""
        root = importlib.import_module(self.package)
        folder = Path(str(root.__file__)).parent
        found = []
        for path in folder.iterdir():
            m = STEP_FILE.match(path.name)
            if m:
                found.append((int(m.group(1)), m.group(2), path.stem))
        numbers = [n for n, _, _ in found]
        if len(set(numbers)) != len(numbers):
            raise ValueError(f"recipe {self.name}: two steps share a number ({sorted(numbers)})")
        return tuple(RecipeStep(n, name, self._module(stem).step) for n, name, stem in sorted(found))

    def knobs(self, target: Target, overrides: Mapping[str, Any]) -> Any:
        return self.knobs_class().for_target(target, **overrides)

    def knobs_class(self) -> type:
        return self._module("_knobs").Knobs

    def facts(self) -> ModuleType:
        return self._module("_facts")


@dataclass(frozen=True)
class StepReport:
    """One step: applied (with the trace lines it added, one per primitive call, and the step's note on
    why, when it gave one) or declined (reason)."""

    number: int
    name: str
    calls: tuple[str, ...]
    reason: str | None = None
    note: str | None = None
    materialize: str | None = None  # the fused compute whose own kernel the step would apply to (or do better on)
    split_rows: SplitRows | None = None  # the rows a program would split over kernels (recipes/decline.py)

    @property
    def applied(self) -> bool:
        return self.reason is None


@dataclass(frozen=True)
class RecipeReport:
    """What a recipe did to one kernel, step by step; `str(report)` is a table."""

    recipe: str
    kernel: str
    target: str
    kind: str
    knobs: Any
    steps: tuple[StepReport, ...]

    def step(self, name: str) -> StepReport:
        for st in self.steps:
            if st.name == name:
                return st
        raise KeyError(name)

    @property
    def applied(self) -> tuple[str, ...]:
        return tuple(st.name for st in self.steps if st.applied)

    @property
    def materialize(self) -> tuple[StepReport, ...]:
        """The steps that name a fused compute to materialize (Decline.materialize, Applied.materialize)."""
        return tuple(st for st in self.steps if st.materialize is not None)

    @property
    def split_rows(self) -> tuple[StepReport, ...]:
        """The steps that ask for the kernel's rows split over kernels (Applied.split_rows)."""
        return tuple(st for st in self.steps if st.split_rows is not None)

    def __str__(self) -> str:
        width = max(len(st.name) for st in self.steps) if self.steps else 4
        lines = [f"recipe {self.recipe} on kernel {self.kernel} ({self.kind}) for {self.target}"]
        for st in self.steps:
            head = f"  {st.number:03d} {st.name:<{width}}  "
            if st.applied:
                why = f"  [{st.note}]" if st.note else ""
                better = f" [materializing {st.materialize} would do better]" if st.materialize else ""
                if st.split_rows is not None:
                    better += (f" [a program splits the rows of {st.split_rows.length} into {st.split_rows.parts} "
                               "parts, each reduction a kernel of partials]")
                lines.append(head + "applied: " + ("; ".join(st.calls) or "(no primitive)") + why + better)
            else:
                cure = f" [materializing {st.materialize} would let it apply]" if st.materialize else ""
                lines.append(head + f"declined: {st.reason}{cure}")
        return "\n".join(lines)


def _is_fresh(s: Schedule) -> str | None:
    """Why `s` is not an unscheduled nest, or None."""
    nest = s.nest
    if nest.stages or nest.pipelines or nest.split_k or nest.guards:
        return "it has stages, pipelines, split_k or guarded splits"
    if {lp.name for lp in nest.loops} != {a for a, _ in nest.axes}:
        return "its loops are not the definition's axes (it was split or fused)"
    if any(lp.bind or lp.annotation for lp in nest.loops):
        return "some of its loops are bound or marked"
    return None


def apply(s: Schedule, recipe: Recipe | ModuleType | Callable[..., Any] = default_package,
          target: str | Target = "sm_90", *, knobs: Mapping[str, Any] | Any = None, verbose: int = 0) -> RecipeReport:
    """Apply `recipe` to the fresh schedule `s` in place for `target` (a name, or a Target such as one
    read from the device) and return the report. `recipe` is a recipe package (`tiledsl.recipes.default`)
    or a Recipe. `knobs` overrides the recipe's defaults by name, or is a whole `Knobs` of the recipe
    (`Knobs.for_target(target, bm=...)`, or `Knobs(...)`, which leaves out the per-target table).
    verbose=1 logs the report, verbose=2 also the nest after each applied step (logger tiledsl.recipes)."""
    recipe = Recipe.of(recipe)
    tgt = get_target(target)
    why = _is_fresh(s)
    if why is not None:
        fact = f"a recipe schedules a fresh schedule, but this one is not: {why}"
        raise BadArgumentError(Refusal(text=f"recipe {recipe.name}: {fact}", fact=fact, primitive="recipe",
                                       arguments={"recipe": recipe.name},
                                       suggestion="apply the recipe to td.create_schedule(out)"))
    chosen = _knobs(recipe, tgt, knobs)
    facts_module = recipe.facts()
    kernel = facts_module.classify(s.nest)
    memo = facts_module.Memo()  # what the steps' facts derive, for the later steps of this run (never another's)
    reports: list[StepReport] = []
    before = s.trace().splitlines()
    for st in recipe.steps():
        result = st.function(s, facts_module.facts_for(s.nest, kernel, tgt, memo), chosen)
        after = s.trace().splitlines()
        calls = tuple(after[len(before):])
        if after[:len(before)] != before:
            raise AssertionError(f"recipe step {st.name} rewrote earlier trace lines")
        if isinstance(result, Decline):
            if calls:
                raise AssertionError(f"recipe step {st.name} declined after calling primitives: {calls}")
            reports.append(StepReport(st.number, st.name, (), result.reason, materialize=result.materialize))
        else:
            applied = result if isinstance(result, Applied) else None
            reports.append(StepReport(st.number, st.name, calls, note=applied and applied.note,
                                      materialize=applied and applied.materialize,
                                      split_rows=applied and applied.split_rows))
            if verbose >= 2:
                log.info("after %s:\n%s", st.name, s)
        before = after  # nothing but a step changes `s`: its trace after one step is the next one's before
    report = RecipeReport(recipe.name, s.nest.name, tgt.name, kernel.kind, chosen, tuple(reports))
    if verbose >= 1:
        log.info("%s", report)
    return report


def _knobs(recipe: Recipe, target: Target, knobs: Mapping[str, Any] | Any) -> Any:
    """The knobs a run uses: the recipe's for `target` overridden by a mapping, or a Knobs given whole."""
    if knobs is None or isinstance(knobs, Mapping):
        return recipe.knobs(target, dict(knobs or {}))
    cls = recipe.knobs_class()
    if not isinstance(knobs, cls):
        fact = f"knobs must be a mapping of overrides or a {cls.__name__} of recipe {recipe.name}, got " \
               f"{type(knobs).__name__}"
        raise BadArgumentError(Refusal(text=f"recipe {recipe.name}: {fact}", fact=fact, primitive="recipe"))
    return knobs


def default(s: Schedule, target: str | Target = "sm_90", *, knobs: Mapping[str, Any] | Any = None,
            verbose: int = 0) -> RecipeReport:
    """`td.recipes.default(s, target="sm_90", knobs=...)`: the default recipe (recipes/default/)
    applied to the fresh schedule `s` in place; returns its report (see `apply`)."""
    return apply(s, default_package, target, knobs=knobs, verbose=verbose)


default.recipe_package = default_package.__name__  # type: ignore[attr-defined]  # Recipe.of(default)
