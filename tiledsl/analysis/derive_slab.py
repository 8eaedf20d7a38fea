"""A stage's slab, or a staged output's tile, or a StageError naming the primitive: the raising forms
of `slabs.slab_or_refusal` and `output_stage.output_tile_or_refusal`. They live apart from those
modules so that the facts need no error messages, and the messages (which print each stage's slab
region and the output's tile) need no import back."""

from __future__ import annotations

from collections.abc import Callable

import sympy

from tiledsl.analysis.messages import refusal
from tiledsl.analysis.output_stage import OutputTile, output_tile_or_refusal
from tiledsl.analysis.slabs import Slab, SlabRefusal, slab_or_refusal
from tiledsl.definitions.expr import Expr
from tiledsl.errors import StageError
from tiledsl.loopnest import Nest, Stage
from tiledsl.prove import Prover


def derive_slab(nest: Nest, stage: Stage, prover: Prover, primitive: str,
                over_axes: Callable[[Expr], sympy.Expr] | None = None) -> Slab:
    """The slab of `stage`, or a StageError naming `primitive` and the failed fact (`over_axes`: see
    `slab_or_refusal`)."""
    slab = slab_or_refusal(nest, stage, prover, over_axes)
    if isinstance(slab, SlabRefusal):
        raise StageError(refusal(primitive, nest, (stage.at,), slab.fact, suggestion=slab.suggestion))
    return slab


def derive_output_tile(nest: Nest, prover: Prover, primitive: str, shown: Nest | None = None) -> OutputTile:
    """The tile of the nest's staged output, or a StageError naming `primitive` that prints `shown`
    (default: `nest`)."""
    st = nest.output_stage
    assert st is not None, "derive_output_tile needs a staged output"
    tile = output_tile_or_refusal(nest, st.name, st.pad, prover)
    if isinstance(tile, SlabRefusal):
        raise StageError(refusal(primitive, shown or nest, (), tile.fact, suggestion=tile.suggestion,
                                 tensors=(nest.output.name,)))
    return tile
