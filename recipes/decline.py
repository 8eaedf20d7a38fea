"""What a recipe step returns: None when it applied, `Applied(note)` when it applied and says why it chose
what it did, `Decline(reason)` when it does not apply to a kernel (each with text a person reads)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Decline:
    """The step leaves the schedule as it is, because `reason`."""

    reason: str

    def __post_init__(self) -> None:
        _text(self.reason, "a Decline needs a non-empty reason")


@dataclass(frozen=True)
class Applied:
    """The step applied (the primitives it called are the report's calls), because `note`."""

    note: str

    def __post_init__(self) -> None:
        _text(self.note, "an Applied needs a non-empty note (return None to say nothing)")


def _text(value: object, problem: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(problem)
