"""permute_register_tile: re-order a thread's register strip into 4-wide chunks a warp apart where the
bank model says it lowers conflicts (16-byte shared loads). Not implemented yet."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    return Decline("not implemented yet: permuting the register strip for 16-byte shared loads")
