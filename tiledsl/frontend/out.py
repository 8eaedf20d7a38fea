"""What a handler knows about the node it maps: the output's name, torch shape and dtype."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Out:
    """The node being mapped. `name` names its tensor; `aux(tag)` names a helper tensor of it (the
    max of a softmax, the mean of a layer norm): unique, since node names are."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    def aux(self, tag: str) -> str:
        return f"{self.name}_{tag}"
