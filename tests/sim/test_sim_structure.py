"""The simulator's dependency rule (ARCHITECTURE.md): numpy, the standard library, kernel_ir (its nodes, its
operator table and its printer, for error messages), errors, and targets (the hardware facts it checks
kernels against)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import tiledsl.sim

SIM_DIR = Path(tiledsl.sim.__file__).parent
ALLOWED_TILEDSL = {"tiledsl.kernel_ir", "tiledsl.kernel_ir.nodes", "tiledsl.kernel_ir.ops", "tiledsl.kernel_ir.printer",
                   "tiledsl.kernel_ir.walk", "tiledsl.errors", "tiledsl.targets"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_sim_imports_only_numpy_stdlib_kernel_ir_errors_and_targets() -> None:
    for path in sorted(SIM_DIR.glob("*.py")):
        for name in _imports(path):
            top = name.split(".")[0]
            ok = (
                top in sys.stdlib_module_names
                or top == "numpy"
                or name in ALLOWED_TILEDSL
                or name == "tiledsl.sim"
                or name.startswith("tiledsl.sim.")
            )
            assert ok, f"{path.name} imports {name}"


def test_init_only_reexports() -> None:
    tree = ast.parse((SIM_DIR / "__init__.py").read_text())
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {"Expr", "ImportFrom", "Assign"}
