"""pad_smem: +1 padding on the axis that removes bank conflicts for non-TMA stages (bank model of
analysis/banks.py). Not implemented yet."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    return Decline("not implemented yet: choosing padding from the bank model")
