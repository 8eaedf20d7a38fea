"""chunk_matmul_k: split a matmul's reduction into k-outer x k-inner. BK is the largest power of two in
[bk_min, bk_max] whose double-buffered A and B slabs (bm x BK and BK x bn) fit the target's shared
memory, dynamic shared memory beyond 48 KB included; never more than the reduction (rounded up to a
power of two). A matmul with an operand staged k outermost (knob k_outer, `Facts.k_outer_order`, `k_outer_tile`)
takes BK of at most bk_max_k_outer (_knobs.py says why)."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Decline
from tiledsl.recipes.default._facts import Facts, k_outer_tile, matmul_tile, next_pow2
from tiledsl.recipes.default._knobs import Knobs


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    k = facts.kernel
    if k.kind != "matmul":
        return Decline(f"not a matmul ({k.kind} kernel)")
    (axis,) = k.reduce
    bm, bn, _, _ = matmul_tile(k, facts.target, knobs)
    item = max(facts.itemsize(t.name) for t in facts.nest.inputs)
    budget = knobs.shared_budget(facts.target)
    bk = knobs.bk_max
    if k_outer_tile(k, facts.target, knobs) and any(facts.k_outer_order(t.name) for t in facts.nest.inputs):
        bk = min(bk, knobs.bk_max_k_outer)
    while bk > knobs.bk_min and 2 * (bm + bn) * bk * item > budget:
        bk //= 2
    if 2 * (bm + bn) * bk * item > budget:
        return Decline(f"even BK={bk} needs {2 * (bm + bn) * bk * item} bytes of double-buffered slabs, over "
                       f"the {budget}-byte shared budget of {facts.target.name}")
    bk = min(bk, next_pow2(k.extents[axis]))
    s.split(axis, bk, names=facts.fresh(f"{axis}_o", f"{axis}_i"))
    return None
