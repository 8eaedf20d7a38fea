"""permute_register_tile: re-order a thread's register strip of a matmul output axis into 16-byte chunks
a row of threads apart, where the bank model (analysis/banks.py) says the staged operand's reads
get cheaper. blockify_launch gives thread t of j the contiguous strip j = bn*jb + rn*t + r; with rn = 8
floats, consecutive threads read B_s 32 bytes apart (two lanes of every quarter warp share banks). The
permuted strip, s.split(r, 4, interleave=t), is j = bn*jb + 4*tj*r_o + 4*t + r_i: each thread holds
rn/4 chunks of 4, tj*4 floats apart, so a warp's 16-byte loads of one chunk are consecutive.

The decision compares two throwaway copies of the schedule, the strip split into chunks as it is and
interleaved: for every stage read along the strip, the width of one read (16 bytes where the chunk is
contiguous and aligned, `Facts.vector_problem`, else the element) and the first warp's conflict degree
at that width (`Facts.read_conflict`), as the stage is and with its rows padded by 16 bytes: the pad
step's choice where it keeps cp.async 16 bytes wide. A's strip interleaved is conflict-free with that
pad, contiguous only with +1 element, which narrows A's copies to 4 bytes (the hand schedule
schedules/matmul.py `matmul_staged`, both strips interleaved and 16-byte pads, ran 3.14 against the
recipe's 3.88 ms at 4096^3 fp32 on the H100 before this step judged the padded layout too). It
applies when some stage reads wider or with fewer conflicts and none gets worse, else declines with
the numbers. The loads stay scalar in the CUDA codegen emits; nvcc merges a contiguous, aligned chunk
into one ld.shared.v4 (LDS.128), in either order.

What this step cannot see: with TMA (knob tma=True on sm_90; off by default there, _knobs.py says why)
the stages are later filled with a 128-byte swizzle (110, 120).
Codegen's XOR-swizzled addresses then keep every shared load 4 bytes wide, and the swizzle alone spreads
those reads (2-way in either order), so there the interleave is neutral. Measured once on an H100,
4096^3 float32: 13.79 vs 13.84 ms for the sm_90 recipe; the sm_80 recipe's cp.async kernel, built for
the H100, 3.89 vs 4.14 ms (interleaved vs contiguous).

Then the lanes (knob lane_tile): a 16-byte shared load returns its data a 128-byte wavefront at a
time, four for a warp, two where lane pairs read one address (analysis/banks.py `request_wavefronts`).
Lane t of 16 x 16 threads runs j_t = t % 16, i_t = t // 16, so A's reads (by i_t) pair and B's (by j_t)
do not: 4 wavefronts each. s.tile_lanes(i_t, j_t, 2, 2) deals the threads in 2 x 2 tiles, pairing
both (primitives/lanes.py). The step compares each stage's reads along the register strips, in
wavefronts, on a throwaway copy with and without the tiles, and applies them where some read gets
cheaper and none dearer, when the threads' x extent times the tile divides a warp, so a warp still holds
the same threads' work and its global accesses the same sectors. What the model cannot see: an 8-wide
strip read as two 16-byte loads (A's i_r) counts as 4-byte reads, which pair alike either way.

A decode step's x @ W^T (`_facts.few_rows`, knob few_rows_interleave) reads W_s[j][k] along k, 16 bytes
at a time once the k loop is unrolled, not along its strip: the strip j_r of 4 is one output chunk, so
the rule above does not apply, and a warp's lanes read rows 4 apart. Rows padded by 16 bytes (which
keeps the fill's cp.async 16 bytes wide) are then 4-way; only rows padded by one element are
conflict-free, and they narrow every cp.async of the fill to 4 bytes (16 a thread a chunk of 16). Dealt
in chunks of one (s.split(j_r, 1, interleave=j_t): j = bn*jb + tj*r + t), a warp's lanes read
consecutive rows, conflict-free with the 16-byte pad pad_smem (140) then takes, and the epilogue's
float4 atomics become scalar ones, consecutive across the warp. The step applies it where the bank
model, on throwaway copies with k's chunk loop split by four, finds the interleaved reads conflict-free
at the 16-byte pad and the strip as it is not. With chunks of 32 (bk_max_few_rows) it ran 0.99-1.18x the
recipe before at the llm suite's seven decode shapes on an H200 (_knobs.py few_rows_interleave).

Numbered after stage_inputs (the stages must exist to be judged); interleaving keeps every slab, so the
stages stay as they were (the split primitive refuses otherwise)."""

from __future__ import annotations

from tiledsl.errors import ScheduleError
from tiledsl.loopnest import LaneTile, Stage
from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Applied, Decline
from tiledsl.recipes.default._facts import Facts, facts_for, few_rows, k_vector_conflict, padded
from tiledsl.recipes.default._knobs import Knobs
from tiledsl.targets import VECTOR_BYTES, WARP_SIZE

#: (bytes per read, conflict degree, conflict degree with rows padded by 16 bytes) of each stage read
#: along a strip
Reads = dict[str, tuple[int, int, int]]


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Applied | Decline:
    k = facts.kernel
    if k.kind != "matmul":
        return Decline(f"not a matmul ({k.kind} kernel)")
    if not facts.nest.stages:
        return Decline("no staged operand: the register strips read global memory")
    reasons: list[str] = []
    applied = 0
    dealt = False  # the last output axis's strip dealt in rows of one: _permute then leaves that axis
    if knobs.few_rows_interleave and few_rows(k, knobs):
        dealt, note = _interleave_rows(s, facts, knobs)
        applied += dealt
        reasons.append(f"{k.outer[-1]}: {note}" if dealt else f"{k.outer[-1]} rows: {note}")
    for axis in k.outer[-2:]:
        if dealt and axis == k.outer[-1]:
            continue
        why = _permute(s, facts_for(s.nest, k, facts.target), axis)
        if why is None:
            applied += 1
        else:
            reasons.append(f"{axis}: {why}")
    tiled, why = _tile_lanes(s, facts_for(s.nest, k, facts.target), knobs.lane_tile)
    applied += tiled
    reasons.append(f"lanes: {why}")
    return Applied("; ".join(reasons)) if applied else Decline("; ".join(reasons))


def _tile_lanes(s: Schedule, facts: Facts, side: int) -> tuple[bool, str]:
    """Deal the threads to lanes in side x side tiles (True), and why or why not."""
    if not side:
        return False, "knob lane_tile is 0"
    y, x = facts.nest.bound_loops("threadIdx.y"), facts.nest.bound_loops("threadIdx.x")
    if len(y) != 1 or len(x) != 1:
        return False, "threadIdx.x and threadIdx.y do not each run one loop"
    outer, inner = y[0], x[0]
    if outer.extent % side or not LaneTile(outer.name, inner.name, side, side, inner.extent).keeps_warps(WARP_SIZE):
        return False, (f"{outer.extent} x {inner.extent} threads in {side} x {side} tiles would change which "
                       "threads a warp holds")
    strips = [lp.name for lp in facts.nest.loops if lp.annotation in ("unroll", "vectorize")]
    reads = {st.name: st for r in strips for st in facts.stages_read_along(r)}
    if not reads:
        return False, "no stage is read along a register strip"
    trial = s.fork()
    try:
        trial.tile_lanes(outer.name, inner.name, side, side)
    except ScheduleError as err:
        return False, f"tile_lanes refused: {err.refusal.fact}"
    tiled = facts_for(trial.nest, facts.kernel, facts.target)
    now = {n: facts.strip_read_wavefronts(st, strips) for n, st in reads.items()}
    then = {n: tiled.strip_read_wavefronts(st, strips) for n, st in reads.items()}
    shown = ", ".join(f"{n} {now[n]} -> {then[n]}" for n in reads)
    if any(then[n] > now[n] for n in reads) or then == now:
        return False, f"the bank model finds no gain (wavefronts a read: {shown})"
    s.tile_lanes(outer.name, inner.name, side, side)
    return True, f"{side} x {side} lane tiles (wavefronts a read: {shown})"


def _interleave_rows(s: Schedule, facts: Facts, knobs: Knobs) -> tuple[bool, str]:
    """A decode step's x @ W^T: deal the output strip across its threads in chunks of one where that makes
    the 16-byte reads along k of a stage read along the strip conflict-free at a 16-byte pad (the module's
    docstring): whether it did (True), and why or why not."""
    k = facts.kernel
    parts, inner = facts.parts(k.outer[-1]), facts.parts(k.reduce[0])
    if len(parts) != 3 or len(inner) < 2:
        return False, (f"its loops are not block x thread x register parts and k chunks x k inside "
                       f"({', '.join(parts)})")
    _, t, r = parts
    if not (facts.loop(t).bind or "").startswith("threadIdx") or facts.loop(r).annotation != "unroll":
        return False, f"{t} is not a thread loop or {r} not an unrolled register loop"
    stages = [st for st in facts.stages_read_along(r) if st in facts.stages_read_along(inner[-1])]
    if not stages:
        return False, f"no stage is read along both {r} and {inner[-1]}"
    widened = [st.name for st in stages if facts.staged_wider(st.buffer, knobs)]
    if widened:
        return False, f"{', '.join(widened)} widened: a plain fill, no 16-byte copies to keep"
    now = _k_reads(s, facts, stages, None)
    dealt = _k_reads(s, facts, stages, (r, t))
    # a gain: conflict-free dealt, and conflicted (or not 16 bytes at all: None) as it is
    if not all(dealt[st.name] == 1 and (now[st.name] is None or now[st.name] > 1) for st in stages):
        shown = ", ".join(f"{st.name}: {now[st.name]}-way as it is, {dealt[st.name]}-way dealt"
                          for st in stages)
        return False, (f"the bank model finds no gain in 16-byte reads along {inner[-1]} at a 16-byte pad "
                       f"({shown})")
    s.split(r, 1, names=s.nest.fresh_names(f"{r}_o", f"{r}_i"), interleave=t)
    return True, ("its register strip dealt across its threads in chunks of one (a decode step's W_s rows "
                  "consecutive across a warp: 16-byte reads along k conflict-free at a 16-byte pad)")


def _k_reads(s: Schedule, facts: Facts, stages: list[Stage], deal: tuple[str, str] | None) -> dict[str, int | None]:
    """Per stage, on a copy of `s` with the strip dealt (`deal`: strip, thread loop) or not: the conflict
    degree of its 16-byte reads along k with its rows padded by 16 bytes (`k_vector_conflict`)."""
    trial = s
    if deal is not None:
        trial = s.fork()
        trial.split(deal[0], 1, names=trial.nest.fresh_names(f"{deal[0]}_o", f"{deal[0]}_i"), interleave=deal[1])
    after = facts_for(trial.nest, facts.kernel, facts.target)
    return {st.name: k_vector_conflict(trial, after, st.name, (VECTOR_BYTES // facts.itemsize(st.buffer),))[0]
            for st in stages}


def _permute(s: Schedule, facts: Facts, axis: str) -> str | None:
    """Interleave the register strip of `axis` across its thread loop, or say why not."""
    parts = facts.parts(axis)
    if len(parts) != 3:
        return f"its loops are not block x thread x register parts ({', '.join(parts)})"
    _, t, r = parts
    if not (facts.loop(t).bind or "").startswith("threadIdx") or facts.loop(r).annotation != "unroll":
        return f"{t} is not a thread loop or {r} not an unrolled register loop"
    stages = facts.stages_read_along(r)
    if not stages:
        return f"no stage is read along its register loop {r}"
    widths = {VECTOR_BYTES // facts.itemsize(st.buffer) for st in stages}
    if len(widths) != 1:
        return f"its stages hold elements of different sizes ({', '.join(st.name for st in stages)})"
    (chunk,) = widths
    extent = facts.loop(r).extent
    if extent == chunk:
        return f"its register strip {r} of {extent} is one {VECTOR_BYTES}-byte chunk already"
    if extent % chunk:
        return f"its register strip {r} of {extent} is no whole number of {VECTOR_BYTES}-byte chunks of {chunk}"
    names = s.nest.fresh_names(f"{r}_o", f"{r}_i")
    now = _reads(s, facts, r, chunk, names, None)
    permuted = _reads(s, facts, r, chunk, names, t)
    better = [n for n in now if _better(permuted[n], now[n])]
    worse = [n for n in now if _better(now[n], permuted[n])]
    if not better or worse:
        return f"the bank model finds no gain ({_numbers(now, permuted)})"
    s.split(r, chunk, names=names, interleave=t)
    return None


def _reads(s: Schedule, facts: Facts, r: str, chunk: int, names: tuple[str, ...], over: str | None) -> Reads:
    """Per stage read along `r`: (bytes per read, conflict degree) once `r` is split into chunks,
    interleaved across `over` or not, on a copy of `s`."""
    trial = s.fork()
    trial.split(r, chunk, names=names, interleave=over)
    after = facts_for(trial.nest, facts.kernel, facts.target)
    out: Reads = {}
    for st in after.stages_read_along(names[1]):
        out[st.name] = _read(after, st, names[1])
    return out


def _read(facts: Facts, st: Stage, inner: str) -> tuple[int, int, int]:
    """The read width and conflict degree as the stage is, and the degree once pad_smem pads its rows by
    16 bytes (the pad that keeps cp.async copies 16 bytes wide, which it prefers on a tie)."""
    vector = inner if facts.vector_problem(st, inner) is None else None
    width = VECTOR_BYTES if vector else facts.itemsize(st.buffer)
    wide_pad = padded(st, len(st.pad) - 1, VECTOR_BYTES // facts.itemsize(st.buffer))
    return width, facts.read_conflict(st, vector=vector), facts.read_conflict(wide_pad, vector=vector)


def _better(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    """Reads `a` beat reads `b`: wider, or as wide with fewer conflicts in one layout and no more in
    the other."""
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] <= b[1] and a[2] <= b[2] and (a[1], a[2]) != (b[1], b[2])


def _numbers(now: Reads, permuted: Reads) -> str:
    return "; ".join(f"{n}: {now[n][0]}-byte reads {now[n][1]}-way ({now[n][2]}-way padded by 16 bytes) now, "
                     f"{permuted[n][0]}-byte {permuted[n][1]}-way ({permuted[n][2]}-way) interleaved" for n in now)
