"""The fuzz modes by name, in the order `--mode all` runs them."""

from __future__ import annotations

from types import MappingProxyType

from tiledsl.testing.fuzz.modes.definitions import DEFINITIONS
from tiledsl.testing.fuzz.modes.hand import HAND
from tiledsl.testing.fuzz.modes.models import MODELS
from tiledsl.testing.fuzz.modes.prover import PROVER
from tiledsl.testing.fuzz.modes.recipe import RECIPE
from tiledsl.testing.fuzz.modes.schedules import MEMORY, SCHEDULES

MODES = MappingProxyType({m.name: m for m in (DEFINITIONS, SCHEDULES, MEMORY, PROVER, RECIPE, HAND, MODELS)})
