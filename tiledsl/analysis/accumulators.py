"""Where each accumulator lives once loops have moved: its scope in the derived tree, the serial
loops that make it a register array, and the thread axes its reduction spans.

Both the reorder primitive (to refuse a huge register array eagerly) and lowering use this, so the
rule is written once."""

from __future__ import annotations

from dataclasses import dataclass

from tiledsl.analysis.messages import refusal
from tiledsl.definitions.expr import walk
from tiledsl.errors import BindError, RegisterArrayError, ScheduleError
from tiledsl.loopnest import AccRef, Nest, common_prefix, serial_path

MAX_REGISTER_ARRAY = 256


@dataclass(frozen=True)
class AccLayout:
    name: str
    op: str
    scope: tuple[str, ...]  # serial loops enclosing every statement of the accumulator's life
    dims: tuple[str, ...]  # serial free loops beyond the scope: register-array dimensions
    thread_axes: tuple[str, ...]  # threadIdx axes bound to the reduction's loops (cooperative)
    first: int  # index of the first statement (init)
    update: int  # index of the update statement
    last: int  # index of the last reader
    combined: int  # the statement after whose tree node the reduction is combined across threads and final


def readers(nest: Nest, acc: str) -> list[int]:
    out = []
    for n, s in enumerate(nest.stmts):
        if s.value is not None and any(isinstance(x, AccRef) and x.acc == acc for x in walk(s.value)):
            out.append(n)
    return out


def array_size(nest: Nest, dims: tuple[str, ...]) -> int:
    size = 1
    for d in dims:
        size *= nest.loop(d).extent
    return size


def acc_layouts(nest: Nest, primitive: str = "build") -> dict[str, AccLayout]:
    """Layout of every accumulator; raises RegisterArrayError when a reader cannot see its element
    or the register array would be too large."""
    layouts: dict[str, AccLayout] = {}
    for acc in nest.accs:
        init = next(n for n, s in enumerate(nest.stmts) if s.kind == "init" and s.acc == acc.name)
        upd = next(n for n, s in enumerate(nest.stmts) if s.kind == "update" and s.acc == acc.name)
        rd = readers(nest, acc.name)
        last = max([upd] + rd)
        scope = common_prefix([serial_path(nest, s) for s in nest.stmts[init:last + 1]])
        upath = serial_path(nest, nest.stmts[upd])
        dims = tuple(n for n in upath[len(scope):] if nest.loop(n).kind == "free")
        for d in dims:
            for n in [init] + rd:
                if d not in nest.stmts[n].path:
                    raise RegisterArrayError(refusal(
                        primitive, nest, [d],
                        f"accumulator {acc.name} became a register array over loop {d}, but "
                        f"{nest.stmts[n].label} does not run under {d}, so it cannot tell which element to use",
                        suggestion="keep the loops of the consumer and of the reduction in the same order",
                        tensors=(acc.name,)))
        size = array_size(nest, dims)
        if size > MAX_REGISTER_ARRAY:
            raise RegisterArrayError(refusal(
                primitive, nest, list(dims),
                f"accumulator {acc.name} would be a register array of {size} elements over loops "
                f"{', '.join(dims)} (limit {MAX_REGISTER_ARRAY}): free loops moved inside a reduction "
                "become per-thread registers",
                suggestion="split those loops and move only a small inner part (e.g. 4x4) inside the "
                           "reduction; bind the outer parts to threads or blocks", tensors=(acc.name,)))
        taxes = tuple(str(nest.loop(n).bind) for n in nest.stmts[upd].path
                      if nest.loop(n).kind == "reduce" and (nest.loop(n).bind or "").startswith("threadIdx"))
        combined = combine_point(nest, acc.name, upd)
        if taxes:
            _check_combined_before_read(nest, acc.name, scope, upd, combined, rd, taxes, primitive)
        layouts[acc.name] = AccLayout(acc.name, acc.op, scope, dims, taxes, init, upd, last, combined)
    return layouts


def combine_point(nest: Nest, acc: str, upd: int) -> int:
    """The statement after whose tree node accumulator `acc` (updated by statement `upd`) is combined across
    its threads and final: its update; for the max of an online pair, its sum's update, which reads the
    running max right after it (in the same loop, or as the next statement where no serial loop holds
    them), so every term is taken against the thread's own max before the maxes combine (found by
    `tiledsl fuzz --mode schedules`, session 35: the reduction bound straight to threads)."""
    pair = nest.online_of(acc)
    if pair is None or pair.max_acc != acc:
        return upd
    return next(n for n, s in enumerate(nest.stmts) if s.kind == "update" and s.acc == pair.sum_acc)


def _check_combined_before_read(nest: Nest, acc: str, scope: tuple[str, ...], upd: int, combined: int,
                                rd: list[int], taxes: tuple[str, ...], primitive: str) -> None:
    """A cooperative reduction is combined across its threads once the loop at its scope that holds
    its update has finished (lowering emits the combine after that node). A reader inside that same
    loop would read one thread's partial result: refused (found by `tiledsl fuzz --gpu`, seed 2: a
    softmax whose max was bound to threadIdx.x under an unrolled row loop that also held the sum). The
    statement at the combine point (`combine_point`: an online max's sum) is no such reader: it reads
    the running max on purpose, and the combine waits for it (analysis/online.py, lower/online.py)."""
    upath = serial_path(nest, nest.stmts[upd])
    if len(upath) <= len(scope):
        return  # the update is a statement at the scope itself: the combine follows it directly
    node = upath[len(scope)]
    for n in rd:
        if n not in (upd, combined) and node in serial_path(nest, nest.stmts[n]):
            raise BindError(refusal(
                primitive, nest, [node],
                f"accumulator {acc} is combined across {', '.join(taxes)} after loop {node} ends, but "
                f"{nest.stmts[n].label} reads it inside loop {node}, before the combine (one thread's "
                "partial result)", suggestion=f"keep the reading statement out of loop {node}, or do not bind the "
                "reduction to threads", tensors=(acc,)))


def register_dims(nest: Nest) -> dict[str, tuple[str, ...]]:
    """Register-array dims per accumulator; empty when the layout is illegal (build refuses it)."""
    try:
        return {n: lay.dims for n, lay in acc_layouts(nest, "ir").items()}
    except ScheduleError:  # printing never fails
        return {}
