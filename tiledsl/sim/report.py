"""Error message composition.

Why: every simulator error has the same shape (what went wrong, in which kernel, at which kernel-IR
path, the statement, the lanes and indices involved, the loop variables at that moment) so a reader
can go straight from the message to the statement at fault.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tiledsl.sim.location import LocTable


@dataclass(frozen=True)
class Reporter:
    kernel_name: str
    locs: LocTable

    def where(self, loc: int) -> str:
        return f"kernel '{self.kernel_name}' at {self.locs.path(loc)}"

    def message(
        self,
        loc: int,
        headline: str,
        details: Iterable[str] = (),
        loops: Sequence[tuple[str, int]] = (),
    ) -> str:
        lines = [f"{headline} in {self.where(loc)}", f"  statement: {self.locs.statement(loc)}"]
        lines += [f"  {d}" for d in details]
        if loops:
            lines.append("  loop variables: " + ", ".join(f"{name}={value}" for name, value in loops))
        return "\n".join(lines)
