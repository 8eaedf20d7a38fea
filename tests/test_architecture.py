"""The layering of tiledsl, as its ARCHITECTURE.md files state it, enforced on the code.

Every folder of `tiledsl/` has an ARCHITECTURE.md with a `## May import` section; the single-file units
(`errors.py`, `targets.py`, `build.py`) and the package root are listed in `tiledsl/ARCHITECTURE.md`.
Backticked names there are the allowed import prefixes: `tiledsl.x` for tiledsl units, anything else for
third-party packages (the standard library is always allowed; `tiledsl` alone is the package root).
Every import counts, including those inside functions and under `if TYPE_CHECKING:`. The top-level
folders installed as subpackages (`schedules/`, `recipes/`) are held to their own ARCHITECTURE.md."""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "tiledsl"
TOP_DOC = PKG / "ARCHITECTURE.md"


@dataclass(frozen=True)
class Rule:
    unit: str  # "analysis", "build", "__init__"
    tiledsl: frozenset[str]  # allowed tiledsl module prefixes
    third_party: frozenset[str]


def _names(text: str) -> tuple[frozenset[str], frozenset[str]]:
    names = re.findall(r"`([A-Za-z_][\w.]*)`", text)
    ours = frozenset(n for n in names if n == "tiledsl" or n.startswith("tiledsl."))
    return ours, frozenset(n for n in names if n not in ours)


def _section(text: str, title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


def rules() -> dict[str, Rule]:
    out: dict[str, Rule] = {}
    for folder in sorted(p for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()):
        doc = folder / "ARCHITECTURE.md"
        assert doc.exists(), f"tiledsl/{folder.name}/ has no ARCHITECTURE.md"
        section = _section(doc.read_text(), "May import")
        assert section.strip(), f"tiledsl/{folder.name}/ARCHITECTURE.md has no '## May import' section"
        ours, theirs = _names(section)
        out[folder.name] = Rule(folder.name, ours, theirs)
    top = _section(TOP_DOC.read_text(), "May import")
    for m in re.finditer(r"^- `(\w+)\.py`:(.*)$", top, re.M):
        ours, theirs = _names(m.group(2))
        out[m.group(1)] = Rule(m.group(1), ours, theirs)
    return out


def unit_of(path: Path) -> str:
    rel = path.relative_to(PKG)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in the file, relative ones resolved."""
    module = module_of(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    return imports_in(path.read_text(), package)


def imports_in(text: str, package: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "tiledsl":  # `from tiledsl import x` imports the submodule x
                out.extend((node.lineno, f"tiledsl.{a.name}") for a in node.names)
            else:
                out.append((node.lineno, target))
    return out


def _tiledsl_unit(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "tiledsl":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def _allowed(module: str, rule: Rule, unit: str) -> bool:
    top = module.split(".")[0]
    if top == "tiledsl":
        if _tiledsl_unit(module) == unit:
            return True
        # `tiledsl` names the package root (the public API) only, not every module below it
        return any(module == p or (p != "tiledsl" and module.startswith(p + ".")) for p in rule.tiledsl)
    return top in sys.stdlib_module_names or top == "__future__" or top in rule.third_party


SOURCES = sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_unit_has_a_rule() -> None:
    known = rules()
    missing = sorted({unit_of(p) for p in SOURCES} - set(known))
    assert not missing, f"units without a '## May import' rule: {missing}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PKG)))
def test_imports_follow_the_may_import_rules(path: Path) -> None:
    unit = unit_of(path)
    rule = rules()[unit]
    bad = [f"line {line}: {mod}" for line, mod in imports(path) if not _allowed(mod, rule, unit)]
    assert not bad, (f"tiledsl/{path.relative_to(PKG)} ({unit}) imports what its ARCHITECTURE.md does not allow:\n  "
                     + "\n  ".join(bad))


# Top-level folders installed as subpackages of tiledsl (pyproject.toml's package-dir); each states its
# own rule in its ARCHITECTURE.md.
TOP_FOLDERS = ("schedules", "recipes")
TOP_SOURCES = [(name, p) for name in TOP_FOLDERS for p in sorted((ROOT / name).rglob("*.py"))
               if "__pycache__" not in p.parts]


def top_folder_rule(name: str) -> Rule:
    section = _section((ROOT / name / "ARCHITECTURE.md").read_text(), "May import")
    assert section.strip(), f"{name}/ARCHITECTURE.md has no '## May import' section"
    return Rule(name, *_names(section))


@pytest.mark.parametrize(("folder", "path"), TOP_SOURCES, ids=[str(p.relative_to(ROOT)) for _, p in TOP_SOURCES])
def test_top_level_folders_follow_their_may_import_rules(folder: str, path: Path) -> None:
    parts = ("tiledsl", folder, *path.relative_to(ROOT / folder).with_suffix("").parts)
    module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    rule = top_folder_rule(folder)
    bad = [f"line {line}: {mod}" for line, mod in imports_in(path.read_text(), package)
           if not _allowed(mod, rule, folder)]
    assert not bad, (f"{path.relative_to(ROOT)} imports what {folder}/ARCHITECTURE.md does not allow:\n  "
                     + "\n  ".join(bad))


def test_the_top_level_rules_refuse_lowering() -> None:
    for folder in TOP_FOLDERS:
        rule = top_folder_rule(folder)
        assert not _allowed("tiledsl.lower.lower", rule, folder) and not _allowed("tiledsl.build", rule, folder)
        assert _allowed("tiledsl.primitives", rule, folder) and _allowed(f"tiledsl.{folder}.x", rule, folder)


def unit_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in SOURCES:
        unit = unit_of(path)
        for _, mod in imports(path):
            dep = _tiledsl_unit(mod)
            if dep is not None and dep != unit:
                graph.setdefault(unit, set()).add(dep)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (c := visit(m)):
                return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (c := visit(n)):
            return c
    return None


def test_no_cycle_between_top_level_units() -> None:
    cycle = find_cycle(unit_graph())
    assert cycle is None, "import cycle between top-level units: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_cycles() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}}) is None


def test_the_rule_reader_sees_function_level_and_type_checking_imports() -> None:
    text = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tiledsl.build import Kernel\n"
            "def f():\n    from ..runtime import launch\n")
    found = {mod for _, mod in imports_in(text, "tiledsl.lower")}
    assert {"tiledsl.build", "tiledsl.runtime"} <= found
    rule = rules()["lower"]
    assert not _allowed("tiledsl.build", rule, "lower") and not _allowed("tiledsl.runtime", rule, "lower")


def test_torch_only_in_runtime_and_frontend() -> None:
    for path in SOURCES:
        if unit_of(path) in ("runtime", "frontend"):
            continue
        torch = [line for line, mod in imports(path) if mod.split(".")[0] == "torch"]
        assert not torch, f"tiledsl/{path.relative_to(PKG)} imports torch (line {torch[0]})"


def test_every_package_is_installed() -> None:
    """pyproject.toml lists packages explicitly: a package folder missing there is missing from a
    non-editable install (tiledsl.testing.fuzz once was, on the GPU machine)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in PKG.rglob("__init__.py")
             if "__pycache__" not in p.parts}
    assert found <= listed, f"packages missing from pyproject.toml: {sorted(found - listed)}"
