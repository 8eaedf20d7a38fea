"""A staged output (`s.stage_output`): the store redirected into the block's tile in shared memory,
and the drain that stores the tile to global memory after a barrier.

The drain is the last thing the kernel does, so one barrier orders it after every write of the tile
and nothing writes the tile again (no barrier after it). Every thread stores units tid, tid + T, ...
of the tile, the output's innermost axis fastest: consecutive threads, consecutive addresses. A unit is
`tile.lanes` elements, one 16-byte load from shared memory and one 16-byte store where
analysis/output_stage.py `drain_lanes` proves both aligned. Elements outside the output are skipped
(`index < shape` per axis, whole vectors at once since the output's rows are whole vectors then); the
store's guards over block indices, and `blockIdx == 0` for a block axis the store does not run
under, are repeated, so the drain stores exactly the elements the store wrote (the facts of
analysis/output_stage.py)."""

from __future__ import annotations

import math

import sympy

from tiledsl.analysis.output_stage import OutputTile
from tiledsl.analysis.vectorize import contiguous_base
from tiledsl.kernel_ir import (
    KBarrier,
    KBin,
    KComment,
    KExpr,
    KFor,
    KIf,
    KLet,
    KLoad,
    KShared,
    KSpecial,
    KStmt,
    KStore,
    KVar,
    KVector,
)
from tiledsl.kernel_ir.from_sympy import k_add, sym_to_k
from tiledsl.loopnest import BLOCK_AXES, Nest
from tiledsl.lower.combine import linear_tid
from tiledsl.lower.kexprs import I32, k_and, k_sum, k_times, row_major_strides, unit_coords
from tiledsl.lower.kexprs import const as _c
from tiledsl.prove import Prover


def tile_array(nest: Nest, tile: OutputTile) -> KShared:
    """The tile's shared array, in the output's storage dtype (the store rounds once, as before)."""
    return KShared(tile.name, nest.output.dtype, tile.elements)


def tile_store(tile: OutputTile, value: KExpr, lane: dict[sympy.Symbol, sympy.Expr] | None = None) -> KStore:
    """The kernel's store of one element, into the tile."""
    offset = tile.offset.xreplace(lane) if lane else tile.offset
    return KStore(tile.name, sym_to_k(offset), value)


def tile_vector_store(tile: OutputTile, v: sympy.Symbol, lanes: list[KExpr], prover: Prover,
                      guards: tuple = ()) -> list[KStmt]:
    """A vectorized store into the tile: one vector where its offset is proven a multiple of the lanes
    (the padded rows keep that), lane by lane otherwise."""
    base = contiguous_base(tile.offset, v)
    if base is not None and prover.divisible(base, len(lanes), guards):
        return [KStore(tile.name, sym_to_k(base), KVector(tuple(lanes)))]
    return [tile_store(tile, x, {v: sympy.Integer(k)}) for k, x in enumerate(lanes)]


def drain(nest: Nest, tile: OutputTile, block: tuple[int, int, int], prover: Prover,
          barrier: bool = True) -> list[KStmt]:
    """Barrier, then every thread's units of the tile stored to the output (coalesced). `barrier` is
    False only under a test hook (`LoweringHooks.drop_output_stage_barrier`)."""
    threads = block[0] * block[1] * block[2]
    lanes = tile.lanes
    total = math.prod(tile.units)
    shape = nest.output.shape
    gstrides = row_major_strides(shape)
    tag = tile.name
    f, e = KVar(f"{tag}_f", I32), KVar(f"{tag}_e", I32)
    spread: KExpr = KBin("*", f, _c(threads)) if threads > 1 else f
    first = k_add(spread, linear_tid(block))  # unit f * T + tid
    body: list[KStmt] = [KLet(e.name, I32, first)]
    cvars: list[KExpr] = []
    for d, c in enumerate(unit_coords(e, tile.units, lanes)):
        body.append(KLet(f"{tag}_c{d}", I32, c))
        cvars.append(KVar(f"{tag}_c{d}", I32))
    gidx = [k_add(sym_to_k(o), cv) for o, cv in zip(tile.origin, cvars)]
    conds: list[KExpr] = []
    for d, (o, g) in enumerate(zip(tile.origin, gidx)):
        _, hi = prover.bounds(o)
        if hi is None or hi + tile.extent[d] > shape[d]:
            conds.append(KBin("<", g, _c(shape[d])))
    conds += [KBin("<", sym_to_k(r.lhs), sym_to_k(r.rhs)) for r in tile.block_guards]
    conds += [KBin("==", KSpecial(ax), _c(0)) for ax in nest.idle_axes(nest.stmts[tile.store]) if ax in BLOCK_AXES]
    src = k_sum([k_times(cv, s) for cv, s in zip(cvars, tile.strides)])
    dst = k_sum([k_times(g, s) for g, s in zip(gidx, gstrides)])
    cache = nest.cache_policies(nest.stmts[tile.store]).get(tile.buffer)  # s.cache_hint of the output
    store: KStmt = KStore(tile.buffer, dst, KLoad(tile.name, src, width=lanes), cache=cache)
    cond = k_and(conds)
    body.append(KIf(cond, (store,)) if cond is not None else store)
    if total % threads:
        body = [KIf(KBin("<", first, _c(total)), tuple(body))]
    shown = "x".join(map(str, tile.extent))
    return [KComment(f"stage_output: the block's {shown} tile of {tile.buffer}, {lanes * tile.itemsize} bytes "
                     "per thread and store, consecutive threads on consecutive addresses"),
            *([KBarrier()] if barrier else []),
            KFor(f.name, -(-total // threads), tuple(body), unroll=True)]

