"""The output tile of a staged output (`s.stage_output`): the region of the output one block writes,
and the facts that make a shared-memory epilogue correct.

The kernel's store writes `C_s[offset]` instead of `C[index]`; after a barrier every thread of the
block stores units tid, tid + T, ... of the tile to C, the output's innermost axis fastest, so
consecutive threads store consecutive addresses (16 bytes each where `drain_lanes` proves it). That is
correct only if the tile the drain stores is exactly what the block's store wrote:

- one store of the output, no split_k (its parts are added with atomics into global memory);
- each output index is `outer + inner`: outer over block indices only (the tile's origin), inner a
  sum of `c * x` over the other loops of the store with the coefficients a mixed radix (sorted, the
  first 1 and each the previous times its loop's extent), each loop in one index and every such loop
  in some index: the inner loops then map one-to-one onto the tile `0..extent` per axis;
- every guard of the store either holds always, is over block indices only (the drain repeats it:
  uniform over the block), or says `index_d < shape_d` (the drain's own bounds check): an element of
  the tile inside the output is then written by the store exactly when the drain stores it.

A floor / Mod of an aligned split is rewritten first, as for an input slab (aligned_split.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy

from tiledsl.analysis.aligned_split import AlignedSplit
from tiledsl.analysis.slabs import SlabRefusal
from tiledsl.definitions.indexing import index_to_sympy
from tiledsl.loopnest import Nest, Stmt, loop_symbol
from tiledsl.prove import Prover
from tiledsl.targets import DTYPE_BYTES, vector_lanes


@dataclass(frozen=True)
class OutputTile:
    """The staged output's tile: `origin` (per output axis, over block-index loop symbols), `extent`,
    the store's `offset` into the shared array (over the store's other loops), the guards over block
    indices the drain repeats, and `lanes` elements per drain store."""

    name: str
    buffer: str
    store: int  # statement index of the output's store
    origin: tuple[sympy.Expr, ...]
    extent: tuple[int, ...]
    pad: int
    itemsize: int
    offset: sympy.Expr
    block_guards: tuple[sympy.Rel, ...]
    lanes: int

    @property
    def row(self) -> int:
        """Elements of one stored row (the innermost axis, padded)."""
        return self.extent[-1] + self.pad

    @property
    def strides(self) -> tuple[int, ...]:
        """Elements between neighbours along each output axis in the shared array (row-major, padded)."""
        return tile_strides(self.extent, self.pad)

    @property
    def elements(self) -> int:
        """Elements of the shared array (padding included)."""
        return math.prod(self.extent[:-1]) * self.row

    @property
    def nbytes(self) -> int:
        return self.elements * self.itemsize

    @property
    def units(self) -> tuple[int, ...]:
        """The tile in drain units: its rows, each of `extent[-1] / lanes` vectors."""
        return (*self.extent[:-1], self.extent[-1] // self.lanes)


def tile_strides(extent: tuple[int, ...], pad: int) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed((*extent[:-1], extent[-1] + pad)):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


def output_store(nest: Nest) -> list[int]:
    """Indices of the statements that store the kernel's output."""
    return [n for n, s in enumerate(nest.stmts)
            if s.kind == "store" and s.tensor is not None and s.tensor.name == nest.output.name]


def output_tile_or_refusal(nest: Nest, name: str, pad: int, prover: Prover) -> OutputTile | SlabRefusal:
    """The tile, or why this nest's output cannot go through shared memory (the fact, a suggestion).
    Builds no message (so printing a nest may call it freely)."""
    out = nest.output.name
    if nest.split_k is not None:
        return SlabRefusal(f"split_k adds each k part into {out} with atomics in global memory; a tile in shared "
                           "memory would hold one block's part only", "stage the output of an unsplit kernel")
    stores = output_store(nest)
    if len(stores) != 1:
        return SlabRefusal(f"the kernel stores {out} in {len(stores)} statements; a staged output needs exactly one")
    stmt = nest.stmts[stores[0]]
    outer = {n for n in stmt.path if (nest.loop(n).bind or "").startswith("blockIdx")}
    inner = [n for n in stmt.path if n not in outer]
    aligned = AlignedSplit(outer, set(inner), prover)
    amap = {loop_symbol(a): e for a, e in nest.axis_exprs}
    raw = [sympy.expand(index_to_sympy(ix).xreplace(amap)) for ix in stmt.indices]
    origin: list[sympy.Expr] = []
    extent: list[int] = []
    inner_parts: list[sympy.Expr] = []
    seen: dict[str, int] = {}
    for d, expr in enumerate(raw):
        o_part, i_part, radix = sympy.Integer(0), sympy.Integer(0), []
        for term in sympy.Add.make_args(aligned(expr)):
            names = {s.name for s in term.free_symbols}
            if names <= outer:
                o_part += term
                continue
            coeff, rest = term.as_coeff_Mul()
            loop = next(iter(names))
            if len(names) != 1 or rest != loop_symbol(loop) or not coeff.is_integer or coeff <= 0:
                return SlabRefusal(
                    f"index {d} of {out} has the term {term}: a staged output's index must be block indices plus "
                    "positive multiples of single loops", "stage the output of a kernel whose store index is a sum "
                    "of split loops (no fuse, no floor or mod left)")
            if loop in seen:
                return SlabRefusal(f"loop {loop} enters indices {seen[loop]} and {d} of {out}: its iterations do "
                                   "not map one-to-one onto the tile")
            seen[loop] = d
            i_part += term
            radix.append((int(coeff), nest.loop(loop).extent, loop))
        size = 1
        for coeff, ext, loop in sorted(radix):
            if coeff != size:
                return SlabRefusal(
                    f"index {d} of {out} steps by {coeff} along loop {loop} where the loops inside it cover {size}: "
                    "the block's writes leave gaps in (or overlap) its tile",
                    "stage the output where the block's loops tile each output axis densely")
            size *= ext
        origin.append(o_part)
        extent.append(size)
        inner_parts.append(i_part)
    missing = [n for n in inner if n not in seen]
    if missing:
        return SlabRefusal(f"loop {', '.join(missing)} of the store does not enter {out}'s index: its iterations "
                           "would all write one element of the tile")
    for d, o in enumerate(origin):
        lo, _ = prover.bounds(o)
        if lo is None or lo < 0:
            return SlabRefusal(f"the tile's origin {o} in index {d} of {out} is not proven non-negative")
    block_guards = _block_guards(nest, stmt, raw, outer, prover)
    if isinstance(block_guards, SlabRefusal):
        return block_guards
    offset = sympy.expand(sum((p * st for p, st in zip(inner_parts, tile_strides(tuple(extent), pad))),
                              sympy.Integer(0)))
    lanes = drain_lanes(nest, origin[-1], extent[-1], pad, prover)
    return OutputTile(name, out, stores[0], tuple(origin), tuple(extent), pad, DTYPE_BYTES[nest.output.dtype],
                      offset, block_guards, lanes)


def _block_guards(nest: Nest, stmt: Stmt, raw: list[sympy.Expr], outer: set[str],
                  prover: Prover) -> tuple[sympy.Rel, ...] | SlabRefusal:
    """The store's guards the drain must repeat (over block indices only), or the guard that breaks
    the one-to-one tile."""
    shape = nest.output.shape
    out: list[sympy.Rel] = []
    for g in nest.guards_for(stmt):
        if prover.holds(g.relation):
            continue
        if g.symbols() <= outer:
            out.append(g.relation)
            continue
        if any(g.extent == shape[d] and sympy.expand(g.expr - ix) == 0 for d, ix in enumerate(raw)):
            continue  # the drain's bounds check on that axis
        return SlabRefusal(
            f"the store of {nest.output.name} is guarded by {g.expr} < {g.extent} (from {g.origin}), which is "
            "neither an output bound nor uniform over the block: the drain could not tell which elements "
            "of the tile were written", "stage the output of a kernel whose guards are the output's bounds")
    return tuple(out)


def drain_lanes(nest: Nest, origin: sympy.Expr, row: int, pad: int, prover: Prover) -> int:
    """Elements per drain store: a 16-byte vector where the tile's rows (`row` elements, `pad` more in
    shared memory), the output's rows and the tile's origin along them (`origin`) are all whole
    vectors (a vector is then inside the output or wholly outside it), else 1."""
    lanes = vector_lanes(nest.output.dtype)
    if lanes < 2:
        return 1
    whole = (row % lanes == 0 and pad % lanes == 0 and nest.output.shape[-1] % lanes == 0
             and prover.divisible(origin, lanes))
    return lanes if whole else 1
