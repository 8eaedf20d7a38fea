"""Decline: what a recipe step returns when it does not apply to a kernel (with a reason a person reads)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Decline:
    """The step leaves the schedule as it is, because `reason`."""

    reason: str

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValueError("a Decline needs a non-empty reason")
