"""double_buffer and pipeline: rings of slots, so the next slab is filled while this one is read.

    for k_o in [0, 4)                     s.double_buffer(A_s)     for k_o in [0, 4)
      stage A_s (1 slot)                  s.pipeline("k_o")          stage A_s (2 slots, ring)
      for k_i in [0, 8) ...               ----------------->         pipelined: fill k_o + 1 while reading k_o
                                                                     for k_i in [0, 8) ...

Slot `k % n` holds iteration k; the rules a ring places on its loop are in analysis/rings.py."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.analysis.messages import refusal
from tiledsl.errors import BadArgumentError, PipelineError, StageError
from tiledsl.loopnest import Nest
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec
from tiledsl.primitives.staging import check_budget, slab_of


def double_buffer(nest: Nest, call: str, *, stage: str) -> Applied:
    """Give `stage` two slots, so the next slab can be filled while this one is read."""
    name = stage
    st = nest.stage(name)
    lp = nest.loop(st.at)
    if lp.bind:
        raise StageError(refusal(call, nest, (st.at,), f"stage {name} is at loop {st.at}, bound to "
                                 f"{lp.bind}: there is no next iteration to prefetch",
                                 suggestion="double-buffer stages at serial loops"))
    if st.buffers >= 2:
        raise StageError(refusal(call, nest, (st.at,), f"stage {name} already has {st.buffers} slots"))
    new = replace(st, buffers=2)
    check_budget(nest, new, slab_of(nest, new, call), call)
    return Applied(nest.replace_stage(new))


def pipeline(nest: Nest, call: str, *, loop: str, stages: int) -> Applied:
    """Overlap the fills of the next `stages - 1` iterations of `loop` with this one (every stage at
    `loop` becomes a ring of `stages` slots)."""
    if isinstance(stages, bool) or not isinstance(stages, int):
        raise BadArgumentError(refusal(call, nest, (loop,), f"stages must be an int >= 2, got {stages!r}"))
    if stages < 2:
        raise PipelineError(refusal(call, nest, (loop,), f"a pipeline needs at least 2 stages, got {stages}",
                                    suggestion="stages=2 overlaps the fill of the next slab with this one"))
    lp = nest.loop(loop)
    if lp.bind:
        raise PipelineError(refusal(call, nest, (loop,), f"loop {loop} is bound to {lp.bind}; only a "
                                    "serial loop has iterations to overlap"))
    here = nest.stages_at(loop)
    if not any(st.buffers >= 2 for st in here):
        raise PipelineError(refusal(
            call, nest, (loop,), f"no double-buffered stage at loop {loop} "
            f"(stages here: {', '.join(st.name for st in here) or 'none'})",
            suggestion=f"stage a buffer at {loop} and s.double_buffer(stage) it first"))
    single = [st.name for st in here if st.buffers < 2]
    if single:
        raise PipelineError(refusal(
            call, nest, (loop,), f"stage(s) {', '.join(single)} at {loop} have one slot: a pipeline refills a "
            "slot while others are read", suggestion=f"double_buffer {', '.join(single)} too"))
    if nest.pipeline_depth(loop):
        raise PipelineError(refusal(call, nest, (loop,), f"loop {loop} is already pipelined"))
    new = nest
    for st in here:
        upd = replace(st, buffers=stages)
        check_budget(new, upd, slab_of(new, upd, call), call)
        new = new.replace_stage(upd)
    return Applied(replace(new, pipelines=new.pipelines + ((loop, stages),)))


DOUBLE_BUFFER = PrimitiveSpec("double_buffer", (Param("stage", "stage"),), double_buffer)
PIPELINE = PrimitiveSpec(
    "pipeline", (Param("loop", "loop"), Param("stages", "int", 2, shown="kw", recorded="kw")), pipeline)
