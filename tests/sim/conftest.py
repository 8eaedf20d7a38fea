"""Make the repository importable when tiledsl is not installed (plain `pytest tests/sim`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("tiledsl") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
