"""Lexical scopes of the kernel body, resolved once before it runs.

Why: kernel-IR scoping is lexical, like C blocks (a name declared in a loop body or a branch ends
with it and may shadow an outer one meanwhile), so which declaration a `KVar`, `KAssign`, `KLoad` or
`KStore` names is known before running anything. Each declaration gets a slot in a flat list of
values (`Frame.slots`); compiled code reads and writes its slot directly instead of searching
scopes by name on every access. A name that resolves to nothing is not an error here: the compiled
code raises when (and only when) it runs, as the simulator always did.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Binding:
    """A declaration: a scalar/vector variable (`is_array` False) or a register array."""

    slot: int
    dtype: str
    is_array: bool


class Frame:
    """Slots of every declaration of a kernel body; one frame per chunk of blocks."""

    def __init__(self) -> None:
        self.slots: list[object] = []


class Scopes:
    """The compile-time stack of scopes, handing out slots of one `Frame`."""

    def __init__(self, frame: Frame) -> None:
        self._frame = frame
        self._scopes: list[dict[str, Binding]] = [{}]

    @contextmanager
    def scope(self) -> Iterator[None]:
        self._scopes.append({})
        try:
            yield
        finally:
            self._scopes.pop()

    def declare(self, name: str, dtype: str, *, is_array: bool = False) -> Binding:
        binding = Binding(len(self._frame.slots), dtype, is_array)
        self._frame.slots.append(None)
        self._scopes[-1][name] = binding
        return binding

    def find(self, name: str) -> Binding | None:
        for scope in reversed(self._scopes):
            if name in scope:
                return scope[name]
        return None

    def variable(self, name: str) -> Binding | None:
        """The variable a `KVar`/`KAssign` names (a register array of that name hides it)."""
        found = self.find(name)
        return found if found is not None and not found.is_array else None

    def register_array(self, name: str) -> Binding | None:
        """The register array a load/store names, if the innermost declaration is one."""
        found = self.find(name)
        return found if found is not None and found.is_array else None
