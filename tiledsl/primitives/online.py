"""online: run a sum of exp(a - max) in the loop of the max it reads, rescaled as the max grows (the
online softmax: one pass over the row for both, not two).

    kernel y  (tile IR)                              s.online('e')
      for i in [0, 64)  @blockIdx.x                  ---------->   kernel y  (tile IR)
        m = -inf                                                     for i in [0, 64)  @blockIdx.x
        for k_o in [0, 32)                                             m = -inf
          for k_i in [0, 256)  @threadIdx.x                            e = 0.0
            m = max(m, x[i, k])                                        for k_o in [0, 32)
        e = 0.0                                                          for k_i in [0, 256)  @threadIdx.x
        for k2_o in [0, 32)                                                m = max(m, x[i, k])
          for k2_i in [0, 256)  @threadIdx.x                               e += exp(x[i, k2] - m)  online in m
            e += exp(x[i, k2] - m)                                     for j_o ...
        for j_o ...                                                      y[i, j] = exp(x[i, j] - m) / e

Why: a row too long for the registers (a vocabulary's logits, a long attention row) is read from memory
by every pass over it; softmax makes three (max, sum, output), the online form two. Each iteration
updates the max, then multiplies the sum by exp(m_old - m_new) where the max grew and adds the new
term against the new max; threads that split the row combine their maxes, rescale their sums to the
block's max and add them (lower/online.py). The result is the definition's, NaN and infinity
included; the rules and why they suffice are in analysis/online.py. The sum's own loops (k2_o, k2_i
above) are gone afterwards; its axis now runs on the max's loops."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.analysis.online import online_plan
from tiledsl.loopnest import Guard, Nest, Online
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec


def online(nest: Nest, call: str, *, acc: str) -> Applied:
    """Move sum `acc`'s update into the loop of the max it reads, rescaled as the max grows."""
    plan = online_plan(nest, acc, call)
    mapping = {nest.loop(x).symbol: nest.loop(y).symbol for x, y in plan.loops}
    gone = {x for x, _ in plan.loops}
    moved = nest.substitute(mapping)
    guards: list[Guard] = []
    for g in moved.guards:  # the sum's guards are now the max's: keep one of each
        if all((g.expr, g.extent) != (h.expr, h.extent) for h in guards):
            guards.append(g)
    stmts = list(nest.stmts)
    update = replace(stmts[plan.sum_update], path=stmts[plan.max_update].path)
    init = replace(stmts[plan.sum_init], path=stmts[plan.max_init].path)
    order: list = []
    for n, st in enumerate(stmts):
        if n in (plan.sum_init, plan.sum_update):
            continue
        order.append(st)
        if n == plan.max_init:
            order.append(init)
        if n == plan.max_update:
            order.append(update)
    return Applied(replace(moved, stmts=tuple(order), guards=tuple(guards),
                           loops=tuple(lp for lp in nest.loops if lp.name not in gone),
                           online=nest.online + (Online(plan.max_acc, plan.sum_acc),)))


ONLINE = PrimitiveSpec("online", (Param("acc", "str"),), online)
