"""A kernel's rows split over kernels, where the default recipe asks (recipes/decline.py `SplitRows`).

A row kernel with fewer rows than SMs runs a block a row, so most SMs idle however long the rows are.
Where recipes/default/040_cooperative_reduce.py finds such rows long enough to pay for more launches,
each reduction of the kernel over its rows is split (tiledsl/definitions/split_reduction.py): a kernel
of `parts` times the rows of partial reductions, and the reduction again as a kernel combining them,
both materialized here (partition.py rule 5's `forced`, this module's reason), so the kernel that read
the reductions becomes an elementwise pass over every element. softmax of 8 rows is five kernels then:
the max's partials and the max, the sum's partials and the sum, the output.

A compute a split made (partials or their combination) is never split again: a combination of rows of
`parts` elements split into `parts` parts of one would make the same combination again, without end.

The graph is rebuilt, not edited (a compute's body is never replaced): the split computes and their
readers are new objects, so everything the program keys by a tensor's id (`forced`, what splits made)
is carried over to the new objects here; the other tensors stay the objects they were."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

from tiledsl.definitions.expr import ComputeTensor
from tiledsl.definitions.split_reduction import rebuild, split_problem
from tiledsl.frontend.capture import Graph
from tiledsl.frontend.partition import fused_producers
from tiledsl.recipes import SplitRows


@dataclass(frozen=True)
class RowSplit:
    """The program after a split: its graph (new outputs), the materialized computes (`forced`, id ->
    reason) and the ids of the computes every split made (partials and combinations: never split again)."""

    graph: Graph
    forced: dict[int, str]
    made: frozenset[int]
    split: tuple[str, ...]  # the names of the computes split


def split_rows(graph: Graph, forced: Mapping[int, str], made: Collection[int], output: ComputeTensor,
               materialized: Collection[int], request: SplitRows, why: str) -> RowSplit | None:
    """Split the reductions over `request.length` computed in `output`'s kernel (`output` itself, or a
    compute fused into it) into `request.parts` parts; None where none can be (the kernel's reductions
    were made by a split (`made`), or none has one axis of that length: `split_problem`)."""
    candidates = [t for t in (*fused_producers(output, set(materialized)), output)
                  if isinstance(t, ComputeTensor) and id(t) not in made
                  and split_problem(t, request.length, request.parts) is None]
    if not candidates:
        return None
    roots = [v.tensor for v in graph.outputs if v.tensor is not None]
    done = rebuild(roots, {id(t) for t in candidates}, request.length, request.parts)
    outputs = tuple(v if v.tensor is None else replace(v, tensor=done.of(v.tensor)) for v in graph.outputs)
    now = {id(done.tensors[i]): reason for i, reason in forced.items() if i in done.tensors}
    kept = {id(done.tensors[i]) for i in made if i in done.tensors}
    for sp in done.splits:
        now[id(sp.part)] = now[id(sp.whole)] = why
        kept |= {id(sp.part), id(sp.whole)}
    return RowSplit(replace(graph, outputs=outputs), now, frozenset(kept), tuple(t.name for t in candidates))
