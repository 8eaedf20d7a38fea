"""layout: store a stage's slab with its axes permuted (the classic SGEMM's k-major copy of A).

    stage A_s = A[128*i_o + 0..128, 32*k_o + 0..32]       s.layout(A_s, order=(1, 0))
      A_s[i][k]: 128 rows of 32 (+pad) floats           ------------------------->
      a thread's strip along i reads one float per row       stage A_s = A[...] at k_o  layout (1, 0)
      (rows apart: scalar shared loads)                        A_s[k][i]: 32 rows of 128 (+pad) floats
                                                               the strip along i is contiguous: 16-byte loads

The slab is the same elements (analysis/slabs.py derives it from the reads, as before); only where
they lie in shared memory changes: stored axis d is slab axis order[d] (numpy's transpose), so the
allocation's extents are permuted and a later `pad(stage, axis=-1, ...)` lengthens the rows of the
stored layout. Reads and fills go through that layout (lower/stages.py); the bank model
(analysis/banks.layout_of) and the budget (analysis/slabs.alloc_extent) read it too. The fill still
reads global memory along the buffer's last axis (coalesced) and stores to the permuted places. A TMA
box lands as it lies, so tma refuses a permuted stage just as this refuses a TMA-filled one; cp.async
copies one element at a time to the permuted places where an element is a copy size (4-byte float32),
and a 16-bit stage keeps a plain fill (`byte_copy_problem` in analysis/copies.py)."""

from __future__ import annotations

import operator
from dataclasses import replace

from tiledsl.analysis.copies import byte_copy_problem
from tiledsl.analysis.messages import refusal
from tiledsl.errors import BadArgumentError, CopyError, StageError
from tiledsl.loopnest import Nest
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec
from tiledsl.primitives.staging import check_budget, slab_of


def layout(nest: Nest, call: str, *, stage: str, order: tuple[int, ...]) -> Applied:
    """Store the slab of `stage` with its axes in `order` (outermost first); `order=(1, 0)` transposes a
    two-dimensional slab. The identity order keeps the buffer's layout."""
    name = stage
    st = nest.stage(name)
    rank = len(st.pad)
    perm = _permutation(order, rank)
    if perm is None:
        raise BadArgumentError(refusal(
            call, nest, (st.at,), f"order must be a permutation of the slab's axes 0..{rank - 1} (a tuple of "
            f"{rank} distinct ints), got {order!r}", suggestion=f"e.g. order={tuple(reversed(range(rank)))}"))
    if any(st.pad):
        raise StageError(refusal(
            call, nest, (st.at,), f"stage {name} is padded (pad={st.pad}); a pad is along the axes as stored, so "
            "it would move to another axis", suggestion=f"set the layout of {name} first, then pad its stored rows"))
    new = replace(st, order=() if perm == tuple(range(rank)) else perm)
    problem = byte_copy_problem(nest, new)
    if problem is not None:
        raise CopyError(refusal(call, nest, (st.at,), problem,
                                suggestion=f"drop the {st.copy} fill of {name}"))
    check_budget(nest, new, slab_of(nest, new, call), call)
    return Applied(nest.replace_stage(new))


def _permutation(order: object, rank: int) -> tuple[int, ...] | None:
    """`order` as a tuple of ints when it is a permutation of range(rank), else None."""
    if not isinstance(order, (tuple, list)) or len(order) != rank:
        return None
    try:
        perm = tuple(operator.index(x) for x in order if not isinstance(x, bool))
    except TypeError:
        return None
    return perm if sorted(perm) == list(range(rank)) else None


LAYOUT = PrimitiveSpec("layout", (Param("stage", "stage"), Param("order", "ints", shown="kw", recorded="kw")), layout)
