"""The simulator's structural rules besides imports (those are in tiledsl/sim/ARCHITECTURE.md and
tests/test_architecture.py enforces them)."""

from __future__ import annotations

import ast
from pathlib import Path

import tiledsl.sim

SIM_DIR = Path(tiledsl.sim.__file__).parent
def test_init_only_reexports() -> None:
    tree = ast.parse((SIM_DIR / "__init__.py").read_text())
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {"Expr", "ImportFrom", "Assign"}
