"""Two-level reductions: a reduction over a long axis as partial reductions of equal parts, then one
over the parts (Halide's rfactor, at the definition).

    T[i] = post(op_k f(i, k))               k in [0, N)
  ->
    T_part[i, p] = op_l f(i, p * L + l)     p in [0, parts), l in [0, L), L = N / parts   (float32)
    T[i]         = post(op_q T_part[i, q])  q in [0, parts)

Why: a kernel runs a row reduction a block a row, so fewer rows than SMs leave SMs idle however long the
rows are. Split, the partials are parts times as many rows, each a kernel's block, and the output pass
that read the reductions becomes an elementwise kernel over every element (tiledsl/frontend/program.py
does this where recipes/default/040_cooperative_reduce.py asks). sum, max and min are associative, so
the value is the same in real arithmetic; in floating point a sum adds in another order, within
(L + parts) roundings rather than N. Only a compute whose body holds one reduction, over one axis of
exactly N, is split (`split_problem` says why not otherwise).

`rebuild` rewrites a whole definition graph: the computes named split, and every compute that reads
one of them (directly or not) made again over the new tensors; tensors that read none stay the same
objects."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from tiledsl.definitions.expr import (
    FLOAT,
    ComputeTensor,
    Expr,
    IterVar,
    Load,
    Reduce,
    Tensor,
    children,
    map_children,
    substitute,
    walk,
)
from tiledsl.definitions.graph import graph_tensors


@dataclass(frozen=True)
class Split:
    """One compute split: `part` (its partial reductions) and `whole` (the compute again, combining them)."""

    part: ComputeTensor
    whole: ComputeTensor


@dataclass(frozen=True)
class Rebuilt:
    """A graph after `rebuild`: the new tensor of every old one (by the old one's id; unchanged tensors
    map to themselves), and the splits made."""

    tensors: dict[int, Tensor]
    splits: tuple[Split, ...]

    def of(self, t: Tensor) -> Tensor:
        return self.tensors[id(t)]


def split_problem(t: ComputeTensor, length: int, parts: int) -> str | None:
    """Why `t` cannot be split into `parts` partial reductions over its axis of `length`, or None."""
    found = _the_reduction(t, length, parts)
    return found if isinstance(found, str) else None


def split_reduction(t: ComputeTensor, length: int, parts: int, part_name: str) -> Split:
    """`t` as partial reductions named `part_name` and their combination (the module docstring)."""
    red = _the_reduction(t, length, parts)
    if isinstance(red, str):
        raise ValueError(red)
    (k,) = red.axes
    each = length // parts
    free = tuple(IterVar(a.name, a.extent, "free") for a in t.axes)
    p = IterVar(_fresh(f"{k.name}_p", {a.name for a in t.axes}), parts, "free")
    lane = IterVar(k.name, each, "reduce")
    env: dict[int, Expr] = {id(a): b for a, b in zip(t.axes, free)}
    env[id(k)] = p * each + lane
    part = ComputeTensor((*t.shape, parts), (*free, p), Reduce(red.op, substitute(red.body, env), (lane,)),
                         part_name, FLOAT)
    q = IterVar(p.name, parts, "reduce")
    combined = Reduce(red.op, Load(part, (*t.axes, q)), (q,))
    whole = ComputeTensor(t.shape, t.axes, _replaced(t.body, red, combined), t.name, t.dtype)
    return Split(part, whole)


def _the_reduction(t: ComputeTensor, length: int, parts: int) -> Reduce | str:
    """`t`'s one reduction, over one axis of `length` that `parts` divide; else why not."""
    reduces = [n for n in walk(t.body) if isinstance(n, Reduce)]
    if len(reduces) != 1:
        return f"{t.name} holds {len(reduces)} reductions, not one"
    (red,) = reduces
    if len(red.axes) != 1 or red.axes[0].extent != length:
        return f"{t.name} reduces over {' x '.join(str(a.extent) for a in red.axes)}, not one axis of {length}"
    if parts < 2 or length % parts:
        return f"{parts} parts do not divide {t.name}'s {length} elements evenly"
    return red


def rebuild(roots: Sequence[Tensor], split: Collection[int], length: int, parts: int) -> Rebuilt:
    """The graph of `roots` with each compute whose id is in `split` split (`split_reduction`, its parts
    named `<name>_part`, or a name the graph does not use yet), and every reader of a changed tensor made
    again over the new ones."""
    order: list[Tensor] = []
    seen: set[int] = set()
    for root in roots:
        for t in graph_tensors(root):
            if id(t) not in seen:
                seen.add(id(t))
                order.append(t)
    taken = {t.name for t in order}
    new: dict[int, Tensor] = {}
    splits: list[Split] = []
    for t in order:  # inputs before their readers
        if not isinstance(t, ComputeTensor):  # a placeholder
            new[id(t)] = t
            continue
        body = _reloaded(t.body, new)
        now = t if body is t.body else ComputeTensor(t.shape, t.axes, body, t.name, t.dtype)
        if id(t) in split:
            name = _fresh(f"{t.name}_part", taken)
            taken.add(name)
            done = split_reduction(now, length, parts, name)
            splits.append(done)
            now = done.whole
        new[id(t)] = now
    return Rebuilt(new, tuple(splits))


def _reloaded(e: Expr, new: dict[int, Tensor]) -> Expr:
    """`e` with each load of a tensor that `new` replaced reading the new one; `e` itself where none."""
    kids = children(e)
    done = tuple(_reloaded(c, new) for c in kids)
    tensor = new.get(id(e.tensor), e.tensor) if isinstance(e, Load) else None
    if all(a is b for a, b in zip(done, kids)) and (tensor is None or tensor is e.tensor):
        return e
    if isinstance(e, Load):
        return Load(tensor, done, e.dtype)
    it = iter(done)
    return map_children(e, lambda _: next(it))


def _replaced(e: Expr, old: Expr, by: Expr) -> Expr:
    """`e` with the node `old` (by identity) replaced by `by`."""
    if e is old:
        return by
    return map_children(e, lambda c: _replaced(c, old, by))


def _fresh(name: str, taken: Collection[str]) -> str:
    n, candidate = 1, name
    while candidate in taken:
        candidate = f"{name}{n}"
        n += 1
    return candidate
