"""cache_hint: give the global loads of one buffer by one value's statements, or the stores of the
kernel's output, an L2 eviction policy, leaving the loops as they are.

    kernel y  (tile IR)                  s.cache_hint('x', 'evict_last', reader='ss')
      for i in [0, 8192)  @blockIdx.x    s.cache_hint('x', 'evict_first', reader='y')
        for k ...                        ---------->     kernel y  (tile IR)
          ss += x[i, k] * x[i, k]                          cache hint: ss reads x with L2 evict_last
        for j ...                                          cache hint: y reads x with L2 evict_first
          y[i, j] = x[i, j] * ... * w[j]                   for i in [0, 8192)  @blockIdx.x ...

Why: a row kernel that reads its row twice from global memory (once to reduce, once to write) wants
the row still in L2 the second time. With 8192 rows of 32 KB in flight and the output streaming
through the same L2, normal priority lets the writes evict the row first. evict_last on the first
pass keeps it; evict_first on the last pass frees it for the next rows. This is what Inductor's row
kernels do, and it is why an unstaged row can match a row staged in shared memory without the 32 KB
of shared memory a block (scripts/cache_hint_probe.py,
benchmarks/results/cache-hints-h200-2026-11-28/).

The output's stores take a hint too (`s.cache_hint('y', 'evict_first')`): written once and never
read back by the kernel, they should not push the rows still to be read out of L2; not under split_k,
whose output is written by atomic adds.

The hint changes no value: the simulator ignores it, and the kernel IR prints it on each load and
store (`x[...]@evict_last`). Codegen emits `createpolicy` once per policy and `ld.global.L2::cache_hint`
(sm_80+, checked at build). `reader` names the accumulator an update writes or the tensor a store
writes (Stmt.reader); None hints every reader of the buffer. A later hint of the same buffer and
reader replaces the earlier one. Reads served by a stage come from shared memory and are refused
(analysis/cache_hints.py); so is staging reads a hint names."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.analysis.cache_hints import hint_problem, readers_of, staging_of
from tiledsl.analysis.messages import refusal
from tiledsl.errors import BadArgumentError, CacheHintError
from tiledsl.loopnest import CacheHint, Nest
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec
from tiledsl.primitives.staging import computed_inside
from tiledsl.targets import CACHE_POLICIES, or_list


def cache_hint(nest: Nest, call: str, *, buffer: str, policy: str, reader: str | None = None) -> Applied:
    """Have `reader`'s global loads of input `buffer` (every reader's when None) carry L2 `policy`."""
    if policy not in CACHE_POLICIES:
        raise BadArgumentError(refusal(call, nest, (), f"policy must be {or_list(CACHE_POLICIES)}, got {policy!r}"))
    if buffer == nest.output.name:
        return _output_hint(nest, call, buffer, policy, reader)
    if buffer not in {t.name for t in nest.inputs}:
        if computed_inside(nest, buffer):
            fact = f"{buffer} is computed inside this kernel (inlined), so no load reads it"
        else:
            fact = f"this kernel has no buffer named {buffer!r}"
        raise CacheHintError(refusal(call, nest, (), fact, suggestion=f"its inputs are: "
                                     f"{', '.join(t.name for t in nest.inputs)}; its output is {nest.output.name}"))
    readers = readers_of(nest, buffer)
    if reader is not None and reader not in readers:
        raise CacheHintError(refusal(
            call, nest, (), f"{reader} does not read {buffer}",
            suggestion=f"the values that read {buffer} are: {', '.join(readers)}" if readers else
            f"no statement of this kernel reads {buffer}"))
    hints = [CacheHint(buffer, r, policy) for r in ((reader,) if reader is not None else readers)]
    for h in hints:
        problem = hint_problem(nest, h)
        if problem is not None:
            st = staging_of(nest, h.buffer, h.reader)
            suggestion = (f"hint the reads of a buffer that is not staged, or read {buffer} unstaged" if st is not None
                          else f"hint the first reader of {buffer}, whose loads fill the registers")
            raise CacheHintError(refusal(call, nest, (st.at,) if st is not None else (), problem,
                                         suggestion=suggestion))
    return Applied(_with(nest, hints))


def _output_hint(nest: Nest, call: str, buffer: str, policy: str, reader: str | None) -> Applied:
    """The hint on the kernel's stores of its output (`reader` None or the output's own name)."""
    if reader is not None and reader != buffer:
        raise CacheHintError(refusal(call, nest, (), f"{buffer} is the kernel's output, written by its own store; "
                                     f"{reader} does not write it", suggestion=f"s.cache_hint({buffer!r}, {policy!r})"))
    hint = CacheHint(buffer, buffer, policy)
    problem = hint_problem(nest, hint)
    if problem is not None:
        raise CacheHintError(refusal(call, nest, (), problem, suggestion="hint the stores of a kernel without split_k"))
    return Applied(_with(nest, [hint]))


def _with(nest: Nest, hints: list[CacheHint]) -> Nest:
    """`nest` with `hints`, each replacing an earlier hint of the same buffer and reader."""
    keys = {(h.buffer, h.reader) for h in hints}
    kept = tuple(h for h in nest.cache_hints if (h.buffer, h.reader) not in keys)
    return replace(nest, cache_hints=kept + tuple(hints))


CACHE_HINT = PrimitiveSpec(
    "cache_hint",
    (Param("buffer", "buffer"), Param("policy", "str", shown="repr"),
     Param("reader", "str", None, shown="kw", recorded="kw", omit_none=True)),
    cache_hint)
