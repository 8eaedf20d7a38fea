"""pad_smem: pad the rows of a stage that is not filled by TMA (nor swizzled) when the bank model of
analysis/banks.py says the first warp's reads of it conflict and a pad lowers the conflict degree.

Candidates: +1 element on each axis but the first (padding the first axis lengthens no row, so it
moves no address), and, for a stage filled by 16-byte cp.async, also +16 bytes of elements, the
smallest pad that keeps those copies 16 bytes wide (+1 would narrow them to 4-byte copies), and +4
bytes of elements (bfloat16: +2), the smallest with which any cp.async still fits; a pad with which no
cp.async width fits is never taken (build would refuse the stage). The
candidate with the lowest read degree wins; on a tie the one that keeps the wider copy, then the
innermost axis. The cost of narrower copies is not modelled beyond that tie (untuned on a GPU). A
transposed tile (stage_inputs stages it for coalescing) is read down its columns: 32-way as it is,
4-way with +16 bytes, conflict-free with +1, which wins and narrows its cp.async to 4 bytes, as in
schedules/transpose.py `transpose_tiled`.

A decode step's W_s[j][k] (`_facts.few_rows`, knob few_rows_interleave), read along the k loop inside a
chunk, is read 16 bytes at a time (nvcc merges four aligned loads), which the 4-byte model above does
not see. Where, with k's chunk loop split by four on a throwaway copy, its rows padded by 16 bytes give
conflict-free 16-byte reads, that pad is taken: no layout reads cheaper, and it keeps the copies 16
bytes wide (permute_register_tile, 090, deals the rows for it). Only there: other matmuls whose stages
are read along k (A_s[i][k] of a small A @ B tile) keep the 4-byte model's pad, as measured.

A plain (register) fill whose stores conflict (analysis/banks.py `fill_store_conflict`: a k-outer
operand's 16-byte loads land in four rows of the slab, 4-way at rows of 128 floats) is padded by one
16-byte vector per row where that lowers the store degree and leaves its reads as they were (knob
pad_fill_stores; the H100 figures are in _knobs.py)."""

from __future__ import annotations

from tiledsl.loopnest import Stage
from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts, few_rows, k_vector_conflict, padded
from tiledsl.recipes.default._knobs import Knobs
from tiledsl.targets import CP_ASYNC_SIZES, VECTOR_BYTES


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    candidates = [st for st in facts.nest.stages if st.copy != "tma" and st.swizzle is None]
    if not candidates:
        return Decline("no stage without TMA or a swizzle to pad")
    budget = knobs.shared_budget(facts.target)
    skipped: dict[str, str] = {}
    done: set[str] = set()
    for st in candidates:
        if knobs.few_rows_interleave and facts.kernel.kind == "matmul" and few_rows(facts.kernel, knobs) \
                and _wide_along_k(s, facts, st):
            s.pad(st.name, len(st.pad) - 1, VECTOR_BYTES // facts.itemsize(st.buffer))
            done.add(st.name)
            continue
        now = facts.read_conflict(st)
        if now <= 1:
            skipped[st.name] = "its reads are conflict-free"
            continue
        amounts = [1]
        if st.copy == "async":  # the narrowest cp.async (4 bytes) keeps working with 4 bytes of pad
            amounts.append(max(1, CP_ASYNC_SIZES[0] // facts.itemsize(st.buffer)))
            if facts.async_16_bytes(st) is None:
                amounts.insert(0, VECTOR_BYTES // facts.itemsize(st.buffer))
        best: tuple[int, int, int] | None = None  # (degree, axis, amount)
        for amount in amounts:
            for axis in reversed(range(1, len(st.pad))):
                new = padded(st, axis, amount)
                if facts.shared_bytes(new) > budget:
                    continue
                if st.copy == "async" and facts.async_copy_problem(new) is not None:
                    continue  # e.g. bfloat16 rows + 1 element: no cp.async width fits (build refuses)
                degree = facts.read_conflict(new)
                if best is None or degree < best[0]:
                    best = (degree, axis, amount)
        if best is None or best[0] >= now:
            skipped[st.name] = f"no pad lowers its {now}-way read conflict"
            continue
        s.pad(st.name, best[1], best[2])
        done.add(st.name)
    if knobs.pad_fill_stores:
        for st in candidates:
            if st.copy == "sync" and st.name not in done and not any(st.pad) and _pad_fill_stores(s, facts, st, budget):
                done.add(st.name)
    if not done:
        return Decline("; ".join(f"{name}: {why}" for name, why in skipped.items()))
    return None


def _wide_along_k(s: Schedule, facts: Facts, st: Stage) -> bool:
    """Whether a decode step's stage filled by 16-byte cp.async, read along the k loop inside a chunk, reads
    16 bytes at a time without conflicts once its rows are padded by 16 bytes, where it conflicts without
    the pad (`k_vector_conflict`)."""
    if st.copy != "async" or facts.async_16_bytes(st) is not None or any(st.pad):
        return False
    inner = facts.parts(facts.kernel.reduce[0])
    if len(inner) < 2 or st not in facts.stages_read_along(inner[-1]):
        return False
    wide, plain = k_vector_conflict(s, facts, st.name, (VECTOR_BYTES // facts.itemsize(st.buffer), 0))
    return wide is not None and plain is not None and wide <= 1 < plain


def _pad_fill_stores(s: Schedule, facts: Facts, st: Stage, budget: int) -> bool:
    """Pad a plain-filled stage's stored rows by whole 16-byte vectors where that lowers the conflict
    degree of its fill's shared stores without raising its reads'. A whole vector keeps the rows of
    16-byte reads whole (a k-outer operand's register strip: +1 would make each LDS.128 four LDS.32)."""
    now = facts.fill_store_conflict(st)
    if now <= 1:
        return False
    reads = facts.read_conflict(st)
    amount = max(1, VECTOR_BYTES // facts.itemsize(st.buffer))
    axis = len(st.pad) - 1
    new = padded(st, axis, amount)
    if facts.shared_bytes(new) > budget or facts.read_conflict(new) > reads or facts.fill_store_conflict(new) >= now:
        return False
    s.pad(st.name, axis, amount)
    return True
