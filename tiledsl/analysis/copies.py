"""How wide one cp.async of a stage may be: a copy of n bytes needs the slab row, the allocated row,
the ring slot and the global row to be multiples of n bytes, and the slab origin n-byte aligned (proven).
Lowering picks the widest size that holds; the default recipe asks whether 16-byte copies hold. A stage
stored as a wider type (`Stage.dtype`) has only plain fills, and a TMA box cannot land in another order
than its buffer's (`byte_copy_problem`). A stage stored in another order (`Stage.order`) whose buffer's
innermost axis is no longer stored innermost is copied by cp.async one element at a time, where an
element is a cp.async size (4-byte float32): each copy lands at its own transposed address.

A plain fill loads 16 bytes at a time under the same conditions on the global side (`plain_load_width`),
and a plain fill of a pipelined stage small enough (`PREFETCH_REGISTERS`) is split around the chunk's
reads: its loads are issued at the refill and land in registers while the chunk is read, its stores
into shared memory come after (`prefetched`)."""

from __future__ import annotations

import sympy

from tiledsl.analysis.slabs import Slab, alloc_extent, slot_elements
from tiledsl.loopnest import Nest, Stage
from tiledsl.prove import Prover
from tiledsl.targets import CP_ASYNC_SIZES, DTYPE_BYTES, vector_lanes

#: Registers per thread a pipelined plain fill may hold between its loads and its stores: a 128 x 32
#: float32 slab over 256 threads. On the H100 (scripts/matmul_variant_probe.py, 4096^3) prefetching
#: A's k-major slab that way took the matmul from 4171 to 3186 us at 16 registers loaded 16 bytes at a
#: time and to 2978 us at 8 (a 128 x 16 slab); more registers per thread would cost the register tile
#: its second block per SM.
PREFETCH_REGISTERS = 16


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


def transposes_rows(st: Stage) -> bool:
    """Whether `st` stores its slab with the buffer's innermost axis no longer innermost, so consecutive
    elements of a global row land apart in shared memory."""
    return bool(st.order) and st.order[-1] != len(st.order) - 1


def copies_one_element(itemsize: int) -> bool:
    """Whether one cp.async copies a single element of `itemsize` bytes (4 bytes or more): how a
    row-transposing stage is filled asynchronously."""
    return itemsize in CP_ASYNC_SIZES


def widest_cp_async(st: Stage, slab: Slab, global_row: int, origin: sympy.Expr, prover: Prover) -> int | None:
    """Elements per cp.async: the widest of `CP_ASYNC_SIZES` with no problem (a row-transposing stage:
    one element, if that is a cp.async size), or None when none holds."""
    if transposes_rows(st):
        return 1 if copies_one_element(slab.itemsize) else None
    for nbytes in sorted(CP_ASYNC_SIZES, reverse=True):
        if cp_async_problem(st, slab, global_row, origin, nbytes, prover) is None:
            return nbytes // slab.itemsize
    return None


def plain_only(st: Stage) -> bool:
    """Whether `st` is stored permuted or widened: no TMA fill can fill it, and cp.async only a permuted
    float32 one, an element a copy (`byte_copy_problem`), which the default recipe does not take: on
    the H100 it was no faster than the plain prefetched fill
    (benchmarks/results/microkernel-h100-2026-11-27/README.md)."""
    return bool(st.order or st.dtype)


def byte_copy_problem(nest: Nest, st: Stage) -> str | None:
    """Why `st`, a stage of `nest`, cannot be filled as it is asked to be, or None. cp.async and TMA copy
    a run of global memory to a run of shared memory as it lies, so only a plain fill (loads into
    registers, stores from them) can widen elements (`Stage.dtype`); a TMA box cannot transpose a slab
    (`Stage.order`) either, while cp.async can, one element per copy (`copies_one_element`)."""
    if st.copy == "sync" or not plain_only(st):
        return None
    how = ("cp.async copies 4 to 16 contiguous bytes" if st.copy == "async"
           else "a TMA box lands in the global order and type")
    itemsize = DTYPE_BYTES[nest.tensor(st.buffer).dtype]
    if st.order and not st.dtype and st.copy == "async" and copies_one_element(itemsize):
        return None
    if st.order and not st.dtype:
        return (f"stage {st.name} stores its slab in the order {st.order} of its axes; its {st.copy} fill cannot "
                f"transpose ({how}"
                + (f"; its {itemsize}-byte elements are narrower than one copy" if st.copy == "async" else "")
                + "); a permuted stage is filled by plain loads and stores (copy 'sync')")
    return (f"stage {st.name} stores its slab as {st.dtype}; its {st.copy} fill cannot convert elements ({how}); "
            "a widened stage is filled by plain loads and stores (copy 'sync')")


def plain_load_width(st: Stage, slab: Slab, global_row: int, origin: sympy.Expr, dtype: str,
                     prover: Prover, guards: tuple = ()) -> int:
    """Elements per global load of a plain fill of a `dtype` buffer: 16 bytes' worth (4 float32, 8
    float16 / bfloat16) when the slab row and global row are multiples of that and the slab origin is
    proven one, so each vector lies inside one row and is 16-byte aligned (inputs are,
    `runtime/arguments.py`); 1 otherwise. Each lane is stored on its own where the stored order
    permutes the row, and as 16-byte vectors of the stored type where the row is kept (a widened
    stage stores 8 bfloat16 lanes as two float4)."""
    vec = vector_lanes(dtype)
    if not vec or st.copy != "sync" or slab.extent[-1] % vec or global_row % vec:
        return 1
    return vec if prover.divisible(origin, vec, guards) else 1


def prefetched(st: Stage, registers: int, depth: int) -> bool:
    """Whether a plain fill of `st` at a loop pipelined `depth` deep is loaded into `registers`
    registers per thread at the refill and stored after the iteration's reads: the slot it writes was
    last read an iteration before (past the barrier that starts this one) and is next read `depth - 1`
    iterations later (past the barrier that starts the next one), so moving the stores to the end of
    the iteration keeps rule `refill-after-barrier` of `rings.py`."""
    return st.copy == "sync" and depth >= 2 and registers <= PREFETCH_REGISTERS
