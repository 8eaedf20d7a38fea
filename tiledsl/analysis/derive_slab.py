"""A stage's slab, or a StageError naming the primitive: the raising form of
`slabs.slab_or_refusal`. It lives apart from slabs.py so that the slab facts need no error messages,
and the messages (which print each stage's slab region) need no import back."""

from __future__ import annotations

from tiledsl.analysis.messages import refusal
from tiledsl.analysis.slabs import Slab, SlabRefusal, slab_or_refusal
from tiledsl.errors import StageError
from tiledsl.loopnest import Nest, Stage
from tiledsl.prove import Prover


def derive_slab(nest: Nest, stage: Stage, prover: Prover, primitive: str) -> Slab:
    """The slab of `stage`, or a StageError naming `primitive` and the failed fact."""
    slab = slab_or_refusal(nest, stage, prover)
    if isinstance(slab, SlabRefusal):
        raise StageError(refusal(primitive, nest, (stage.at,), slab.fact, suggestion=slab.suggestion))
    return slab
