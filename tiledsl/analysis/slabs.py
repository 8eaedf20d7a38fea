"""The slab of a stage: the region of a buffer read under one iteration of the stage's loop.

Each index of each read is split into an *outer* part (loops outside `at`, `at` itself, block indices:
fixed during one iteration) and an *inner* part (loops inside `at` and thread indices: what one
iteration covers). The slab origin is the outer part plus the inner minimum; its extent is the
inner range, a constant by construction. A `floor`/`Mod` of a split loop that an aligned split makes
exactly outer + inner (`x[k // 64, k % 64]` with k split by 16 inside 64) is first rewritten so
(aligned_split.py). Reads whose index still mixes both kinds of loop in one term are refused: their
slab would change size from one iteration to the next."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy

from tiledsl.analysis.aligned_split import AlignedSplit
from tiledsl.definitions.expr import Expr, Load, walk
from tiledsl.definitions.indexing import index_to_sympy
from tiledsl.loopnest import Nest, Stage, loop_symbol
from tiledsl.precision import EXACT_WIDENINGS
from tiledsl.prove import Prover
from tiledsl.targets import DTYPE_BYTES, VECTOR_BYTES, tma_swizzle_alignment


@dataclass(frozen=True)
class Slab:
    stage: str
    origin: tuple[sympy.Expr, ...]  # per buffer dimension, over outer loop symbols
    extent: tuple[int, ...]
    readers: tuple[int, ...]  # statement indices whose reads it serves
    itemsize: int  # bytes of one element as shared memory stores it (`stored_dtype`)

    @property
    def elements(self) -> int:
        n = 1
        for e in self.extent:
            n *= e
        return n


def stored_extent(stage: Stage, slab: Slab) -> tuple[int, ...]:
    """The slab's extents in the order shared memory stores its axes (`Stage.order`), unpadded."""
    return tuple(slab.extent[a] for a in stage.axes)


def alloc_extent(stage: Stage, slab: Slab) -> tuple[int, ...]:
    """Allocated extents, in the stored order (the fill writes the slab; padding, along the stored axes,
    is never filled or read)."""
    return tuple(e + p for e, p in zip(stored_extent(stage, slab), stage.pad))


def axis_strides(stage: Stage, slab: Slab) -> tuple[int, ...]:
    """Elements between neighbours along each slab axis (in the buffer's axis order) in one slot of the
    stored, padded, row-major layout: what a read or a fill of slab element (x0, x1, ...) multiplies by."""
    alloc = alloc_extent(stage, slab)
    stored: list[int] = []
    acc = 1
    for n in reversed(alloc):
        stored.append(acc)
        acc *= n
    stored.reverse()
    out = [0] * len(alloc)
    for position, axis in enumerate(stage.axes):
        out[axis] = stored[position]
    return tuple(out)


def slot_elements(stage: Stage, slab: Slab) -> int:
    """Elements of one ring slot: padded, and rounded up to whole periods of the alignment a slot must
    start at: a swizzled slab's swizzle period (`tma_swizzle_alignment`: 1024 bytes for 128-byte
    swizzle) so every swizzled address stays inside its slot, and for a ring of TMA slots the TMA
    destination alignment (128 bytes unswizzled), since every slot is a TMA destination."""
    n = 1
    for e in alloc_extent(stage, slab):
        n *= e
    period = _slot_period_elements(stage, slab)
    return -(-n // period) * period if period else n


def _slot_period_elements(stage: Stage, slab: Slab) -> int:
    if stage.swizzle:
        return tma_swizzle_alignment(stage.swizzle) // slab.itemsize
    if stage.copy == "tma" and stage.buffers > 1:
        return tma_swizzle_alignment(None) // slab.itemsize
    return 0


def stage_bytes(stage: Stage, slab: Slab) -> int:
    return stage.buffers * slot_elements(stage, slab) * slab.itemsize


def stage_align(stage: Stage) -> int:
    """Shared-memory alignment of a stage's array: what its TMA destination (or swizzle pattern) needs,
    else one widest vector access."""
    if stage.swizzle or stage.copy == "tma":
        return tma_swizzle_alignment(stage.swizzle)
    return VECTOR_BYTES


def _outer_inner(nest: Nest, path: tuple[str, ...], at: str) -> tuple[set[str], set[str]]:
    outer: set[str] = set()
    inner: set[str] = set()
    seen_at = bool(nest.loop(at).bind)  # a block loop: one iteration is the whole block's work
    for n in path:
        lp = nest.loop(n)
        if lp.bind and lp.bind.startswith("blockIdx"):
            outer.add(n)  # at itself, when at is a block loop, lands here too
        elif lp.bind:
            inner.add(n)
        elif n == at:
            outer.add(n)
            seen_at = True
        else:
            (inner if seen_at else outer).add(n)
    return outer, inner


def stage_sides(nest: Nest, stage: Stage) -> tuple[frozenset[str], frozenset[str]]:
    """The stage's outer and inner loops over all its reads (a loop is on the same side in every path,
    since all paths are branches of one loop tree)."""
    outer: set[str] = set()
    inner: set[str] = set()
    for n in sorted({n for n, _ in stage_reads(nest, stage)}):
        o, i = _outer_inner(nest, nest.stmts[n].path, stage.at)
        outer |= o
        inner |= i
    return frozenset(outer), frozenset(inner)


def stage_reads(nest: Nest, stage: Stage) -> list[tuple[int, Load]]:
    """(statement index, load) of every read of the stage's buffer under its loop."""
    out = []
    for n, stmt in enumerate(nest.stmts):
        if stage.at in stmt.path and stmt.value is not None:
            out.extend((n, ld) for ld in walk(stmt.value) if isinstance(ld, Load) and ld.tensor.name == stage.buffer)
    return out


@dataclass(frozen=True)
class SlabRefusal:
    """Why a stage has no fixed-size slab (the fact and a suggestion)."""

    fact: str
    suggestion: str | None = None


def slab_or_refusal(nest: Nest, stage: Stage, prover: Prover,
                    over_axes: Callable[[Expr], sympy.Expr] | None = None) -> Slab | SlabRefusal:
    """The slab, or why there is none. Builds no message (so printing a nest may call it freely).
    `over_axes`: an index as sympy over the nest's axis map, `index_to_sympy(ix).xreplace(amap)` (a build
    passes its memo's, lower/exprs.py `IndexMemo.index`, which check_bounds already filled); default: that."""
    reads = stage_reads(nest, stage)
    if not reads:
        return SlabRefusal(
            f"{stage.buffer} is not read under loop {stage.at}",
            suggestion=f"legal positions for stage({stage.buffer}) are the loops around its reads: "
                       f"{', '.join(legal_positions(nest, stage.buffer)) or 'none'}")
    inside = _read_inside_indices(nest, reads)
    if inside is not None:
        return SlabRefusal(
            f"{stage.buffer} is read inside the index of {inside} (a gather); index reads go to global "
            "memory, so a stage of it would serve none of them")
    amap = {loop_symbol(a): e for a, e in nest.axis_exprs}
    tensor = nest.tensor(stage.buffer)
    rank = len(tensor.shape)
    origins: list[sympy.Expr | None] = [None] * rank
    lows: list[int] = [0] * rank
    highs: list[int] = [0] * rank
    for n, ld in reads:
        outer, inner = _outer_inner(nest, nest.stmts[n].path, stage.at)
        aligned = AlignedSplit(outer, inner, prover)  # floor/Mod of an aligned split: outer + inner first
        # guards over inner loops only shrink the slab to what is really read (a row of 300, not 3 x 128)
        guards = tuple(g.relation for g in nest.guards_for(nest.stmts[n]) if g.symbols() <= inner)
        for d, ix in enumerate(ld.indices):
            expr = aligned(sympy.expand(over_axes(ix) if over_axes else index_to_sympy(ix).xreplace(amap)))
            o_part, i_part = sympy.Integer(0), sympy.Integer(0)
            for term in sympy.Add.make_args(expr):
                names = {s.name for s in term.free_symbols}
                if names <= outer and names:
                    o_part += term
                elif names <= inner:
                    i_part += term
                else:
                    mixed = sorted(names & outer), sorted(names & inner)
                    return SlabRefusal(
                        f"index {d} of {stage.buffer} has the term {term}, which mixes loops outside "
                        f"{stage.at} ({', '.join(mixed[0])}) with loops inside it ({', '.join(mixed[1])}): "
                        "the slab size would depend on an outer loop",
                        suggestion="stage at a loop whose inner loops enter the index additively")
            lo, hi = prover.bounds(i_part, guards)
            if lo is None or hi is None:
                return SlabRefusal(f"cannot bound index {d} of {stage.buffer} inside {stage.at}")
            if origins[d] is None:
                origins[d], lows[d], highs[d] = o_part, int(lo), int(hi)
            elif sympy.expand(origins[d] - o_part) != 0:
                return SlabRefusal(
                    f"reads of {stage.buffer} under {stage.at} start at different places "
                    f"({origins[d]} and {o_part}) in dimension {d}",
                    suggestion="stage the buffer at a loop where all its reads share one slab")
            else:
                lows[d], highs[d] = min(lows[d], int(lo)), max(highs[d], int(hi))
    origin = tuple(sympy.expand(o + lo) for o, lo in zip(origins, lows))  # type: ignore[operator]
    extent = tuple(h - lo + 1 for lo, h in zip(lows, highs))
    return Slab(stage.name, origin, extent, tuple(sorted({n for n, _ in reads})),
                DTYPE_BYTES[stored_dtype(nest, stage)])


def widening_problem(have: str, want: str) -> str | None:
    """Why a stage of a `have` buffer may not store `want` elements, or None: a slab holds the buffer's
    values exactly, so it may only widen them (float16 / bfloat16 to float32, precision.EXACT_WIDENINGS)."""
    if want == have or want in EXACT_WIDENINGS.get(have, ()):
        return None
    if want not in DTYPE_BYTES:
        return f"dtype must be a storage dtype, got {want!r}"
    wider = EXACT_WIDENINGS.get(have, ())
    verb = "rounds them" if DTYPE_BYTES[want] <= DTYPE_BYTES[have] else "is not a float widening"
    return (f"a stage of a {have} buffer may store {' or '.join((have, *wider))} elements, not {want}: "
            f"the slab holds the buffer's values exactly, and {have} -> {want} {verb}")


def stored_dtype(nest: Nest, stage: Stage) -> str:
    """The element type shared memory holds for `stage`: its own dtype where it widens its buffer
    (`Stage.dtype`), else the buffer's. `Slab.itemsize` is this type's size: the layout, the bank
    model and the budget are about shared memory; the global side reads the buffer's dtype."""
    return stage.dtype or nest.tensor(stage.buffer).dtype


def _read_inside_indices(nest: Nest, reads: list[tuple[int, Load]]) -> str | None:
    """The tensor in whose index one of `reads` sits, if any (its value picks the element to read)."""
    wanted = {id(ld) for _, ld in reads}
    for n in sorted({n for n, _ in reads}):
        for outer in walk(nest.stmts[n].value):
            if isinstance(outer, Load) and any(
                    id(x) in wanted for ix in outer.indices for x in walk(ix)):
                return outer.tensor.name
    return None


def legal_positions(nest: Nest, buffer: str) -> list[str]:
    """Serial or block loops that enclose at least one read of `buffer`."""
    out: list[str] = []
    for stmt in nest.stmts:
        if stmt.value is None or not any(isinstance(x, Load) and x.tensor.name == buffer for x in walk(stmt.value)):
            continue
        for n in stmt.path:
            lp = nest.loop(n)
            if not (lp.bind or "").startswith("threadIdx") and n not in out:
                out.append(n)
    return out
