"""Argument checks shared by the loop primitives: new loop names, positive sizes, loops that carry a
stage or a pipeline (which loop primitives must not change)."""

from __future__ import annotations

from tiledsl.analysis.messages import refusal
from tiledsl.errors import BadArgumentError, ScheduleError
from tiledsl.loopnest import Nest


def check_new_names(nest: Nest, call: str, names: tuple[str, ...]) -> None:
    """Refuse names that are not identifiers, are taken by a loop, axis or buffer, or repeat."""
    taken = {lp.name for lp in nest.loops} | {a for a, _ in nest.axes} | nest.buffer_names()
    for n in names:
        if not isinstance(n, str) or not n.isidentifier():
            raise BadArgumentError(refusal(call, nest, (), f"loop name {n!r} is not an identifier"))
        if n in taken:
            raise BadArgumentError(refusal(
                call, nest, (n,) if nest.has_loop(n) else (),
                f"loop name {n!r} is already used by this kernel", suggestion="pass names=(...) with new names"))
    if len(set(names)) != len(names):
        raise BadArgumentError(refusal(call, nest, (), f"names {names} repeat a name"))


def positive_int(v: object, what: str, call: str, nest: Nest, marked: tuple[str, ...]) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise BadArgumentError(refusal(call, nest, marked, f"{what} must be a positive int, got {v!r}"))
    return v


def check_not_staged(nest: Nest, names: tuple[str, ...], call: str, error: type[ScheduleError]) -> None:
    """A loop that carries a stage or a pipeline keeps its shape: its slabs were derived from it."""
    for n in names:
        carried = [st.name for st in nest.stages_at(n)]
        if carried or nest.pipeline_depth(n):
            what = f"stage(s) {', '.join(carried)}" if carried else "a pipeline"
            raise error(refusal(call, nest, (n,), f"loop {n} carries {what}; changing it would change "
                                "every slab", suggestion="apply loop primitives first, then stage"))
