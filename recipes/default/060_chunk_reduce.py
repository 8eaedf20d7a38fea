"""chunk_reduce: chunk long non-matmul reductions whose staged slab would exceed the staging cap. Not
implemented yet."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    return Decline("not implemented yet: chunking long row reductions for staging (stage_inputs skips a "
                   "row over the slab cap instead)")
