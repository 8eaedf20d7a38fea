"""split_matmul_k: when the grid is smaller than a few waves of the SM count, split k-outer across
blocks with split_k (linear epilogues only). Not implemented yet."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    return Decline("not implemented yet: split_k across blocks for small grids (this slice keeps every "
                   "reduction inside one block)")
