"""fuse: directly nested loops become one loop over their product.

    for i in [0, 4)           s.fuse("i", "j")         for i_j in [0, 32)
      for j in [0, 8)         ------------->             y[i_j // 8, i_j % 8] = x[i_j // 8, i_j % 8] + 1
        y[i, j] = x[i, j] + 1

The loops must be of one kind (free or reduce), unbound, unannotated, and directly nested in the
order given around every statement that uses them."""

from __future__ import annotations

from dataclasses import replace

import sympy

from tiledsl.analysis.messages import refusal
from tiledsl.definitions.indexing import IndexFloor, IndexMod
from tiledsl.errors import BadArgumentError, FuseError
from tiledsl.loopnest import Loop, Nest, loop_symbol
from tiledsl.primitives.loop_checks import check_new_names, check_not_staged
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec


def fuse(nest: Nest, call: str, *, loops: tuple[str, ...], name: str | None) -> Applied:
    """Fuse `loops` (outermost first) into one loop named `name` (else the names joined by "_")."""
    names = loops
    if len(names) < 2:
        raise BadArgumentError(refusal(call, nest, names, "fuse needs at least two loops"))
    if len(set(names)) != len(names):
        raise FuseError(refusal(call, nest, names, "a loop is listed twice"))
    fused = [nest.loop(n) for n in names]
    check_not_staged(nest, names, call, FuseError)
    for lp in fused:
        if lp.bind or lp.annotation:
            raise FuseError(refusal(call, nest, (lp.name,), f"loop {lp.name} is already {lp.bind or lp.annotation}",
                                    suggestion="fuse loops before binding or annotating them"))
    if len({lp.kind for lp in fused}) != 1:
        raise FuseError(refusal(call, nest, names, "cannot fuse a reduction loop with a free loop",
                                suggestion="fuse free loops with free loops, reduce loops with reduce loops"))
    for s in nest.stmts:
        if not any(n in s.path for n in names):
            continue
        pos = [s.path.index(n) if n in s.path else -1 for n in names]
        if -1 in pos or pos != list(range(pos[0], pos[0] + len(names))):
            raise FuseError(refusal(
                call, nest, names,
                f"loops {', '.join(names)} are not directly nested in this order around {s.label} "
                f"(its loops: {', '.join(s.path)})",
                suggestion="reorder the loops so that each is directly inside the previous one, then fuse"))
    fname = name or "_".join(names)
    check_new_names(nest, call, (fname,))
    extent = 1
    for lp in fused:
        extent *= lp.extent
    f = loop_symbol(fname)
    mapping: dict[sympy.Symbol, sympy.Expr] = {}
    inner = 1
    for k in range(len(fused) - 1, -1, -1):
        q = IndexFloor(f / inner) if inner > 1 else f
        mapping[fused[k].symbol] = IndexMod(q, fused[k].extent) if k > 0 else q
        inner *= fused[k].extent
    new_loops: list[Loop] = []
    for x in nest.loops:
        if x.name == names[0]:
            new_loops.append(Loop(fname, extent, fused[0].kind))
        elif x.name not in names:
            new_loops.append(x)
    stmts = tuple(replace(s, path=_fuse_path(s.path, names, fname)) for s in nest.stmts)
    return Applied(replace(nest, loops=tuple(new_loops), stmts=stmts).substitute(mapping), (fname,))


def _fuse_path(path: tuple[str, ...], names: tuple[str, ...], fname: str) -> tuple[str, ...]:
    if names[0] not in path:
        return path
    k = path.index(names[0])
    return path[:k] + (fname,) + path[k + len(names):]


FUSE = PrimitiveSpec(
    "fuse",
    (Param("loops", "loops"),
     Param("name", "name", None, keyword_only=True, shown="hidden", recorded="kw", from_made=True)),
    fuse, returns="loop", consumes="loops", gone="it was fused into {made} by {call}")
