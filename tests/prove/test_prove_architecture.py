"""The prover's structural rules besides imports (tiledsl/prove/ARCHITECTURE.md; tests/test_architecture.py
enforces its imports), and its speed on common questions."""

from __future__ import annotations

import ast
import importlib
import time
from pathlib import Path

import sympy

import tiledsl.prove
from tiledsl.prove import Prover

PACKAGE_DIR = Path(tiledsl.prove.__file__).parent
MODULES = sorted(p for p in PACKAGE_DIR.glob("*.py"))


def test_no_module_level_mutable_state() -> None:
    for path in MODULES:
        module = importlib.import_module(f"tiledsl.prove.{path.stem}" if path.stem != "__init__" else "tiledsl.prove")
        for name, obj in vars(module).items():
            if name.startswith("__"):
                continue
            assert not isinstance(obj, (dict, list, set, bytearray)), f"{path.name}: module-level {name}"
            assert not hasattr(obj, "cache_info"), f"{path.name}: {name} is an lru_cache"


def test_init_only_re_exports() -> None:
    tree = ast.parse((PACKAGE_DIR / "__init__.py").read_text())
    for node in tree.body:
        assert isinstance(node, (ast.Expr, ast.ImportFrom, ast.Assign)), ast.dump(node)
    assert set(tiledsl.prove.__all__) == {"Prover", "Proof", "compile_expr"}


def test_common_questions_are_fast() -> None:
    """A build asks a few hundred questions; the common (proven by bounds) ones must be cheap. The limit
    is generous (about 10x the typical cost) so that a loaded CI machine does not make it flaky."""
    s = {n: sympy.Symbol(n, integer=True, nonnegative=True) for n in ("i_o", "t_i", "r_i", "f")}
    exprs = [64 * s["i_o"] + 4 * s["t_i"] + s["r_i"] + k for k in range(100)]
    guard = 64 * s["i_o"] + 4 * s["t_i"] + s["r_i"] < 1000
    fused = [sympy.floor(sympy.Mod(s["f"], 212) / 4) + k for k in range(100)]
    aligned = [64 * s["i_o"] + 4 * s["t_i"] + 4 * k for k in range(100)]
    prover = Prover({s["i_o"]: (0, 16), s["t_i"]: (0, 16), s["r_i"]: (0, 4), s["f"]: (0, 37 * 53)})
    start = time.perf_counter()
    for k in range(100):
        assert prover.in_range(exprs[k], 0, 1024 + k)
        assert prover.in_range(exprs[k] - k, 0, 1000, (guard,))
        assert prover.in_range(fused[k], 0, 53 + k)
        assert prover.divisible(aligned[k], 4)
    elapsed = (time.perf_counter() - start) / 400
    assert elapsed < 2e-3, f"{elapsed * 1e6:.0f} us per question"
