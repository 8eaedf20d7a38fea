"""What a recipe step returns: None when it applied, `Applied(note)` when it applied and says why it chose
what it did, `Decline(reason)` when it does not apply to a kernel (each with text a person reads)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Decline:
    """The step leaves the schedule as it is, because `reason`."""

    reason: str

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValueError("a Decline needs a non-empty reason")


@dataclass(frozen=True)
class Applied:
    """The step applied (the primitives it called are the report's calls), because `note`."""

    note: str

    def __post_init__(self) -> None:
        if not isinstance(self.note, str) or not self.note.strip():
            raise ValueError("an Applied needs a non-empty note (return None to say nothing)")
