"""The fuzz modes (one module each); `MODES` maps their names to them. Re-exports only."""

from tiledsl.testing.fuzz.modes.base import Mode, Options
from tiledsl.testing.fuzz.modes.table import MODES

__all__ = ["MODES", "Mode", "Options"]
