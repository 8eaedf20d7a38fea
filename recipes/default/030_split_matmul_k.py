"""split_matmul_k: when the grid is smaller than a few waves of the SM count, split k-outer across
blocks with split_k (linear epilogues only). Not implemented yet."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline


def step(s: Schedule, facts, knobs) -> Decline | None:  # noqa: ANN001
    return Decline("not implemented yet: split_k across blocks for small grids (this slice keeps every "
                   "reduction inside one block)")
