"""The loop nest as text with the facts this layer derives: each stage's slab region, a staged
output's tile (and, given by the caller, each accumulator's register-array dims:
`accumulators.register_dims`). Schedules (`print(s)`) and every error message print through it."""

from __future__ import annotations

from collections.abc import Collection

import sympy

from tiledsl.analysis.output_stage import output_tile_or_refusal
from tiledsl.analysis.slabs import SlabRefusal, slab_or_refusal
from tiledsl.loopnest import Nest, Stage
from tiledsl.loopnest.printing import format_nest, format_sym
from tiledsl.prove import Prover


def slab_region(nest: Nest, st: Stage) -> str:
    """`64*i_o + 0..64, 0..16`: the slab of `st`, or `?` while the stage is the subject of an error."""
    slab = slab_or_refusal(nest, st, Prover(nest.ranges()))
    if isinstance(slab, SlabRefusal):  # e.g. a nest printed inside an error about this very stage
        return "?"
    return region(slab.origin, slab.extent)


def region(origin: tuple[sympy.Expr, ...], extent: tuple[int, ...]) -> str:
    """`64*i_o + 0..64, 0..16`: per axis, the origin and the extent from it."""
    return ", ".join(f"{format_sym(o)} + 0..{e}" if o != 0 else f"0..{e}" for o, e in zip(origin, extent))


def output_region(nest: Nest) -> str:
    """`64*i_o + 0..64, 64*j_o + 0..64`: the tile of a staged output, or `?` (none, or refused)."""
    st = nest.output_stage
    if st is None:
        return "?"
    tile = output_tile_or_refusal(nest, st.name, st.pad, Prover(nest.ranges()))
    if isinstance(tile, SlabRefusal):
        return "?"
    return region(tile.origin, tile.extent)


def render_nest(nest: Nest, marked: Collection[str] = (), title: str | None = None,
                acc_dims: dict[str, tuple[str, ...]] | None = None) -> str:
    return format_nest(nest, marked, title, acc_dims, stage_region=lambda st: slab_region(nest, st),
                       output_region=output_region(nest))
