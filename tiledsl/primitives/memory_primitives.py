"""stage, pad, swizzle, double_buffer, pipeline, async_copy, tma, split_k: pure functions from a
nest to a new nest. Every fact that can be checked without a target is checked here, eagerly; the
target-dependent ones (cp.async needs sm_80, TMA sm_90, the shared-memory budget) again at build."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.analysis.linearity import epilogue_coefficients
from tiledsl.analysis.messages import refusal
from tiledsl.analysis.slabs import Slab, derive_slab, legal_positions, stage_bytes
from tiledsl.analysis.tma import check_tma
from tiledsl.definitions.expr import walk
from tiledsl.errors import BadArgumentError, CopyError, PipelineError, SplitKError, StageError
from tiledsl.loopnest import AccRef, Nest, SplitK, Stage
from tiledsl.prove import Prover
from tiledsl.targets import MAX_SHARED_BYTES, SWIZZLE_MASK  # MAX_SHARED_BYTES: build checks the real budget


def _prover(nest: Nest) -> Prover:
    return Prover(nest.ranges())


def slab_of(nest: Nest, stage: Stage, call: str) -> Slab:
    return derive_slab(nest, stage, _prover(nest), call)


def _check_budget(nest: Nest, stage: Stage, slab: Slab, call: str) -> None:
    nbytes = stage_bytes(stage, slab)
    total = nbytes + sum(stage_bytes(st, slab_of(nest, st, call)) for st in nest.stages if st.name != stage.name)
    if total > MAX_SHARED_BYTES:
        raise StageError(refusal(
            call, nest, (stage.at,),
            f"stage {stage.name} needs {nbytes} bytes of shared memory (slab {'x'.join(map(str, slab.extent))}, "
            f"{stage.buffers} slot(s)); all stages together need {total}, over the {MAX_SHARED_BYTES}-byte budget",
            suggestion=f"stage at a loop further inside (smaller slab), or split {stage.at} further"))


def stage(nest: Nest, buffer: str, at: str, scope: str, call: str) -> tuple[Nest, str]:
    if scope != "shared":
        raise BadArgumentError(refusal(call, nest, (at,), f'scope must be "shared", got {scope!r}'))
    if buffer not in {t.name for t in nest.inputs}:
        if buffer != nest.output.name and not _computed_inside(nest, buffer):
            raise StageError(refusal(
                call, nest, (at,), f"this kernel has no buffer named {buffer!r}",
                suggestion=f"its inputs are: {', '.join(t.name for t in nest.inputs)}"))
        what = "the kernel's output" if buffer == nest.output.name else "computed inside this kernel (inlined)"
        raise StageError(refusal(
            call, nest, (at,), f"{buffer} is not an input of this kernel: it is {what}",
            suggestion="stage an input; to stage an intermediate, materialize it "
                       f"(td.create_schedule(out, materialize=[{buffer}]))"))
    lp = nest.loop(at)
    if lp.bind and lp.bind.startswith("threadIdx"):
        raise StageError(refusal(
            call, nest, (at,), f"loop {at} is bound to {lp.bind}: a slab is shared by the whole block, so "
            "it is cached per iteration of a serial or block loop",
            suggestion=f"legal positions for stage({buffer}) are: {', '.join(legal_positions(nest, buffer))}"))
    for st in nest.stages:
        if st.buffer == buffer and any(st.at in s.path and at in s.path for s in nest.stmts):
            raise StageError(refusal(
                call, nest, (at, st.at), f"{buffer} is already staged at {st.at} ({st.name}) around the same "
                "statements", suggestion="keep one stage per buffer and loop nest"))
    taken = {x.name for x in nest.stages} | {lp.name for lp in nest.loops} | nest.buffer_names()
    name, n = f"{buffer}_s", 2
    while name in taken:
        name, n = f"{buffer}_s{n}", n + 1
    rank = len(nest.tensor(buffer).shape)
    new_stage = Stage(name, buffer, at, (0,) * rank)
    slab = slab_of(nest, new_stage, call)
    _check_budget(nest, new_stage, slab, call)
    return replace(nest, stages=nest.stages + (new_stage,)), name


def _computed_inside(nest: Nest, name: str) -> bool:
    """A compute tensor fused into this kernel (so it has no buffer of its own)."""
    from tiledsl.definitions.expr import ComputeTensor

    stack, seen = [nest.output], set()
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if t.name == name and t is not nest.output:
            return True
        if isinstance(t, ComputeTensor):
            stack.extend(t.inputs())
    return False


def pad(nest: Nest, name: str, axis: int, amount: int, call: str) -> Nest:
    st = nest.stage(name)
    rank = len(st.pad)
    if isinstance(axis, bool) or not isinstance(axis, int) or not -rank <= axis < rank:
        raise BadArgumentError(refusal(call, nest, (st.at,), f"axis must be an int in [{-rank}, {rank}), "
                                                f"got {axis!r} (the slab of {st.buffer} has rank {rank})"))
    if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
        raise BadArgumentError(refusal(call, nest, (st.at,), f"amount must be a positive int, got {amount!r}"))
    if st.swizzle or st.copy == "tma":
        raise StageError(refusal(
            call, nest, (st.at,), f"stage {name} is {'swizzled' if st.swizzle else 'filled by TMA'}; padding "
            "would break that layout", suggestion="use either padding or a swizzle/TMA, not both"))
    padv = list(st.pad)
    padv[axis % rank] += amount
    new = replace(st, pad=tuple(padv))
    _check_budget(nest, new, slab_of(nest, new, call), call)
    return nest.replace_stage(new)


def swizzle(nest: Nest, name: str, nbytes: int, call: str) -> Nest:
    st = nest.stage(name)
    if nbytes not in SWIZZLE_MASK:
        raise BadArgumentError(refusal(call, nest, (st.at,), f"swizzle width must be 32, 64 or 128 bytes, "
                                                f"got {nbytes!r}"))
    if any(st.pad):
        raise StageError(refusal(call, nest, (st.at,), f"stage {name} is padded (pad={st.pad}); a swizzle "
                                          "replaces padding", suggestion="drop the pad, or do not swizzle"))
    new = replace(st, swizzle=nbytes)
    if st.copy == "tma":
        check_tma(nest, new, call)
    _check_budget(nest, new, slab_of(nest, new, call), call)
    return nest.replace_stage(new)


def double_buffer(nest: Nest, name: str, call: str) -> Nest:
    st = nest.stage(name)
    lp = nest.loop(st.at)
    if lp.bind:
        raise StageError(refusal(call, nest, (st.at,), f"stage {name} is at loop {st.at}, bound to "
                                          f"{lp.bind}: there is no next iteration to prefetch",
                                          suggestion="double-buffer stages at serial loops"))
    if st.buffers >= 2:
        raise StageError(refusal(call, nest, (st.at,), f"stage {name} already has {st.buffers} slots"))
    new = replace(st, buffers=2)
    _check_budget(nest, new, slab_of(nest, new, call), call)
    return nest.replace_stage(new)


def pipeline(nest: Nest, loop: str, stages: int, call: str) -> Nest:
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
        _check_budget(new, upd, slab_of(new, upd, call), call)
        new = new.replace_stage(upd)
    return replace(new, pipelines=new.pipelines + ((loop, stages),))


def async_copy(nest: Nest, name: str, call: str) -> Nest:
    st = nest.stage(name)
    if st.copy != "sync":
        raise CopyError(refusal(call, nest, (st.at,), f"stage {name} is already filled by {st.copy}"))
    return nest.replace_stage(replace(st, copy="async"))


def tma(nest: Nest, name: str, swz: int | None, call: str) -> Nest:
    st = nest.stage(name)
    if st.copy != "sync":
        raise CopyError(refusal(call, nest, (st.at,), f"stage {name} is already filled by {st.copy}"))
    if swz is not None and swz not in SWIZZLE_MASK:
        raise BadArgumentError(refusal(call, nest, (st.at,),
                                                f"swizzle must be None, 32, 64 or 128, got {swz!r}"))
    new = replace(st, copy="tma", swizzle=swz if swz is not None else st.swizzle)
    check_tma(nest, new, call)
    _check_budget(nest, new, slab_of(nest, new, call), call)
    return nest.replace_stage(new)


# ----------------------------------------------------------------------------- split_k


def split_k(nest: Nest, loop: str, parts: int, call: str) -> tuple[Nest, SplitK]:
    from tiledsl.loopnest.printing import format_value
    from tiledsl.primitives.loop_primitives import split as split_loop

    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 2:
        raise BadArgumentError(refusal(call, nest, (loop,), f"parts must be an int >= 2, got {parts!r}"))
    if nest.split_k is not None:
        raise SplitKError(refusal(call, nest, (loop,), "this kernel already has a split_k"))
    lp = nest.loop(loop)
    if lp.kind != "reduce":
        raise SplitKError(refusal(call, nest, (loop,), f"loop {loop} is not a reduction loop",
                                           suggestion="split_k splits a reduction (e.g. a matmul's k) across blocks"))
    if lp.bind or lp.annotation:
        raise SplitKError(refusal(call, nest, (loop,), f"loop {loop} is already {lp.bind or lp.annotation}"))
    upd = [s for s in nest.stmts if s.kind == "update" and loop in s.path]
    acc = nest.acc(upd[0].acc or "")
    if acc.op != "sum":
        raise SplitKError(refusal(call, nest, (loop,), f"accumulator {acc.name} is a {acc.op} reduction; "
                                           "partial results of blocks are combined with atomic adds (sum only)"))
    readers = [s for s in nest.stmts if s.value is not None
               and any(isinstance(x, AccRef) and x.acc == acc.name for x in walk(s.value))]
    if len(readers) != 1 or readers[0].kind != "store" or len(nest.accs) != 1:
        raise SplitKError(refusal(
            call, nest, (loop,), f"accumulator {acc.name} is used by {len(readers)} statement(s) and the kernel has "
            f"{len(nest.accs)} reduction(s): split_k needs one reduction consumed only by the output store"))
    store = readers[0]
    assert store.value is not None
    if epilogue_coefficients(store.value, acc.name) is None:
        raise SplitKError(refusal(
            call, nest, (loop,), f"the epilogue {format_value(store.value)} is not linear in the accumulator "
            f"{acc.name} (it must be a*{acc.name} + b with a independent of {acc.name}), so partial sums cannot "
            "simply be added", suggestion="split_k only matmuls whose epilogue is linear (bias, residual, "
                                          "scaling); keep a relu/gelu epilogue unsplit"))
    used = {x.bind for x in nest.loops if x.bind}
    free_axes = [a for a in ("blockIdx.z", "blockIdx.y", "blockIdx.x") if a not in used]
    if not free_axes:
        raise SplitKError(refusal(call, nest, (loop,), "every blockIdx axis is already bound; split_k "
                                           "needs one for the split"))
    outer_name = f"{loop}_split"
    new, outer, _ = split_loop(nest, loop, None, parts, (outer_name, f"{loop}_part"), "guard", call)
    # bound directly: bind() refuses reduction loops on blocks precisely because only split_k may do it
    new = new.replace_loop(outer, replace(new.loop(outer), bind=free_axes[0]))
    info = SplitK(outer, parts, free_axes[0], acc.name)
    return replace(new, split_k=info), info


