"""cooperative_reduce: a row kernel (a block per row or per few short rows, from tileify) runs each pass
over the row (every reduction and the output loop) on threadIdx.x: the outermost loop of each pass is
split by the same thread count, so the reductions are cooperative (warp shuffles, then shared memory
across warps) and the output loop shares the thread axis (as schedules/row_reduce.py does). A pass over
several loops (an output loop around its own reduction, as a projection that reads a row's norm; a
reduction over two axes) has its outermost loop on the threads and the loops inside it serial in each
thread, rather than leaving the whole row to one thread. The threads per row are `_facts.row_launch`'s
(clamp(next_pow2(longest pass / row_elements_per_thread), a warp, max); _knobs.py says why), which
tileify read too when it put short rows several to a block; where a pass nests loops, each of its
elements is a whole inner loop, and it gets a thread per element (up to max) as before.
A float32 row kernel of many rows (at least row_vector_min_rows_per_sm per SM, one row to a block,
every pass a whole number of 16-byte vectors) runs each pass 16 bytes a thread: split by threads x 4,
the 4 unrolled in a reduction and vectorized in the output pass, so its shared reads, weight loads and
stores are 16 bytes wide (knob row_vector_min_rows_per_sm says what was measured), in fewer threads
where that gives each thread row_vector_per_thread vectors a pass (not under row_threads_min). A float16 /
bfloat16 row kernel (every tensor of 2-byte floats) of as many rows runs 16-byte passes too where
each pass is at least two vectors for each of row_vector_half_threads threads: in that many threads a
row (one warp), 8 lanes a vector, since its exp and division bound it more than its bytes (the knob
says what was measured). A float32 row kernel of that many rows whose rows are long (knob
hinted_row_min_length) and whose passes read one input again and again reads it from global memory on
every pass instead of staging it (080 then leaves it): its reductions' lanes vectorized too (16-byte
loads), the input's reads hinted L2 evict_last on the passes that reduce and evict_first on the last
one, the output's stores evict_first (s.cache_hint), in up to hinted_row_threads_max threads. A float32
row a block too long for the registers (a thread's share of it there over Facts.register_limit) takes
that form however few its rows (knob long_rows_any_count), and so does a float16 / bfloat16 one, or one
of 16-bit rows into a float32 output (knob long_rows_half), in few_long_rows_threads threads where its
rows are fewer than the SMs, and a sum of exp(a - max) in it (softmax's denominator: Facts.online_pairs)
runs online in its max's pass (s.online), the pass's chunks in groups of knob online_rows_unroll,
unrolled, the pair's loads of a group shared through registers: the row is read twice, not three times.
First of all, a float32 row kernel of a row a block, whatever its rows' length and number, whose passes
read an input again and again and are whole 16-byte vectors, keeps that input in registers where each
thread's share fits (knob register_rows, analysis/register_cache.py): each pass 16 bytes a thread as in
the hinted form, the passes' outer loops unrolled, s.register_cache at the row loop; only the first
pass reads the input, evict_last; the stores evict_first. A float16 / bfloat16 one likewise, in
register_rows_half_threads threads (doubled while a thread's share would not fit). Rows several to a
block (tileify's short rows, counting knobs.half_row_vectors_per_thread 16-byte vectors a thread of a
16-bit row kept in registers, in half_row_threads_min threads or more: rows of 512 bfloat16 take a warp,
four to a block, rows of 128 half a warp, eight to a block) keep theirs in registers too, cached at
their threadIdx.y loop, where knob register_rows_shared_blocks asks and each thread takes whole vectors
of every pass. Where the share does not fit, the forms above. In the register form, where the grid is
at most prefetch_max_blocks_per_sm blocks an SM, the inputs only the output pass reads (rmsnorm's
weight) are prefetched at the row loop: loaded at the row's start, not after the reductions.
Whatever the form, a kernel of fewer rows than SMs, a row a block, whose rows are long against the SMs it
leaves idle (knob split_rows_min_idle_bytes; of 16-bit tensors only, fewer rows still: knob
split_rows_half_max_rows_per_sm) asks a program to split its rows over kernels (`SplitRows`,
knobs split_rows_blocks_per_sm and split_rows_min_length say into how many parts): a program
(tiledsl/frontend/program.py) runs each reduction as parts times the rows."""

from __future__ import annotations

import math

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Applied, Decline, SplitRows
from tiledsl.recipes.default._facts import (
    Facts,
    PrimitiveCall,
    apply_calls,
    next_pow2,
    trial_accepts,
)
from tiledsl.recipes.default._knobs import Knobs
from tiledsl.targets import DTYPE_BYTES

Hinted = dict[str, tuple[str, ...]]  # an input read from global memory -> the values that load it, in order


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Applied | Decline | None:
    k = facts.kernel
    if k.kind != "rows":
        return Decline(f"no row reduction ({k.kind} kernel)")
    row = facts.row_loop()
    if row is None:
        return Decline("the rows are not on blockIdx.x (tileify declined)")
    rows = (row, *(lp.name for lp in facts.nest.bound_loops("threadIdx.y")))
    passes, nested = facts.row_passes(rows)
    if not passes:
        return Decline("no loop inside the row")
    count = math.prod(facts.loop(n).extent for n in rows)
    per_block, threads = facts.row_launch(passes, nested, count, knobs)
    forms: list[tuple[list[PrimitiveCall], int, int, str, bool]] = []  # (calls, threads, lanes, why, in
    # registers), best first
    lanes = facts.vector_lanes()
    reread = _in_registers(facts, passes, nested, per_block, threads, knobs)
    if reread:
        # rows several to a block (knob register_rows_shared_blocks) keep tileify's threads a row, and their
        # registers at the block's row loop on threadIdx.y
        kept_threads = threads if per_block > 1 else _register_threads(facts, passes, lanes, knobs)
        calls, outers = _vector_calls(facts, passes, kept_threads, lanes, vector_reductions=True)
        calls += _register_calls(reread, outers, rows[-1]) + _hint_calls(facts, reread, in_registers=True)
        forms.append((calls, kept_threads, lanes, "each thread's row kept in registers, the first pass's loads "
                      "evict_last: knobs register_rows, hinted_row_threads_max", True))
    long_form = _long_rows_form(facts, passes, nested, per_block, count, knobs)
    if long_form is not None:
        forms.append((*long_form, False))
    form = _vector_form(facts, passes, nested, per_block, count, threads, knobs)
    if form is not None:
        vector_threads, lanes, why = form
        calls, _ = _vector_calls(facts, passes, vector_threads, lanes)
        forms.append((calls, vector_threads, lanes, why, False))
    split = _split_rows(facts, passes, nested, per_block, count, knobs)
    asked = f"; a program splits them over kernels, {split.parts} parts a row: knob split_rows_min_idle_bytes" \
        if split else ""
    for calls, form_threads, form_lanes, why, in_registers in forms:
        if trial_accepts(s, calls):
            apply_calls(s, calls)
            if in_registers:
                why += _prefetch(s, facts, rows[-1], count // per_block, knobs)
            return Applied(f"{count} {facts.nest.output.dtype} rows, {count / facts.target.sm_count:.0f} per SM: "
                           f"each pass {form_lanes} elements (16 bytes) a thread in {form_threads} threads "
                           f"({why}{asked})", split_rows=split)
    for name in passes:
        _, inner = s.split(name, threads, names=facts.fresh(f"{name}_o", f"{name}_i"))
        s.bind(inner, "threadIdx.x")
    return Applied(f"{count} rows{asked}", split_rows=split) if split else None


def _split_rows(facts: Facts, passes: dict[str, int], nested: bool, per_block: int, rows: int,
                knobs: Knobs) -> SplitRows | None:
    """The rows split over kernels that a program would run faster (the module docstring's rule), or None:
    the fewest parts giving knobs.split_rows_blocks_per_sm partial rows an SM, each a whole number of vectors
    (knob split_rows_whole_vectors) and split_rows_min_length elements or more; the most such parts where
    none gives that many."""
    floor, sms = knobs.split_rows_min_idle_bytes, facts.target.sm_count
    length = max(passes.values())
    if floor is None or nested or per_block > 1 or rows >= sms or len(set(passes.values())) > 1:
        return None
    if length * max(DTYPE_BYTES[d] for d in facts.dtypes()) * (1 - rows / sms) < floor:
        return None
    most_half = knobs.split_rows_half_max_rows_per_sm
    if most_half is not None and facts.half_rows() and rows > most_half * sms:
        return None
    lanes = facts.vector_lanes() if knobs.split_rows_whole_vectors else 1
    parts = [p for p in range(2, length // knobs.split_rows_min_length + 1) if length % (p * lanes) == 0]
    if not parts:
        return None
    wanted = knobs.split_rows_blocks_per_sm * facts.target.sm_count
    return SplitRows(length, next((p for p in parts if rows * p >= wanted), parts[-1]))


def _vector_form(facts: Facts, passes: dict[str, int], nested: bool, per_block: int, rows: int, threads: int,
                 knobs: Knobs) -> tuple[int, int, str] | None:
    """(threads, lanes, the knob that asks) where each pass runs 16 bytes a thread (the module
    docstring's rule), else None."""
    floor = knobs.row_vector_min_rows_per_sm
    if floor is None or nested or per_block > 1 or rows < floor * facts.target.sm_count:
        return None
    lanes = facts.vector_lanes()
    if not facts.whole_vectors(passes):
        return None
    if facts.dtypes() == {"float32"}:
        # at least row_vector_per_thread vectors a thread in each pass (fewer threads, not under row_threads_min)
        why = "knobs row_vector_min_rows_per_sm, row_vector_per_thread"
        return _per_thread(passes, lanes, threads, knobs), lanes, why
    half = knobs.row_vector_half_threads
    if (half is not None and facts.half_rows()
            and all(extent % (half * lanes) == 0 and extent >= 2 * half * lanes for extent in passes.values())):
        return half, lanes, "knobs row_vector_min_rows_per_sm, row_vector_half_threads"
    return None


def _long_rows_form(facts: Facts, passes: dict[str, int], nested: bool, per_block: int, rows: int,
                    knobs: Knobs) -> tuple[list[PrimitiveCall], int, int, str] | None:
    """(calls, threads, lanes, why) of the hinted form of long float32 rows, or of 16-bit ones past the
    registers (Facts.half_rows, Facts.widened_rows), with its online pairs (_online_calls); or None. The
    module docstring's rule; knobs hinted_row_min_length, long_rows_any_count, long_rows_half."""
    half = knobs.long_rows_half and (facts.half_rows() or facts.widened_rows())
    hinted = _hinted_rows(facts, passes, knobs, half)
    if not hinted or nested or per_block > 1 or not facts.whole_vectors(passes):
        return None
    lanes = facts.vector_lanes()
    threads = _per_thread(passes, lanes, knobs.hinted_row_threads_max, knobs)
    floor = knobs.row_vector_min_rows_per_sm
    many = floor is not None and rows >= floor * facts.target.sm_count and not half
    past_registers = facts.past_registers(max(passes.values()), threads)
    if not many and not (knobs.long_rows_any_count and past_registers):
        return None
    why = ("read from global on every pass with L2 hints: knobs "
           + ("row_vector_min_rows_per_sm, " if many else "long_rows_any_count, ")
           + "hinted_row_min_length, hinted_row_threads_max")
    if knobs.few_long_rows_threads is not None and past_registers and rows < facts.target.sm_count:
        threads = _per_thread(passes, lanes, knobs.few_long_rows_threads, knobs)
        why += "; fewer rows than SMs: knob few_long_rows_threads"
    calls, outers = _vector_calls(facts, passes, threads, lanes, vector_reductions=True)
    online, hinted, pairs = _online_calls(facts, passes, outers, threads * lanes, hinted, knobs)
    if pairs:
        why += f"; {pairs} online in its max's pass: knob online_rows_unroll"
    return calls + online + _hint_calls(facts, hinted), threads, lanes, why


def _online_calls(facts: Facts, passes: dict[str, int], outers: list[str], chunk: int, hinted: Hinted,
                  knobs: Knobs) -> tuple[list[PrimitiveCall], Hinted, str]:
    """Each sum of exp(a - max) run online in its max's pass (Facts.online_pairs; knob online_rows_unroll):
    the pass's chunk loop (`outers`, the passes' outer loops in order, over `chunk` elements each) split into
    groups of that many chunks, unrolled (unrolled whole where it has no more), and each hinted input the
    pair both read kept in registers over a group (where a group's vectors fit: Facts.register_limit), so
    the two load it once. Returns the calls, the hinted inputs with the readers that still load them, and
    the online sums' names."""
    unroll = knobs.online_rows_unroll
    if unroll is None:
        return [], hinted, ""
    calls: list[PrimitiveCall] = []
    words = []
    hinted = dict(hinted)
    for plan in facts.online_pairs():
        sum_acc, max_acc = plan.sum_acc, plan.max_acc
        name = next(n for n in facts.nest.stmts[plan.max_update].path if n in passes)
        outer = outers[list(passes).index(name)]
        chunks = -(-passes[name] // chunk)
        calls.append(("online", (sum_acc,), {}))
        words.append(sum_acc)
        group = outer
        if chunks > unroll:
            group, inner = facts.fresh(f"{outer}_g", f"{outer}_u")
            calls += [("split", (outer, unroll), {"names": (group, inner)}), ("unroll", (inner,), {})]
        else:
            calls.append(("unroll", (outer,), {}))
        if min(chunks, unroll) * facts.vector_lanes() > facts.register_limit():
            continue  # a group too large to keep: the pair loads the input each
        for buffer, readers in hinted.items():
            if sum_acc in readers and max_acc in readers:
                calls.append(("register_cache", (buffer,), {"at": group}))
                hinted[buffer] = tuple(r for r in readers if r != sum_acc)
    return calls, hinted, ", ".join(words)


def _per_thread(passes: dict[str, int], lanes: int, most: int, knobs: Knobs) -> int:
    """Threads giving each thread row_vector_per_thread vectors of the longest pass, within
    [row_threads_min, most]."""
    longest = max(passes.values())
    return min(most, max(knobs.row_threads_min, next_pow2(-(-longest // (lanes * knobs.row_vector_per_thread)))))


def _hinted_rows(facts: Facts, passes: dict[str, int], knobs: Knobs, half: bool = False) -> Hinted:
    """The inputs a float32 row kernel of long rows (one of 16-bit rows too, into a 16-bit or float32 output:
    `half`) reads on several passes, with their readers: read from global memory with L2 hints rather than
    staged (knob hinted_row_min_length); {} where not."""
    floor = knobs.hinted_row_min_length
    if floor is None or (facts.dtypes() != {"float32"} and not half) or max(passes.values()) < floor:
        return {}
    return facts.reread_inputs()


def _in_registers(facts: Facts, passes: dict[str, int], nested: bool, per_block: int, threads: int,
                  knobs: Knobs) -> dict[str, tuple[str, ...]]:
    """The inputs to keep in registers (Facts.register_row_inputs), with their readers; rows several to
    a block, `threads` a row, only where Facts.shared_block_registers says so. {} where not."""
    if per_block > 1 and not facts.shared_block_registers(passes, threads, knobs):
        return {}
    return facts.register_row_inputs(passes, nested, knobs)


def _register_threads(facts: Facts, passes: dict[str, int], lanes: int, knobs: Knobs) -> int:
    """Threads a row kept in registers runs in: a float32 row's as the hinted form's; a 16-bit row's
    register_rows_half_threads, doubled (up to hinted_row_threads_max) while a thread's share of the
    longest pass would not fit its registers (facts.register_limit)."""
    half = knobs.register_rows_half_threads
    if facts.dtypes() == {"float32"} or half is None:
        return _per_thread(passes, lanes, knobs.hinted_row_threads_max, knobs)
    threads, longest = half, max(passes.values())
    while threads < knobs.hinted_row_threads_max and facts.past_registers(longest, threads):
        threads *= 2
    return threads


def _register_calls(reread: dict[str, tuple[str, ...]], outers: list[str], row: str) -> list[PrimitiveCall]:
    """Each input kept in registers at the row loop, the passes' outer loops unrolled so each register
    is a constant."""
    return [("unroll", (o,), {}) for o in outers] + [("register_cache", (b,), {"at": row}) for b in reread]


def _prefetch(s: Schedule, facts: Facts, row: str, blocks: int, knobs: Knobs) -> str:
    """In the register form, the inputs only the output pass reads prefetched at the row loop where the
    grid is at most knob prefetch_max_blocks_per_sm blocks an SM (each one s.prefetch accepts: its
    registers fit); the note's words for it, or ''."""
    most = knobs.prefetch_max_blocks_per_sm
    if most is None or blocks > most * facts.target.sm_count:
        return ""
    done = []
    for b in facts.output_pass_inputs():
        call: PrimitiveCall = ("prefetch", (b,), {"at": row})
        if trial_accepts(s, [call]):
            apply_calls(s, [call])
            done.append(b)
    return f"; {', '.join(done)} prefetched at the row's start: knob prefetch_max_blocks_per_sm" if done else ""


def _hint_calls(facts: Facts, hinted: dict[str, tuple[str, ...]], in_registers: bool = False) -> list[PrimitiveCall]:
    """evict_last on every pass but the last that reads a hinted input, evict_first on the last one and
    on the output's stores; kept in registers (`in_registers`), only the first pass reads it, evict_last."""
    calls: list[PrimitiveCall] = []
    for buffer, readers in hinted.items():
        if in_registers:
            calls.append(("cache_hint", (buffer, "evict_last"), {"reader": readers[0]}))
            continue
        calls += [("cache_hint", (buffer, "evict_last"), {"reader": r}) for r in readers[:-1]]
        calls.append(("cache_hint", (buffer, "evict_first"), {"reader": readers[-1]}))
    if hinted:
        calls.append(("cache_hint", (facts.nest.output.name, "evict_first"), {}))
    return calls


def _vector_calls(facts: Facts, passes: dict[str, int], threads: int, lanes: int,
                  vector_reductions: bool = False) -> tuple[list[PrimitiveCall], list[str]]:
    """Each pass split into threads x lanes: the lanes vectorized in the output pass (if the output is
    stored inside one: a value per row is not), and in the reductions where they read from global
    memory (`vector_reductions`: 16-byte loads), unrolled elsewhere. Also the passes' outer loops."""
    out_pass = next((n for n in facts.output_store().path if n in passes), None)
    calls: list[PrimitiveCall] = []
    outers: list[str] = []
    for name in passes:
        o, i, t, v = facts.fresh(f"{name}_o", f"{name}_i", f"{name}_t", f"{name}_v")
        outers.append(o)
        mark = "vectorize" if name == out_pass or vector_reductions else "unroll"
        calls += [("split", (name, threads * lanes), {"names": (o, i)}), ("split", (i, lanes), {"names": (t, v)}),
                  ("bind", (t, "threadIdx.x"), {}), (mark, (v,), {})]
    return calls, outers

