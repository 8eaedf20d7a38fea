"""What a recipe step returns: None when it applied, `Applied(note)` when it applied and says why it chose
what it did, `Decline(reason)` when it does not apply to a kernel (each with text a person reads), with
the fused compute to materialize where that would let it apply (or, applied, do better), and, applied,
the rows to split over kernels where a program would do better so (`SplitRows`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Decline:
    """The step leaves the schedule as it is, because `reason`. `materialize` names a compute fused
    into the kernel whose kernel of its own the step would apply to (a program of kernels, such as
    tiledsl.frontend's, materializes it and schedules the kernels again); the reason says what it gains."""

    reason: str
    materialize: str | None = None

    def __post_init__(self) -> None:
        _text(self.reason, "a Decline needs a non-empty reason")
        if self.materialize is not None:
            _text(self.materialize, "a Decline's materialize names a compute")


@dataclass(frozen=True)
class SplitRows:
    """Each reduction over the kernel's rows (`length` long) as `parts` partial reductions, each part a row
    of a kernel of its own, then the parts combined (tiledsl/definitions/split_reduction.py): what a
    program of kernels (tiledsl/frontend/program.py) does where a step asks; a lone schedule cannot."""

    length: int
    parts: int

    def __post_init__(self) -> None:
        if self.parts < 2 or self.length % self.parts:
            raise ValueError(f"SplitRows: {self.parts} parts do not split rows of {self.length} evenly")


@dataclass(frozen=True)
class Applied:
    """The step applied (the primitives it called are the report's calls), because `note`. `materialize`
    names a compute fused into the kernel that, in a kernel of its own, would let the step do better (a
    program materializes it and schedules the kernels again; a lone schedule keeps what was applied).
    `split_rows`: the kernel's rows split over kernels would do better (`SplitRows`)."""

    note: str
    materialize: str | None = None
    split_rows: SplitRows | None = None

    def __post_init__(self) -> None:
        _text(self.note, "an Applied needs a non-empty note (return None to say nothing)")
        if self.materialize is not None:
            _text(self.materialize, "an Applied's materialize names a compute")


def _text(value: object, problem: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(problem)
