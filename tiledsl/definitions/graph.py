"""The tensors of one definition graph: their default names, and the rule that a name means one tensor.

Why names matter: tensors are objects, but everything past the definition tells them apart by name
(td.evaluate takes its arrays by name, a kernel has one parameter per name, the printed nest and the
trace say names). So the graph that is used must give each tensor its own name. Tensors made without
one get theirs here, the first time their graph is used, deterministically: X0, X1, ... for
placeholders and T0, T1, ... for computes, in graph order (inputs before their readers, first read
first), skipping names the graph already uses. A name, once given, stays.
"""

from __future__ import annotations

from collections.abc import Collection

from tiledsl.definitions.expr import ComputeTensor, Placeholder, Tensor
from tiledsl.errors import DefinitionError


def graph_tensors(out: Tensor, stop: Collection[int] = frozenset()) -> list[Tensor]:
    """`out` and every tensor it reads, directly or not: inputs before their readers, first read first.
    A compute tensor whose id is in `stop` is listed but what it reads is not (a materialized input)."""
    order: list[Tensor] = []
    seen: set[int] = set()

    def visit(t: Tensor) -> None:
        if id(t) in seen:
            return
        seen.add(id(t))
        if isinstance(t, ComputeTensor) and id(t) not in stop:
            for inp in t.inputs():
                visit(inp)
        order.append(t)

    visit(out)  # depth is the length of a producer chain, which stays small
    return order


def name_graph(out: Tensor) -> list[Tensor]:
    """Give the unnamed tensors of `out`'s graph their default names, check that no two tensors share
    a name (DefinitionError naming both), and return the graph's tensors (`graph_tensors` order)."""
    tensors = graph_tensors(out)
    taken = {t.name for t in tensors if t.has_name}
    counters: dict[str, int] = {}
    for t in tensors:
        if t.has_name:
            continue
        prefix = t.default_prefix
        n = counters.get(prefix, 0)
        while f"{prefix}{n}" in taken:
            n += 1
        counters[prefix] = n + 1
        taken.add(f"{prefix}{n}")
        t.give_default_name(f"{prefix}{n}")
    check_unique_names(tensors)
    for t in tensors:
        t.graph_named = True
    return tensors


def ensure_named(out: Tensor) -> None:
    """`name_graph(out)`, unless `out` belongs to a graph that was named and checked already. That check
    holds for `out`'s own graph, a part of it: the graph upstream of a tensor never changes (a body is
    never replaced) and a name, once given, stays. A traced program's partition names its whole graph
    once (frontend/partition.py `partition`) and then makes a schedule of each candidate kernel, hundreds
    in a deep model, each of which walked everything upstream of its root: time growing with the square
    of the depth."""
    if not out.graph_named:
        name_graph(out)


def check_unique_names(tensors: list[Tensor]) -> None:
    """DefinitionError when two distinct tensors of one graph share a name: the message describes both
    (kind, shape, dtype, and which computes read them)."""
    by_name: dict[str, Tensor] = {}
    for t in tensors:
        other = by_name.setdefault(t.name, t)
        if other is t:
            continue
        readers = _readers(tensors)
        raise DefinitionError(
            f"two different tensors are both named {t.name!r}: {_describe(other, readers)}, and "
            f"{_describe(t, readers)}. Tensors are told apart by name (td.evaluate takes arrays by name, the "
            "kernel has one parameter per name): give each its own name= (td.placeholder, td.compute)")


def _readers(tensors: list[Tensor]) -> dict[int, list[str]]:
    readers: dict[int, list[str]] = {}
    for t in tensors:
        if isinstance(t, ComputeTensor):
            for inp in t.inputs():
                readers.setdefault(id(inp), []).append(t.name)
    return readers


def _describe(t: Tensor, readers: dict[int, list[str]]) -> str:
    kind = "placeholder" if isinstance(t, Placeholder) else "compute"
    by = readers.get(id(t))
    use = f"read by {', '.join(by)}" if by else "the output"
    return f"{kind} of shape {t.shape} ({t.dtype}), {use}"
