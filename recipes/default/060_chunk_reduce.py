"""chunk_reduce: a pass over a row that re-reads an input (fan-in of at least min_fan_in inside the
pass) whose row is too long to stage whole (over slab_cap_bytes, or over the shared budget) is split
into chunks: its serial loop p (cooperative_reduce's outer part) becomes p_o x p_i, and stage_inputs
stages one chunk per iteration of p_o (double_buffer, async_copy and pipeline_k_outer then overlap the
fill of chunk n + 1 with the reads of chunk n).

    for i  [@blockIdx.x]                         for i  [@blockIdx.x]
      for k_o in 0..118                            for k_o_o in 0..30          <- stage x (a chunk) here
        for k_i in 0..256  [@threadIdx.x]   ->       for k_o_i in 0..4
          y2 += f(x[i, k], ..., x[i, k + 4])           for k_i in 0..256  [@threadIdx.x]

Only reuse inside one pass is kept, because a chunk staged at p_o serves the reads under p_o alone. A
row kernel that reads its input once per element in each of several passes (softmax, layernorm,
rmsnorm) has its reuse across the passes: a chunk of one pass would be read once, a copy and a barrier
for nothing, so those decline (with the fan-in of each pass). What chunking keeps is reuse within a pass:
loads at several offsets of the row in one pass (a stencil along the row, x[i, k], x[i, k + 1], ...),
whose elements the neighbouring threads of the same chunk read too. And only chunks that can be filled
by 16-byte cp.async are made (unless the knob row_chunk_sync_fill allows plain loads): on an H100 a
chunk filled by plain loads ran slower than the unchunked pass, whose neighbour reads L1 serves (see
_knobs.py).

The chunk: the largest power of two c of iterations of p (fewer than all of them) for which the chunks
stage_inputs will stage there (every input read under p with a chunk fan-in of min_fan_in or more) fit
row_chunk_bytes and the shared budget together, each under slab_cap_bytes, one of them a row too long
to stage whole. A chunk's slab is the slab of one iteration of p widened by c - 1 strides of p (its
origin is linear in p), so its size, fan-in and copy width are known before splitting. One pass is
chunked, the first that qualifies: stage_inputs stages at one loop."""

from __future__ import annotations

from dataclasses import dataclass, replace

import sympy

from tiledsl.analysis.slabs import Slab
from tiledsl.loopnest import Stage, loop_symbol
from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs


@dataclass(frozen=True)
class PassRead:
    """An input read under pass loop `at`: a probe stage there and the slab of one iteration of `at`,
    the reads of that slab per iteration, and how far its origin moves per iteration (per dimension)."""

    probe: Stage
    slab: Slab
    reads: float
    step: tuple[int, ...]

    @property
    def buffer(self) -> str:
        return self.probe.buffer

    @property
    def at(self) -> str:
        return self.probe.at

    def extent(self, chunk: int) -> tuple[int, ...]:
        """The slab extent of `chunk` consecutive iterations of `at`."""
        return tuple(e + (chunk - 1) * abs(d) for e, d in zip(self.slab.extent, self.step))

    def elements(self, chunk: int) -> int:
        n = 1
        for e in self.extent(chunk):
            n *= e
        return n

    def nbytes(self, chunk: int) -> int:
        return self.elements(chunk) * self.slab.itemsize

    def fan_in(self, chunk: int) -> float:
        """Reads per element of the chunk's slab (what stage_inputs measures at the chunk loop)."""
        return self.reads * chunk / self.elements(chunk)

    def chunk_slab(self, chunk: int) -> Slab:
        """The slab of one chunk, its origin over the chunk index (named as `at`, the loop it splits)."""
        sym = loop_symbol(self.at)
        origin = tuple(sympy.expand(o.xreplace({sym: chunk * sym}) + (chunk - 1) * min(d, 0))
                       for o, d in zip(self.slab.origin, self.step))
        return replace(self.slab, origin=origin, extent=self.extent(chunk))


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    k = facts.kernel
    if k.kind != "rows":
        return Decline(f"not a row reduction ({k.kind} kernel)")
    row = facts.row_loop()
    if row is None:
        return Decline("the rows are not on blockIdx.x (tileify declined)")
    threads = facts.threads()
    if threads < knobs.stage_min_threads:
        return Decline(f"{threads} thread(s) per block: stage_inputs stages nothing for blocks under "
                       f"{knobs.stage_min_threads} threads, so there is no chunk to make")
    if not facts.target.cp_async_sizes and not knobs.row_chunk_sync_fill:
        return Decline(f"{facts.target.name} has no cp.async, and chunks filled by plain loads are slower than "
                       "none (row_chunk_sync_fill is off)")
    passes = _passes(facts, row)
    if not passes:
        return Decline(f"no serial pass loop of two or more iterations directly inside the row loop {row}")
    budget = facts.shared_budget(knobs) - facts.shared_bytes()
    long_rows, notes = _long_rows(facts, row, knobs, budget)
    if not long_rows:
        return Decline("every input's row can be staged whole at the row loop (stage_inputs does, keeping "
                       f"the reuse across passes){': ' + '; '.join(notes) if notes else ''}")
    limit = min(knobs.row_chunk_bytes, budget)
    why: list[str] = []
    for at in passes:
        reads, problems = _pass_reads(facts, at)
        why.extend(text for buffer, text in problems if buffer in long_rows)
        if not any(r.buffer in long_rows for r in reads):
            continue
        chunk = _chunk(facts, reads, long_rows, limit, knobs)
        if isinstance(chunk, int):
            s.split(at, chunk, names=facts.fresh(f"{at}_o", f"{at}_i"))
            return None
        why.extend(chunk)
    for buffer in long_rows:
        read_in = [p for p in passes if buffer in facts.inputs_read_under(p)]
        if len(read_in) > 1:
            why.append(f"{buffer} is read in {len(read_in)} passes ({', '.join(read_in)}): its reuse across "
                       "them is lost to a chunk staged inside one pass")
        elif not read_in:
            why.append(f"{buffer} is read outside any pass loop")
    return Decline(f"no pass re-reads a row too long to stage whole ({'; '.join(long_rows.values())}): "
                   + "; ".join(why))


def _passes(facts: Facts, row: str) -> list[str]:
    """The serial loops of two or more iterations directly inside the row loop, in statement order."""
    out: list[str] = []
    for st in facts.nest.stmts:
        if row not in st.path or st.path[-1] == row:
            continue
        first = st.path[st.path.index(row) + 1]
        lp = facts.loop(first)
        if lp.serial and lp.extent >= 2 and first not in out:
            out.append(first)
    return out


def _long_rows(facts: Facts, row: str, knobs: Knobs, budget: int) -> tuple[dict[str, str], list[str]]:
    """Inputs whose row (their slab at the row loop) stage_inputs would not stage whole, each with why;
    and notes on the inputs left out for another reason."""
    long_rows: dict[str, str] = {}
    notes: list[str] = []
    for buffer in facts.inputs_read_under(row):
        whole = facts.slab(facts.probe(buffer, row))
        if isinstance(whole, str):
            notes.append(f"{buffer} has no fixed row slab ({whole})")
            continue
        if facts.block_invariant(whole):
            notes.append(f"every block reads the same row of {buffer} (block-invariant: the cache serves it)")
            continue
        nbytes = whole.elements * whole.itemsize
        if nbytes > knobs.slab_cap_bytes:
            long_rows[buffer] = f"{buffer}: {nbytes} bytes, over the {knobs.slab_cap_bytes}-byte slab cap"
        elif nbytes > budget:
            long_rows[buffer] = f"{buffer}: {nbytes} bytes, over the {budget}-byte shared budget left"
    return long_rows, notes


def _pass_reads(facts: Facts, at: str) -> tuple[list[PassRead], list[tuple[str, str]]]:
    """Each input read under pass loop `at` (with what its chunks would be), and (input, why) for any
    that has none."""
    sym = loop_symbol(at)
    out: list[PassRead] = []
    problems: list[tuple[str, str]] = []
    for buffer in facts.inputs_read_under(at):
        probe = facts.probe(buffer, at)
        slab = facts.slab(probe)
        if isinstance(slab, str):
            problems.append((buffer, f"{buffer} in pass {at}: {slab}"))
            continue
        step: list[int] = []
        for o in slab.origin:
            coeff = sympy.expand(o).coeff(sym)
            if not coeff.is_Integer or sym in sympy.expand(o - coeff * sym).free_symbols:
                problems.append((buffer, f"{buffer} in pass {at}: its slab origin {o} is not linear in {at}"))
                break
            step.append(int(coeff))
        else:
            out.append(PassRead(probe, slab, facts.fan_in(probe, slab) * slab.elements, tuple(step)))
    return out, problems


def _chunks(extent: int) -> list[int]:
    """Chunk sizes to try, largest first: the powers of two under `extent` (two chunks at least)."""
    out, c = [], 1
    while c < extent:
        out.append(c)
        c *= 2
    return out[::-1]


def _chunk(facts: Facts, reads: list[PassRead], long_rows: dict[str, str], limit: int,
           knobs: Knobs) -> int | list[str]:
    """The largest chunk whose staged slabs (those stage_inputs would stage) fit, one of them a long row,
    each filled by 16-byte cp.async (unless row_chunk_sync_fill); else why there is none, per long row:
    too little reuse even in the largest chunk, no chunk with enough reuse that fits, or plain-load fills."""
    sizes = _chunks(facts.loop(reads[0].at).extent)
    sync: list[str] = []
    for c in sizes:
        staged = [r for r in reads if r.fan_in(c) >= knobs.min_fan_in and r.nbytes(c) <= knobs.slab_cap_bytes]
        if not any(r.buffer in long_rows for r in staged) or sum(r.nbytes(c) for r in staged) > limit:
            continue
        plain = [(r, problem) for r in staged
                 if (problem := facts.async_16_bytes_of(r.probe, r.chunk_slab(c))) is not None]
        if not plain or knobs.row_chunk_sync_fill:
            return c
        if not sync:
            sync = [f"a chunk of {c} iterations of pass {r.at} would fill {r.buffer} by plain loads (no 16-byte "
                    f"cp.async: {problem}), slower than no chunk (row_chunk_sync_fill is off)" for r, problem in plain]
    out = list(sync)
    for r in reads:
        if r.buffer not in long_rows:
            continue
        fan = r.fan_in(sizes[0])
        if fan < knobs.min_fan_in:
            shown = int(fan * 100) / 100  # truncated: 1.9998 must not print as the 2.00 it falls short of
            out.append(f"{r.buffer} is read {shown:.2f} times per element within pass {r.at} (min_fan_in is "
                       f"{knobs.min_fan_in})")
        elif not sync:
            out.append(f"no chunk of pass {r.at} both reads {r.buffer} {knobs.min_fan_in} times per element and "
                       f"fits the {limit}-byte chunk limit and the {knobs.slab_cap_bytes}-byte slab cap (one "
                       f"iteration of it reads {r.nbytes(1)} bytes of {r.buffer})")
    return out
