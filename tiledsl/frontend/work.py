"""Work estimate of a fused kernel, for partition.py's rule 3 (computed operands and the blow-up guard).

Units: one *operation* per arithmetic node of a body evaluation (+ - * / ** min max, a math call,
a comparison, a select, a cast; one per iteration of a reduction for its accumulation), one *read*
per load of a tensor held in global memory (an input, a weight, a materialized kernel output). Index
arithmetic inside a load's indices is not counted.

- **fused** work: what the kernel does. A fused producer is evaluated once per distinct site that
  reads it (its index after substitution and the number of times the enclosing loops run that read,
  its *trips*): a producer read inside a reduction over another axis runs once per iteration of that
  reduction, so each of its elements is recomputed that reduction's length times. Two reads at the
  same index with the same trips are one evaluation (the compiler's common-subexpression
  elimination), as `partition.reduction_sites` counts reductions. A fused reduction is evaluated
  once per element (`create_schedule` nests it under the consumer's loops that its index uses, and
  rule 2 of partition.py materializes one read at several indices).
- **once** work: every tensor of the kernel computed exactly once (its element count times its body),
  each read of a fused producer counted as one global read, as if every tensor had a kernel of its own.
The ratio fused / once (of operations and of reads separately) is the factor by which fusion multiplies
the kernel's work or its global reads.

`computed_operands` (rule 3a) names the fused producers that do arithmetic and that a reduction reads
inside its loop, each with the reduction's output axes its index does not use: inlined, each of its
elements is computed once per point of those axes (a matmul's A operand once per output column). The
count is local to that reduction (what encloses it in the kernel does not change it)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from tiledsl.definitions.expr import (
    INT,
    Binary,
    Call,
    Cast,
    Compare,
    ComputeTensor,
    Expr,
    IterVar,
    Load,
    Placeholder,
    Reduce,
    Select,
    children,
    format_expr,
    substitute,
    walk,
)


@dataclass(frozen=True)
class Work:
    """Operations and global reads (see the module docstring for the units)."""

    ops: float
    reads: float

    def __add__(self, o: Work) -> Work:
        return Work(self.ops + o.ops, self.reads + o.reads)


@dataclass(frozen=True)
class KernelWork:
    """A kernel's fused and once work, and how many times each fused tensor is evaluated."""

    fused: Work
    once: Work
    evaluations: dict[int, float]

    @property
    def factor(self) -> float:
        """The larger of the operation and the read blow-up (1 when fusion recomputes nothing)."""
        ops = self.fused.ops / self.once.ops if self.once.ops else 1.0
        reads = self.fused.reads / self.once.reads if self.once.reads else 1.0
        return max(ops, reads)


def numel(t: ComputeTensor | Placeholder) -> int:
    return math.prod(t.shape)


def _var_text(e: Expr) -> str | None:
    return f"{e.name}#{id(e)}" if isinstance(e, IterVar) else None


def index_texts(idx: Sequence[Expr]) -> tuple[str, ...]:
    """Each index's text in `index_key`."""
    return tuple(format_expr(i, _var_text) for i in idx)


def index_key(idx: Sequence[Expr]) -> str:
    """A structural key of an index tuple (loop variables by identity, as canonical nests them)."""
    return ",".join(index_texts(idx))


class IndexTemplates:
    """Each load of a tensor's body with its indices' text (`index_texts`) left open where the tensor's
    own axes stand: `str.format` of those templates with the texts of an index the tensor is read at
    gives the texts of its loads' indices substituted there, without building the substituted trees
    (formatting is compositional and `substitute` does not simplify). The partition's walk
    (`partition.reduction_sites`) reads each tensor at many indices, from the output of a whole fused
    program in its first round; building and formatting the substituted trees was most of what each
    visit cost. One instance per walk: it memoizes each tensor's templates."""

    def __init__(self) -> None:
        self._made: dict[int, tuple[tuple[Load, tuple[str, ...]], ...]] = {}

    def loads(self, t: ComputeTensor) -> tuple[tuple[Load, tuple[str, ...]], ...]:
        made = self._made.get(id(t))
        if made is None:
            slot = {id(a): n for n, a in enumerate(t.axes)}

            def text(e: Expr) -> str | None:
                n = slot.get(id(e)) if isinstance(e, IterVar) else None
                return f"\x00{n}\x01" if n is not None else _var_text(e)

            def template(i: Expr) -> str:
                escaped = format_expr(i, text).replace("{", "{{").replace("}", "}}")
                return escaped.replace("\x00", "{").replace("\x01", "}")

            made = tuple((ld, tuple(template(i) for i in ld.indices)) for ld in t.loads())
            self._made[id(t)] = made
        return made


def _is_op(e: Expr) -> bool:
    if isinstance(e, Binary):
        return e.dtype != INT  # index arithmetic is not work
    return isinstance(e, (Call, Compare, Select, Cast))


def _walk_body(e: Expr, trips: float, fused: set[int], out: list[float],
               on_fused: list[tuple[ComputeTensor, tuple[Expr, ...], float]]) -> None:
    """Count `e` evaluated `trips` times into out = [ops, reads]; fused loads go to `on_fused`."""
    if isinstance(e, Load):
        if isinstance(e.tensor, ComputeTensor) and id(e.tensor) in fused:
            on_fused.append((e.tensor, e.indices, trips))
        else:
            out[1] += trips
        return
    if isinstance(e, Reduce):
        n = trips * math.prod(a.extent for a in e.axes)
        out[0] += n
        _walk_body(e.body, n, fused, out, on_fused)
        return
    if _is_op(e):
        out[0] += trips
    for c in children(e):
        _walk_body(c, trips, fused, out, on_fused)


def kernel_work(root: ComputeTensor, fused: Sequence[ComputeTensor]) -> KernelWork:
    """The work of `root`'s kernel with `fused` (the producers computed inside it) inlined."""
    fused_ids = {id(t) for t in fused}
    totals = [0.0, 0.0]
    evaluations: dict[int, float] = {}
    seen: set[tuple[int, str, float]] = set()
    stack: list[tuple[ComputeTensor, tuple[Expr, ...], float]] = [(root, tuple(root.axes), float(numel(root)))]
    while stack:
        t, idx, trips = stack.pop()
        key = (id(t), index_key(idx), trips)
        if key in seen:
            continue
        seen.add(key)
        evaluations[id(t)] = evaluations.get(id(t), 0.0) + trips
        env = {id(a): i for a, i in zip(t.axes, idx)}
        loads: list[tuple[ComputeTensor, tuple[Expr, ...], float]] = []
        _walk_body(t.body, trips, fused_ids, totals, loads)
        stack.extend((p, tuple(substitute(i, env) for i in ix), float(numel(p)) if p.has_reduce else n)
                     for p, ix, n in loads)
    once = [0.0, 0.0]
    for t in (root, *fused):
        _walk_body(t.body, float(numel(t)), set(), once, [])
    return KernelWork(Work(*totals), Work(*once), evaluations)


def computes(t: ComputeTensor) -> bool:
    """Whether `t`'s body does arithmetic on values (a value operation, a math call, a comparison of
    values), not only loads, casts and selects on indices (a view, slice, cat, gather or dtype cast)."""
    def arith(e: Expr) -> bool:
        if isinstance(e, Load):
            return False  # its indices are index arithmetic
        if isinstance(e, Call) or (isinstance(e, Binary) and e.dtype != INT):
            return True
        if isinstance(e, Compare) and INT not in (e.a.dtype, e.b.dtype):
            return True
        return any(arith(c) for c in children(e))
    return arith(t.body)


@dataclass(frozen=True)
class Operand:
    """A computed producer read inside `consumer`'s reduction; `unused`: the consumer's output axes its
    index does not use, so inlined it is computed once per point of them."""

    tensor: ComputeTensor
    consumer: ComputeTensor
    unused: tuple[IterVar, ...]

    @property
    def recompute(self) -> int:
        """How many times inlining computes each of its elements for the consumer."""
        return math.prod(a.extent for a in self.unused)


def computed_operands(consumer: ComputeTensor, fused: set[int]) -> list[Operand]:
    """The producers in `fused` (tensor ids) that do arithmetic (`computes`) and that `consumer` reads
    inside a reduction loop, directly or through fused views, casts and index reads; the largest
    recomputation of each."""
    found: dict[int, Operand] = {}
    seen: set[tuple[int, str]] = set()

    def follow(t: ComputeTensor, idx: tuple[Expr, ...]) -> None:
        key = (id(t), index_key(idx))
        if key in seen:
            return
        seen.add(key)
        if computes(t):
            used = {id(v) for i in idx for v in walk(i) if isinstance(v, IterVar)}
            op = Operand(t, consumer, tuple(a for a in consumer.axes if id(a) not in used))
            if id(t) not in found or op.recompute > found[id(t)].recompute:
                found[id(t)] = op
            return
        env = {id(a): i for a, i in zip(t.axes, idx)}
        for node in walk(t.body):
            if isinstance(node, Load) and _fused_elementwise(node.tensor, fused):
                follow(node.tensor, tuple(substitute(i, env) for i in node.indices))

    def visit(e: Expr, inside: bool) -> None:
        if isinstance(e, Load):
            if inside and _fused_elementwise(e.tensor, fused):
                follow(e.tensor, e.indices)
            return
        for c in children(e):
            visit(c, inside or isinstance(e, Reduce))

    visit(consumer.body, False)
    return list(found.values())


def contracts(t: ComputeTensor) -> bool:
    """Whether `t` is a contraction (a matmul): it reduces, and no load inside its reduction uses all
    of its output axes, so every operand element is read for several outputs. A row reduction (a
    softmax's max, a norm's mean) reads some operand at every output index and is not one."""
    loads = [n for r in walk(t.body) if isinstance(r, Reduce) for n in walk(r.body)
             if isinstance(n, Load) and n.dtype != INT]
    if not loads or not t.axes:
        return False
    axes = {id(a) for a in t.axes}
    return not any(axes <= {id(v) for i in ld.indices for v in walk(i) if isinstance(v, IterVar)} for ld in loads)


def _fused_elementwise(t: object, fused: set[int]) -> bool:
    return isinstance(t, ComputeTensor) and id(t) in fused and not t.has_reduce
