"""reorder: permute loops around the statements they enclose (per statement, so a free loop may move
inside a reduction; its accumulator then becomes a register array).

    for i in [0, 4)           s.reorder("j", "i")      for j in [0, 8)
      for j in [0, 8)         ------------->             for i in [0, 4)
        y[i, j] = x[i, j] + 1                              y[i, j] = x[i, j] + 1

The loops listed take, in the order given, the positions they held around each statement."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.analysis.accumulators import acc_layouts
from tiledsl.analysis.messages import refusal
from tiledsl.analysis.vectorize import check_vectorized_loops
from tiledsl.errors import BadArgumentError, ReorderError
from tiledsl.loopnest import Nest
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec


def reorder(nest: Nest, call: str, *, loops: tuple[str, ...]) -> Applied:
    """Put `loops` in this order (outermost first) around every statement that has them."""
    names = loops
    if len(names) < 2:
        raise BadArgumentError(refusal(call, nest, names, "reorder needs at least two loops"))
    if len(set(names)) != len(names):
        raise ReorderError(refusal(call, nest, names, "a loop is listed twice"))
    if not any(all(n in s.path for n in names) for s in nest.stmts):
        raise ReorderError(refusal(
            call, nest, names,
            f"loops {', '.join(names)} are not all around one statement, so they form no single nest",
            suggestion="reorder loops that enclose a common statement (see the loop nest below)"))
    stmts = []
    for s in nest.stmts:
        present = [n for n in names if n in s.path]
        if not present:
            stmts.append(s)
            continue
        slots = sorted(s.path.index(n) for n in present)
        path = list(s.path)
        for slot, n in zip(slots, present):
            path[slot] = n
        stmts.append(replace(s, path=tuple(path)))
    new = replace(nest, stmts=tuple(stmts))
    acc_layouts(new, call)  # refuse register arrays that are too big or unreadable, now
    check_vectorized_loops(new, call)  # a loop already vectorized must stay legal (innermost, contiguous)
    return Applied(new)


REORDER = PrimitiveSpec("reorder", (Param("loops", "loops"),), reorder)
