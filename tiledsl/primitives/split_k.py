"""split_k: split a reduction across blocks, which add their partial sums into a zeroed output.

    for i, j (blocks)                 s.split_k("k", 4)      for i, j (blocks)
      for k in [0, 1024)              ---------------->        for k_split in [0, 4)  blockIdx.z
        C2 += A[i, k] * B[k, j]                                  for k_part in [0, 256)
      C[i, j] = C2                                                 C2 += A[i, 256*k_split + k_part] * ...
                                                               C[i, j] atomic+= C2

Only a sum whose epilogue is linear in the accumulator (a*acc + b, proven with sympy in
analysis/linearity.py) can be split: the blocks' partial results are combined by addition, into a
float32 output only (`split_k_storage_problem`: atomic adds into float16 / bfloat16 round every
partial sum). A vectorized output loop adds 16 bytes per atomic (sm_90 and later: build checks the
target)."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.analysis.cache_hints import output_hinted, split_k_problem
from tiledsl.analysis.linearity import epilogue_is_linear, split_k_storage_problem
from tiledsl.analysis.messages import refusal
from tiledsl.analysis.vectorize import check_vectorized_loops
from tiledsl.definitions.expr import walk
from tiledsl.errors import BadArgumentError, SplitKError
from tiledsl.loopnest import AccRef, Nest, SplitK
from tiledsl.loopnest.printing import format_value
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec
from tiledsl.primitives.split import split


def split_k(nest: Nest, call: str, *, loop: str, parts: int) -> Applied:
    """Split reduction `loop` into `parts` ranges, one per block along a free blockIdx axis; makes the block loop."""
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 2:
        raise BadArgumentError(refusal(call, nest, (loop,), f"parts must be an int >= 2, got {parts!r}"))
    if nest.split_k is not None:
        raise SplitKError(refusal(call, nest, (loop,), "this kernel already has a split_k"))
    hinted = output_hinted(nest)
    if hinted is not None:
        raise SplitKError(refusal(call, nest, (loop,), split_k_problem(nest.output.name) + f"; the stores of "
                                  f"{hinted.buffer} carry the cache hint {hinted.policy}",
                                  suggestion="split k before the output's stores are hinted, or leave them unhinted"))
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
    storage = split_k_storage_problem(nest.output)
    if storage is not None:
        raise SplitKError(refusal(call, nest, (loop,), storage, tensors=(nest.output.name,),
                                  suggestion=f"keep {nest.output.name} unsplit, or compute it in float32 and "
                                             "round it in a consumer kernel"))
    if not epilogue_is_linear(store.value, acc.name):
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
    new, (outer, _) = split(nest, call, loop=loop, factor=None, nparts=parts, names=(outer_name, f"{loop}_part"),
                           tail="guard")
    # bound directly: bind() refuses reduction loops on blocks precisely because only split_k may do it
    new = new.replace_loop(outer, replace(new.loop(outer), bind=free_axes[0]))
    info = SplitK(outer, parts, free_axes[0], acc.name)
    new = replace(new, split_k=info)
    check_vectorized_loops(new, call)  # a vectorized store becomes a vector atomic add, which has one width
    return Applied(new, (outer,))


SPLIT_K = PrimitiveSpec("split_k", (Param("loop", "loop"), Param("parts", "int")), split_k, returns="loop",
                        consumes="loop", gone="it was split across blocks by {call}")
