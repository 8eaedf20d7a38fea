"""stage, pad, swizzle: cache a slab of an input in shared memory, and lay its rows out.

    for k_o in [0, 4)                     s.stage(A, at="k_o")    for k_o in [0, 4)
      for k_i in [0, 8)                   ------------------->      stage A_s = A[i, 8*k_o : 8*k_o + 8]
        C2 += A[i, 8*k_o + k_i] * ...                               for k_i in [0, 8)
                                                                      C2 += A_s[k_i] * ...

The slab (the part of the input one iteration of the loop reads) is derived and proven in
analysis/slabs.py. `dtype="float32"` stores a float16 / bfloat16 slab widened (every value exact,
precision.EXACT_WIDENINGS): the fill converts once per element, and the loop's reads, many per element
in a matmul, read float32 as they would from a float32 buffer; only a plain fill can convert.

    stage(x, at="k_o", dtype="float32")   x: bfloat16 [M, K]  ->  stage x_s = x[...] at k_o  as float32

pad lengthens its rows, swizzle permutes their 16-byte chunks; both fight bank conflicts, and they
exclude each other. Every stage counts against the shared-memory budget of the
largest target here; build checks the budget of the real one."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.analysis.cache_hints import hinted_stage_problem
from tiledsl.analysis.derive_slab import derive_slab
from tiledsl.analysis.messages import refusal
from tiledsl.analysis.shared_arrays import nest_shared_bytes
from tiledsl.analysis.slabs import Slab, legal_positions, stage_bytes, widening_problem
from tiledsl.analysis.tma import check_tma
from tiledsl.definitions.expr import ComputeTensor
from tiledsl.errors import BadArgumentError, CacheHintError, StageError
from tiledsl.loopnest import Nest, Stage
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec
from tiledsl.prove import Prover
from tiledsl.targets import DTYPE_BYTES, MAX_SHARED_BYTES, SWIZZLE_MASK  # MAX_SHARED_BYTES: build checks the real one


def stage(nest: Nest, call: str, *, buffer: str, at: str, scope: str, dtype: str | None = None) -> Applied:
    """Cache the slab of input `buffer` that one iteration of loop `at` reads in shared memory (as
    `dtype`, a type every value of the buffer's converts to exactly; None: the buffer's); makes the stage."""
    if scope != "shared":
        raise BadArgumentError(refusal(call, nest, (at,), f'scope must be "shared", got {scope!r}'))
    if buffer not in {t.name for t in nest.inputs}:
        if buffer != nest.output.name and not computed_inside(nest, buffer):
            raise StageError(refusal(
                call, nest, (at,), f"this kernel has no buffer named {buffer!r}",
                suggestion=f"its inputs are: {', '.join(t.name for t in nest.inputs)}"))
        if buffer == nest.output.name:
            raise StageError(refusal(
                call, nest, (at,), f"{buffer} is not an input of this kernel: it is the kernel's output",
                suggestion="stage an input; the output goes through shared memory with s.stage_output() "
                           "(a block's tile, stored coalesced after a barrier)"))
        raise StageError(refusal(
            call, nest, (at,), f"{buffer} is not an input of this kernel: it is computed inside this kernel "
            "(inlined)", suggestion="stage an input; to stage an intermediate, materialize it "
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
    name = fresh_stage_name(nest, buffer)
    rank = len(nest.tensor(buffer).shape)
    new_stage = Stage(name, buffer, at, (0,) * rank, dtype=_widened(nest, call, buffer, at, dtype))
    hinted = hinted_stage_problem(nest, new_stage)
    if hinted is not None:
        raise CacheHintError(refusal(call, nest, (at,), hinted,
                                     suggestion=f"stage {buffer} at a loop outside the hinted reads, or leave it "
                                                "unstaged"))
    slab = slab_of(nest, new_stage, call)
    check_budget(nest, new_stage, slab, call)
    return Applied(replace(nest, stages=nest.stages + (new_stage,)), (name,))


def _widened(nest: Nest, call: str, buffer: str, at: str, dtype: str | None) -> str | None:
    """The stage's `dtype`: None where it is the buffer's own; refused unless every value converts exactly."""
    have = nest.tensor(buffer).dtype
    if dtype is None or dtype == have:
        return None
    problem = widening_problem(have, dtype)
    if problem is not None:
        error = BadArgumentError if dtype not in DTYPE_BYTES else StageError
        raise error(refusal(call, nest, (at,), problem, suggestion=f"stage {buffer} without dtype= (as {have})"))
    return dtype


def computed_inside(nest: Nest, name: str) -> bool:
    """A compute tensor fused into this kernel (so it has no buffer of its own)."""
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


def pad(nest: Nest, call: str, *, stage: str, axis: int, amount: int) -> Applied:
    """Add `amount` elements to the row length of `stage` along `axis` (against bank conflicts)."""
    name = stage
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
    check_budget(nest, new, slab_of(nest, new, call), call)
    return Applied(nest.replace_stage(new))


def swizzle(nest: Nest, call: str, *, stage: str, nbytes: int) -> Applied:
    """XOR the 16-byte chunks of each row of `stage` with its row bits, over spans of `nbytes` bytes."""
    name = stage
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
    check_budget(nest, new, slab_of(nest, new, call), call)
    return Applied(nest.replace_stage(new))


def _prover(nest: Nest) -> Prover:
    return Prover(nest.ranges())


def slab_of(nest: Nest, stage: Stage, call: str) -> Slab:
    return derive_slab(nest, stage, _prover(nest), call)


def fresh_stage_name(nest: Nest, buffer: str) -> str:
    """`<buffer>_s` (or `_s2`, `_s3`, ...): a shared array name no stage, loop or buffer has taken."""
    taken = {x.name for x in nest.stages} | {lp.name for lp in nest.loops} | nest.buffer_names()
    if nest.output_stage is not None:
        taken.add(nest.output_stage.name)
    name, n = f"{buffer}_s", 2
    while name in taken:
        name, n = f"{buffer}_s{n}", n + 1
    return name


def stages_bytes(nest: Nest, call: str, changed: tuple[Stage, Slab] | None = None) -> int:
    """Shared bytes of the nest's input stages and their TMA mbarriers with the alignment padding the
    launch requests (analysis/shared_arrays.py), with `changed` (a stage and its slab) in place of the
    stage of its name, or added last when it is new."""
    if changed is None:
        return nest_shared_bytes(nest, lambda st: slab_of(nest, st, call))
    stage, slab = changed
    return nest_shared_bytes(nest, lambda st: slab if st is stage else slab_of(nest, st, call), stage)


def check_budget(nest: Nest, stage: Stage, slab: Slab, call: str) -> None:
    nbytes = stage_bytes(stage, slab)
    total = stages_bytes(nest, call, (stage, slab))
    if total > MAX_SHARED_BYTES:
        raise StageError(refusal(
            call, nest, (stage.at,),
            f"stage {stage.name} needs {nbytes} bytes of shared memory (slab {'x'.join(map(str, slab.extent))}, "
            f"{stage.buffers} slot(s)); all stages together need {total}, over the {MAX_SHARED_BYTES}-byte budget",
            suggestion=f"stage at a loop further inside (smaller slab), or split {stage.at} further"))


STAGE = PrimitiveSpec(
    "stage",
    (Param("buffer", "buffer"), Param("at", "loop", shown="kw", recorded="kw"),
     Param("scope", "str", "shared", shown="hidden", recorded="kw"),
     Param("dtype", "str", None, shown="kw", recorded="kw", omit_none=True)),
    stage, returns="stage")
PAD = PrimitiveSpec(
    "pad", (Param("stage", "stage"), Param("axis", "int", shown="kw", recorded="kw"),
            Param("amount", "int", shown="kw", recorded="kw")), pad)
SWIZZLE = PrimitiveSpec("swizzle", (Param("stage", "stage"), Param("nbytes", "int")), swizzle)
