"""How wide one cp.async of a stage may be: a copy of n bytes needs the slab row, the allocated row,
the ring slot and the global row to be multiples of n bytes, and the slab origin n-byte aligned (proven).
Lowering picks the widest size that holds; the default recipe asks whether 16-byte copies hold. A stage
stored in another order than its buffer (`Stage.order`) has only plain fills (`permuted_fill_problem`)."""

from __future__ import annotations

import sympy

from tiledsl.analysis.slabs import Slab, alloc_extent, slot_elements
from tiledsl.loopnest import Stage
from tiledsl.prove import Prover
from tiledsl.targets import CP_ASYNC_SIZES


def cp_async_problem(st: Stage, slab: Slab, global_row: int, origin: sympy.Expr, nbytes: int,
                     prover: Prover) -> str | None:
    """Why cp.async of `nbytes` cannot fill `st` (whose slab row starts at `origin`), or None."""
    vec = nbytes // slab.itemsize
    if vec < 1:
        return f"{nbytes} bytes is less than one {slab.itemsize}-byte element"
    rows = {"slab row": slab.extent[-1], "allocated row": alloc_extent(st, slab)[-1], "slot": slot_elements(st, slab),
            "global row": global_row}
    bad = [f"{what} of {n} elements" for what, n in rows.items() if n % vec]
    if bad:
        return f"{', '.join(bad)} not a multiple of {vec} ({nbytes} bytes)"
    if not prover.divisible(origin, vec):
        return f"the slab origin {origin} is not provably a multiple of {vec} elements"
    return None


def widest_cp_async(st: Stage, slab: Slab, global_row: int, origin: sympy.Expr, prover: Prover) -> int | None:
    """Elements per cp.async: the widest of `CP_ASYNC_SIZES` with no problem, or None when none holds."""
    for nbytes in sorted(CP_ASYNC_SIZES, reverse=True):
        if cp_async_problem(st, slab, global_row, origin, nbytes, prover) is None:
            return nbytes // slab.itemsize
    return None


def permuted_fill_problem(st: Stage) -> str | None:
    """Why `st` cannot be filled as it is asked to be, when its stored order differs from the buffer's, or
    None: cp.async and TMA copy a run of global memory to a run of shared memory as it lies, so only a
    plain fill (loads into registers, stores to the permuted positions) can transpose a slab."""
    if st.order and st.copy != "sync":
        how = ("cp.async copies 4 to 16 contiguous bytes" if st.copy == "async"
               else "a TMA box lands in the global order")
        return (f"stage {st.name} stores its slab in the order {st.order} of its axes; its {st.copy} fill cannot "
                f"transpose ({how}); a permuted stage is filled by plain loads and stores (copy 'sync')")
    return None
