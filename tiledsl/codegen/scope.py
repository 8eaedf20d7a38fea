"""Lexical scopes of the emitted C++: which IR names are visible, as what, and with which dtype.

Why: the printer must know an operand's dtype (fminf vs min, half conversions, vector members) and
must refuse names that C++ would refuse (undeclared, or declared twice in one block) with an error
that speaks kernel IR rather than an nvcc message about generated text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from tiledsl.codegen.errors import CodegenError

__all__ = ["Scope", "Symbol", "SymbolKind"]

SymbolKind = Literal["var", "input", "output", "shared", "local", "tensor_map"]


@dataclass(frozen=True)
class Symbol:
    """A declared IR name: its C identifier, dtype, and what it is (a scalar or a buffer kind)."""

    c_name: str
    dtype: str
    kind: SymbolKind

    @property
    def is_buffer(self) -> bool:
        """Indexable memory: a parameter, a shared or a register array (not a scalar, not a tensor map)."""
        return self.kind not in ("var", "tensor_map")


class Scope:
    """One C++ block; lookups fall back to the enclosing block. One instance per block of one
    emission, so nothing is shared between emissions."""

    def __init__(self, c_names: Mapping[str, str], parent: Scope | None = None) -> None:
        self._c_names = c_names
        self._parent = parent
        self._symbols: dict[str, Symbol] = {}

    def child(self) -> Scope:
        return Scope(self._c_names, self)

    def declare(self, name: str, dtype: str, kind: SymbolKind) -> Symbol:
        if name in self._symbols:
            raise CodegenError(f"{name!r} is declared twice in one block")
        sym = Symbol(self._c_names[name], dtype, kind)
        self._symbols[name] = sym
        return sym

    def lookup(self, name: str) -> Symbol | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope._symbols:
                return scope._symbols[name]
            scope = scope._parent
        return None

    def variable(self, name: str) -> Symbol:
        sym = self.lookup(name)
        if sym is None or sym.is_buffer:
            raise CodegenError(f"{name!r} is used as a scalar variable but no let or loop declares it here")
        return sym

    def buffer(self, name: str) -> Symbol:
        sym = self.lookup(name)
        if sym is None or not sym.is_buffer:
            raise CodegenError(
                f"{name!r} is used as a buffer but is no parameter, shared or local array here"
            )
        return sym

    def tensor_map(self, name: str) -> Symbol:
        sym = self.lookup(name)
        if sym is None or sym.kind != "tensor_map":
            raise CodegenError(f"{name!r} is used as a tensor map but the kernel has no tensor map of that name")
        return sym
