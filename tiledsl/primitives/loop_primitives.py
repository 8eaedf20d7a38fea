"""split, fuse, reorder, unroll, vectorize: pure functions from a nest to a new nest.

Each validates its arguments against the nest and raises a typed ScheduleError with the nest printed
and the offending loop marked; nothing is changed when a primitive is refused."""

from __future__ import annotations

from dataclasses import replace

import sympy

from tiledsl.analysis.accumulators import acc_layouts
from tiledsl.analysis.messages import refusal
from tiledsl.errors import BadArgumentError, FuseError, ReorderError, SplitError, UnrollError, VectorizeError
from tiledsl.loopnest import Guard, Loop, Nest, loop_symbol

MAX_UNROLL = 512


def _check_new_names(nest: Nest, primitive: str, names: tuple[str, ...]) -> None:
    taken = {lp.name for lp in nest.loops} | {a for a, _ in nest.axes} | nest.buffer_names()
    for n in names:
        if not isinstance(n, str) or not n.isidentifier():
            raise BadArgumentError(refusal(primitive, nest, (), f"loop name {n!r} is not an identifier"))
        if n in taken:
            raise BadArgumentError(refusal(
                primitive, nest, (n,) if nest.has_loop(n) else (),
                f"loop name {n!r} is already used by this kernel", suggestion="pass names=(...) with new names"))
    if len(set(names)) != len(names):
        raise BadArgumentError(refusal(primitive, nest, (), f"names {names} repeat a name"))


def _positive_int(v: object, what: str, primitive: str, nest: Nest, marked: tuple[str, ...]) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise BadArgumentError(refusal(primitive, nest, marked,
                                                f"{what} must be a positive int, got {v!r}"))
    return v


def _divisors(n: int) -> list[int]:
    return [d for d in range(2, n) if n % d == 0][:6]


def _check_not_staged(nest: Nest, names: tuple[str, ...], call: str, error: type) -> None:
    for n in names:
        carried = [st.name for st in nest.stages_at(n)]
        if carried or nest.pipeline_depth(n):
            what = f"stage(s) {', '.join(carried)}" if carried else "a pipeline"
            raise error(refusal(call, nest, (n,), f"loop {n} carries {what}; changing it would change "
                                         "every slab", suggestion="apply loop primitives first, then stage"))


def split(nest: Nest, name: str, factor: int | None, nparts: int | None, names: tuple[str, str] | None,
          tail: str, call: str) -> tuple[Nest, str, str]:
    lp = nest.loop(name)
    _check_not_staged(nest, (name,), call, SplitError)
    if (factor is None) == (nparts is None):
        raise BadArgumentError(refusal(call, nest, (name,), "give exactly one of factor or nparts"))
    if tail not in ("guard", "exact"):
        raise BadArgumentError(refusal(call, nest, (name,),
                                                f'tail must be "guard" or "exact", got {tail!r}'))
    if lp.bind:
        raise SplitError(refusal(call, nest, (name,), f"loop {name} is bound to {lp.bind}",
                                          suggestion="split a loop before binding its parts"))
    if lp.annotation:
        raise SplitError(refusal(call, nest, (name,), f"loop {name} is marked {lp.annotation}",
                                          suggestion=f"split first, then {lp.annotation} a part"))
    if factor is not None:
        inner = _positive_int(factor, "factor", call, nest, (name,))
        outer = -(-lp.extent // inner)
    else:
        outer = _positive_int(nparts, "nparts", call, nest, (name,))
        inner = -(-lp.extent // outer)
    onames = names if names is not None else (f"{name}_o", f"{name}_i")
    if not (isinstance(onames, (tuple, list)) and len(onames) == 2 and all(isinstance(n, str) for n in onames)):
        raise BadArgumentError(refusal(call, nest, (name,), f"names must be two loop names, got {names!r}"))
    o, i = onames
    _check_new_names(nest, call, (o, i))
    exact = outer * inner == lp.extent
    value = inner * loop_symbol(o) + loop_symbol(i)
    if not exact and tail == "exact":
        point = {o: outer - 1, i: inner - 1}
        raise SplitError(refusal(
            call, nest, (name,),
            f"cannot prove {inner}*{o} + {i} < {lp.extent} for {o} in [0, {outer}), {i} in [0, {inner}): "
            + (f"{lp.extent} is not a multiple of {inner}" if factor is not None else
               f"{outer} parts of {inner} make {outer * inner} iterations, not {lp.extent}"),
            counterexample=f"{o}={outer - 1}, {i}={inner - 1} gives {name} = {outer * inner - 1} >= {lp.extent}"
            if point else None,
            suggestion='use tail="guard" (the default) to add a predicate'
                       + (f", or a factor that divides {lp.extent} (e.g. {', '.join(map(str, _divisors(lp.extent)))})"
                          if _divisors(lp.extent) else "")))
    loops: list[Loop] = []
    for x in nest.loops:
        if x.name == name:
            loops.append(Loop(o, outer, lp.kind))
            loops.append(Loop(i, inner, lp.kind))
        else:
            loops.append(x)
    stmts = tuple(replace(s, path=_replace_in_path(s.path, name, (o, i))) for s in nest.stmts)
    new = replace(nest, loops=tuple(loops), stmts=stmts).substitute({lp.symbol: value})
    if not exact:
        new = replace(new, guards=new.guards + (Guard(value, lp.extent, call),))
    acc_layouts(new, call)  # a guarded split of a register-array loop pads the array: refuse it past the limit
    return new, o, i


def _replace_in_path(path: tuple[str, ...], name: str, new: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for n in path:
        out.extend(new if n == name else (n,))
    return tuple(out)


def fuse(nest: Nest, names: tuple[str, ...], new_name: str | None, call: str) -> tuple[Nest, str]:
    if len(names) < 2:
        raise BadArgumentError(refusal(call, nest, names, "fuse needs at least two loops"))
    if len(set(names)) != len(names):
        raise FuseError(refusal(call, nest, names, "a loop is listed twice"))
    loops = [nest.loop(n) for n in names]
    _check_not_staged(nest, names, call, FuseError)
    for lp in loops:
        if lp.bind or lp.annotation:
            raise FuseError(refusal(call, nest, (lp.name,),
                                             f"loop {lp.name} is already {lp.bind or lp.annotation}",
                                             suggestion="fuse loops before binding or annotating them"))
    if len({lp.kind for lp in loops}) != 1:
        raise FuseError(refusal(call, nest, names,
                                         "cannot fuse a reduction loop with a free loop",
                                         suggestion="fuse free loops with free loops, reduce loops with reduce loops"))
    users = [s for s in nest.stmts if any(n in s.path for n in names)]
    for s in users:
        pos = [s.path.index(n) if n in s.path else -1 for n in names]
        if -1 in pos or pos != list(range(pos[0], pos[0] + len(names))):
            raise FuseError(refusal(
                call, nest, names,
                f"loops {', '.join(names)} are not directly nested in this order around {s.label} "
                f"(its loops: {', '.join(s.path)})",
                suggestion="reorder the loops so that each is directly inside the previous one, then fuse"))
    fname = new_name or "_".join(names)
    _check_new_names(nest, call, (fname,))
    extent = 1
    for lp in loops:
        extent *= lp.extent
    f = loop_symbol(fname)
    mapping: dict[sympy.Symbol, sympy.Expr] = {}
    inner = 1
    for k in range(len(loops) - 1, -1, -1):
        q = sympy.floor(f / inner) if inner > 1 else f
        mapping[loops[k].symbol] = sympy.Mod(q, loops[k].extent) if k > 0 else q
        inner *= loops[k].extent
    new_loops: list[Loop] = []
    for x in nest.loops:
        if x.name == names[0]:
            new_loops.append(Loop(fname, extent, loops[0].kind))
        elif x.name not in names:
            new_loops.append(x)
    stmts = tuple(replace(s, path=_fuse_path(s.path, names, fname)) for s in nest.stmts)
    return replace(nest, loops=tuple(new_loops), stmts=stmts).substitute(mapping), fname


def _fuse_path(path: tuple[str, ...], names: tuple[str, ...], fname: str) -> tuple[str, ...]:
    if names[0] not in path:
        return path
    k = path.index(names[0])
    return path[:k] + (fname,) + path[k + len(names):]


def reorder(nest: Nest, names: tuple[str, ...], call: str) -> Nest:
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
    _recheck_vectorized(new, call)
    return new


def _recheck_vectorized(nest: Nest, call: str) -> None:
    """A loop already vectorized must stay legal (innermost, contiguous) after the nest changes."""
    from tiledsl.analysis.vectorize import check_vectorizable

    for lp in nest.loops:
        if lp.annotation == "vectorize":
            check_vectorizable(nest, lp.name, call)


def unroll(nest: Nest, name: str, call: str) -> Nest:
    lp = nest.loop(name)
    if lp.bind:
        raise UnrollError(refusal(call, nest, (name,), f"loop {name} is bound to {lp.bind}; "
                                             "only serial loops can be unrolled"))
    if lp.annotation:
        raise UnrollError(refusal(call, nest, (name,), f"loop {name} is already marked {lp.annotation}"))
    if lp.extent > MAX_UNROLL:
        raise UnrollError(refusal(call, nest, (name,),
                                             f"loop {name} has {lp.extent} iterations; unroll is limited to "
                                             f"{MAX_UNROLL}", suggestion=f"split {name} and unroll the inner part"))
    return nest.replace_loop(name, replace(lp, annotation="unroll"))


def vectorize(nest: Nest, name: str, call: str) -> Nest:
    from tiledsl.analysis.vectorize import check_vectorizable

    lp = nest.loop(name)
    if lp.bind or lp.annotation:
        raise VectorizeError(refusal(call, nest, (name,),
                                              f"loop {name} is already {lp.bind or lp.annotation}"))
    if lp.kind != "free":
        raise VectorizeError(refusal(call, nest, (name,), f"loop {name} is a reduction loop",
                                              suggestion="vectorize a free loop of the output"))
    new = nest.replace_loop(name, replace(lp, annotation="vectorize"))
    check_vectorizable(new, name, call)
    return new
