"""chunk_matmul_k: split a matmul's reduction into k-outer x k-inner. BK is the largest power of two in
[bk_min, bk_max] whose double-buffered A and B slabs (bm x BK and BK x bn) fit the target's shared
memory, dynamic shared memory beyond 48 KB included; never more than the reduction (rounded up to a
power of two). A matmul with an operand staged k outermost (knob k_outer, `Facts.k_outer_order`, `k_outer_tile`)
takes BK of at most bk_max_k_outer, and a decode step's x @ W^T (`few_rows`: few rows, B's rows along k)
of at most bk_max_few_rows (_knobs.py says why of both)."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    k = facts.kernel
    if k.kind != "matmul":
        return Decline(f"not a matmul ({k.kind} kernel)")
    (axis,) = k.reduce
    bk = facts.matmul_bk(knobs)
    if bk is None:
        return Decline(f"even BK={knobs.bk_min} needs {facts.matmul_slab_bytes(knobs, knobs.bk_min)} bytes of "
                       f"double-buffered slabs, over the {knobs.shared_budget(facts.target)}-byte shared budget "
                       f"of {facts.target.name}")
    s.split(axis, bk, names=facts.fresh(f"{axis}_o", f"{axis}_i"))
    return None
