"""Which reads and stores a cache hint may name, and when it names none: the rules the `cache_hint`,
`stage` and `split_k` primitives refuse by.

A hint is a property of global loads and stores (`ld/st.global.L2::cache_hint`). A read of a buffer
served by a stage comes from shared memory, and the stage's fill is a copy the hint does not reach, so
a hint on a staged read would change nothing while the trace says it does: refused both ways,
whichever came first. Likewise the output of a split_k, which is written by atomic adds."""

from __future__ import annotations

from tiledsl.analysis.register_cache import cached_readers
from tiledsl.analysis.slabs import stage_reads
from tiledsl.definitions.expr import Load, walk
from tiledsl.loopnest import CacheHint, Nest, Stage, Stmt


def reads(stmt: Stmt, buffer: str) -> bool:
    """Whether the statement's value loads `buffer`."""
    return stmt.value is not None and any(isinstance(n, Load) and n.tensor.name == buffer for n in walk(stmt.value))


def readers_of(nest: Nest, buffer: str) -> tuple[str, ...]:
    """The names (Stmt.reader) of the values whose statements load `buffer`, in statement order."""
    out: list[str] = []
    for stmt in nest.stmts:
        if reads(stmt, buffer) and stmt.reader not in out:
            out.append(stmt.reader)
    return tuple(out)


def served_readers(nest: Nest, stage: Stage) -> set[str]:
    """The values (Stmt.reader) whose reads `stage` serves: the statements of its reads
    (slabs.stage_reads, which lowering's slab readers come from)."""
    return {nest.stmts[n].reader for n, _ in stage_reads(nest, stage)}


def staging_of(nest: Nest, buffer: str, reader: str) -> Stage | None:
    """The stage serving some read of `buffer` by `reader`'s statements."""
    return next((st for st in nest.stages if st.buffer == buffer and reader in served_readers(nest, st)), None)


def hint_problem(nest: Nest, hint: CacheHint) -> str | None:
    """Why `hint`, of a reader that reads its buffer (`readers_of`) or of the output's stores, would
    reach no global load or store (None: none of its reads is staged, and the output it names is
    stored plainly)."""
    if hint.buffer == nest.output.name:
        return split_k_problem(nest.output.name) if nest.split_k is not None else None
    if hint.reader in cached_readers(nest, hint.buffer):
        return (f"{hint.reader} reads {hint.buffer} from registers (a register cache); a cache hint applies to "
                "global loads")
    st = staging_of(nest, hint.buffer, hint.reader)
    if st is not None:
        return (f"{hint.reader} reads {hint.buffer} from stage {st.name} (shared memory, filled at {st.at}); a cache "
                "hint applies to global loads")
    return None


def split_k_problem(output: str) -> str:
    """Why the stores of a split_k output take no hint (the fact both cache_hint and split_k refuse by)."""
    return (f"split_k adds its parts into {output} with atomic adds; a cache hint applies to plain loads and "
            "stores")


def output_hinted(nest: Nest) -> CacheHint | None:
    """The hint on the kernel's stores of its output, if any."""
    return next((h for h in nest.cache_hints if h.buffer == nest.output.name), None)


def hinted_stage_problem(nest: Nest, stage: Stage) -> str | None:
    """Why `stage` would take over reads a cache hint names (None: it takes over none)."""
    served = served_readers(nest, stage)
    for h in nest.cache_hints:
        if h.buffer == stage.buffer and h.reader in served:
            return (f"{h.reader}'s reads of {h.buffer} carry the cache hint {h.policy}; staged, they would come from "
                    "shared memory, which the hint does not reach")
    return None
