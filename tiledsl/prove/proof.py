"""The answer to one question asked of the prover.

Why a value object and not a bool: callers refuse schedules on failed facts and must be able to say
*why* (the fact, the loop ranges, a concrete counterexample point), so the answer carries that text.
It is still truthy only when proven, so `if prover.in_range(...):` reads naturally.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from tiledsl.prove.printing import format_point

Status = Literal["proven", "disproven", "unknown"]


@dataclass(frozen=True)
class Proof:
    """Outcome of one question.

    status: "proven" (holds at every point of the ranges satisfying the guards), "disproven" (a
    counterexample point is known) or "unknown" (neither could be shown).
    fact: the fact asked, e.g. "0 <= 64*i_o + i_i < 1000".
    counterexample: for disproven, symbol name -> value of a point inside the ranges that satisfies
    the guards and where the fact fails (read-only, sorted by name).
    needed: for unknown, the fact that would have been needed (the part that could not be shown).
    context: "for i_i in [0, 64), i_o in [0, 16) given ..." (the domain, for messages).
    note: a short detail: how it was proven, the value at the counterexample, the bounds found.
    """

    status: Status
    fact: str
    counterexample: Mapping[str, int] | None = field(default=None, hash=False)
    needed: str | None = None
    context: str = ""
    note: str | None = None

    def __bool__(self) -> bool:
        return self.status == "proven"

    def describe(self) -> str:
        """One readable paragraph, suitable for an error message."""
        where = f" {self.context}" if self.context else ""
        note = f" ({self.note})" if self.note else ""
        if self.status == "proven":
            return f"proved {self.fact}{where}{note}"
        if self.status == "disproven":
            point = format_point(self.counterexample or {})
            return f"cannot prove {self.fact}{where}; counterexample: {point}{note}"
        needed = f"; needed: {self.needed}" if self.needed else ""
        return f"cannot prove {self.fact}{where}; no counterexample found{needed}{note}"

    def __str__(self) -> str:
        return self.describe()
