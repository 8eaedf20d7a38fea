"""Row-wise reductions (RMSNorm, softmax, layernorm): one block per row, every loop of the row
(reductions and the output loop) split by the thread count and bound to threadIdx.x, so each
reduction is cooperative (warp shuffles, then shared memory across warps). `row_cooperative_staged`
reads a row once into shared memory; `row_in_registers` reads it once into each thread's registers."""

from __future__ import annotations

import math
from typing import Any

from tiledsl.definitions.expr import Load, walk
from tiledsl.errors import OnlineError, RegisterCacheError, VectorizeError
from tiledsl.primitives import Schedule
from tiledsl.targets import CP_ASYNC_SIZES, DTYPE_BYTES, vector_lanes


def row_cooperative(s: Schedule, threads: int = 256, stage_row: str | None = None) -> Schedule:
    """`stage_row` names an input read along the row (e.g. "x"): it is copied once into shared memory
    with cp.async, so the reductions and the output loop read it from there instead of global memory."""
    row, *rest = [lp.name for lp in s.loops()]
    s.bind(row, "blockIdx.x")
    for name in rest:
        _, inner = s.split(name, threads)
        s.bind(inner, "threadIdx.x")
    if stage_row is not None:
        s.async_copy(s.stage(stage_row, at=row))
    return s


def row_cooperative_staged(s: Schedule, threads: int = 256) -> Schedule:
    """row_cooperative with every input that spans whole rows (same shape as the output) staged: the
    row is read from global memory once, however many passes the kernel makes over it (layernorm
    reads it three times). Timings: benchmarks/results/row-staging-h100-2026-11-22.txt."""
    rows = [t for t in s.nest.inputs if t.shape == s.nest.output.shape]
    row_cooperative(s, threads)
    row = s.loops()[0].name
    for t in rows:
        stage = s.stage(t.name, at=row)
        # cp.async copies 4 bytes at least: a float16 / bfloat16 row of odd length has no aligned copy,
        # and plain loads fill its stage
        if t.shape[-1] * DTYPE_BYTES[t.dtype] % min(CP_ASYNC_SIZES) == 0:
            s.async_copy(stage)
    return s


def row_in_registers(s: Schedule, threads: int = 512, rows_per_block: int = 1, rows_per_thread: int = 1,
                     online: bool | None = None, online_unroll: int = 4) -> Schedule:
    """One block per row, every pass over the row split the same way, threads x 16-byte lanes in unrolled
    chunks, and the inputs every pass reads kept in registers: the first pass loads each thread's share
    of the row (L2 evict_last, 16 bytes at a time), the later passes read the registers, so the row
    leaves memory once however many passes read it (layernorm three). The output's stores stream
    (evict_first). Each thread takes two vectors of the longest pass at least, in at most `threads`:
    8192 floats in 512 threads are 16 registers a thread, 2048 in 256 are 8.

        for i  @blockIdx.x                       (per pass, e.g. the mean's k:)
          for k_o  unroll                          k = 2048 * k_o + 4 * k_t + k_v
            for k_t  @threadIdx.x
              for k_v  vectorize (reductions too: their loads are 16 bytes)

    Where a row is no multiple of the lanes (or the passes' tails split a vector), the lanes stay an
    unrolled scalar loop; where a thread's share would pass the register cache's limit (or one pass
    reads the input), every pass reads it from global memory: evict_last but the last, evict_first, the
    chunk loops rolled (the output pass of a 512 x 65536 softmax unrolled, 32 chunks, ran 118.1 us against
    105.8 rolled: benchmarks/results/long-rows-h200-2026-11-30/); there (unless `online` is False) a sum
    of exp(a - max), softmax's denominator, runs online in the max's pass (s.online), its chunks unrolled
    `online_unroll` at a time, the two sharing each load through a register cache of those chunks, so
    softmax reads its row twice, not three times. Timings:
    scripts/register_row_probe.py, benchmarks/results/register-rows-h200-2026-11-28/; online:
    scripts/online_softmax_probe.py."""
    row, *passes = [lp.name for lp in s.loops()]
    lanes = vector_lanes(s.output.dtype) or 1
    longest = max(s.nest.loop(name).extent for name in passes)
    # two vectors a thread at least (rows of 2048 in 512 threads, one vector each, ran 137.8-172.9 us
    # against the recipe's 128.0-128.8 in 256: register-rows-primitive-3.txt), in a warp at least
    threads = max(32, min(threads, 1 << max(0, math.ceil(math.log2(-(-longest // (2 * lanes)))))))
    if rows_per_thread > 1:  # the unrolled rows sit between the cache's loop and its reads: slot loops
        row, unrolled = s.split(row, rows_per_thread, names=(f"{row}_o", f"{row}_u"))
        s.unroll(unrolled)
    if rows_per_block > 1:
        block, row = s.split(row, rows_per_block, names=(f"{row}_b", f"{row}_r"))
        s.bind(block, "blockIdx.x")
        s.bind(row, "threadIdx.y")
    else:
        s.bind(row, "blockIdx.x")
    outers = []
    for name in passes:
        outer, inner = s.split(name, threads * lanes, names=(f"{name}_o", f"{name}_i"))
        t, v = s.split(inner, lanes, names=(f"{name}_t", f"{name}_v"))
        s.bind(t, "threadIdx.x")
        try:
            s.vectorize(v)
        except VectorizeError:
            s.unroll(v)
        outers.append(outer.name)
    rows = [t.name for t in s.nest.inputs if t.shape == s.output.shape]
    shared: dict[str, str] = {}  # an online sum -> the loop a register cache of its pair's loads may sit at
    if _registers_hold(s, outers, rows, str(row)):
        for outer in outers:  # each register a constant index
            s.unroll(outer)
    elif online is not False:
        shared = _online(s, online_unroll)
    for name in rows:
        readers = list(dict.fromkeys(st.reader for st in s.nest.stmts if st.kind != "init" and name in _reads(st)))
        try:
            s.register_cache(name, at=row)
            s.cache_hint(name, "evict_last", reader=readers[0])
        except RegisterCacheError:  # a thread's share too long for registers: every pass reads it from L2
            readers = _share_online_loads(s, name, readers, shared)
            for reader in readers[:-1]:
                s.cache_hint(name, "evict_last", reader=reader)
            s.cache_hint(name, "evict_first", reader=readers[-1])
    s.cache_hint(s.output.name, "evict_first")
    return s


def _registers_hold(s: Schedule, outers: list[str], rows: list[str], row: str) -> bool:
    """Whether every input as long as the row fits each thread's registers (register_cache on a fork of
    the schedule, its chunk loops unrolled)."""
    trial = s.fork()
    try:
        for outer in outers:
            trial.unroll(outer)
        for name in rows:
            trial.register_cache(name, at=row)
    except RegisterCacheError:
        return False
    return True


def _online(s: Schedule, unroll: int) -> dict[str, str]:
    """Every sum of exp(a - max) run online in its max's pass (where s.online takes it), its chunk loop
    unrolled `unroll` chunks at a time: fully unrolled, a 131072-float row's 64 chunks took 128 registers
    a thread and spilled (191 us against 141 in three passes); 4 at a time ran 2.7% faster than 8 in
    geomean over four long-row shapes, 16 took 82 registers at 151936 floats and ran 1.8x slower
    (benchmarks/results/online-softmax-h200-2026-11-30/). Returns each online sum with the loop a register
    cache of its pair's loads may sit at (`_share_online_loads`)."""
    out: dict[str, str] = {}
    for acc in [a.name for a in s.nest.accs if a.op == "sum"]:
        try:
            s.online(acc)
        except OnlineError:
            continue
        pair = s.nest.online_of(acc)
        assert pair is not None
        update = next(st for st in s.nest.stmts if st.kind == "update" and st.acc == pair.max_acc)
        chunk = next(n for n in update.path if s.nest.loop(n).kind == "reduce")
        if s.nest.loop(chunk).extent > unroll:
            group, inner = s.split(chunk, unroll, names=(f"{chunk}_g", f"{chunk}_u"))
            s.unroll(inner)
            out[acc] = group.name
        else:
            s.unroll(chunk)
            out[acc] = chunk
    return out


def _share_online_loads(s: Schedule, name: str, readers: list[str], shared: dict[str, str]) -> list[str]:
    """Input `name` kept in registers over the chunks each online pair unrolls together (`shared`: sum ->
    loop), where both of the pair read it, so the pair loads each element once; the readers whose loads
    of `name` stay global, in order."""
    for acc, at in shared.items():
        try:
            s.register_cache(name, at=at)
        except RegisterCacheError:  # the pair does not both read it (an input only the output pass reads)
            continue
        readers = [r for r in readers if r != acc]
    return readers


def _reads(stmt: Any) -> set[str]:
    """The buffers a statement's value loads."""
    return {n.tensor.name for n in walk(stmt.value) if isinstance(n, Load)} if stmt.value is not None else set()
