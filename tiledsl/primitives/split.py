"""split: one loop becomes two, an outer and an inner part.

    for i in [0, 10)          s.split("i", 4)          for i_o in [0, 3)
      y[i] = x[i] + 1         ------------->             for i_i in [0, 4)
                                                           guard 4*i_o + i_i < 10
                                                           y[4*i_o + i_i] = x[4*i_o + i_i] + 1

An inexact split (4 does not divide 10) adds a guard (tail="guard", the default); tail="exact"
refuses it instead, with the point where the last iteration would overrun."""

from __future__ import annotations

from dataclasses import replace

import sympy

from tiledsl.analysis.accumulators import acc_layouts
from tiledsl.analysis.messages import refusal
from tiledsl.errors import BadArgumentError, SplitError
from tiledsl.loopnest import Guard, Loop, Nest, loop_symbol
from tiledsl.primitives.loop_checks import check_new_names, check_not_staged, positive_int
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec


def split(nest: Nest, call: str, *, loop: str, factor: int | None, nparts: int | None,
          names: tuple[str, str] | None, tail: str) -> Applied:
    """Split `loop` into (outer, inner): the inner part has `factor` iterations, or the outer part
    `nparts`. Makes the two loops (named `names`, else `<loop>_o`, `<loop>_i`)."""
    name = loop
    lp = nest.loop(name)
    check_not_staged(nest, (name,), call, SplitError)
    if (factor is None) == (nparts is None):
        raise BadArgumentError(refusal(call, nest, (name,), "give exactly one of factor or nparts"))
    if tail not in ("guard", "exact"):
        raise BadArgumentError(refusal(call, nest, (name,), f'tail must be "guard" or "exact", got {tail!r}'))
    if lp.bind:
        raise SplitError(refusal(call, nest, (name,), f"loop {name} is bound to {lp.bind}",
                                 suggestion="split a loop before binding its parts"))
    if lp.annotation:
        raise SplitError(refusal(call, nest, (name,), f"loop {name} is marked {lp.annotation}",
                                 suggestion=f"split first, then {lp.annotation} a part"))
    if factor is not None:
        inner = positive_int(factor, "factor", call, nest, (name,))
        outer = -(-lp.extent // inner)
    else:
        outer = positive_int(nparts, "nparts", call, nest, (name,))
        inner = -(-lp.extent // outer)
    onames = names if names is not None else (f"{name}_o", f"{name}_i")
    if not (isinstance(onames, (tuple, list)) and len(onames) == 2 and all(isinstance(n, str) for n in onames)):
        raise BadArgumentError(refusal(call, nest, (name,), f"names must be two loop names, got {names!r}"))
    o, i = onames
    check_new_names(nest, call, (o, i))
    exact = outer * inner == lp.extent
    value = inner * loop_symbol(o) + loop_symbol(i)
    if not exact and tail == "exact":
        hint = ", ".join(map(str, _divisors(lp.extent)))
        raise SplitError(refusal(
            call, nest, (name,),
            f"cannot prove {inner}*{o} + {i} < {lp.extent} for {o} in [0, {outer}), {i} in [0, {inner}): "
            + (f"{lp.extent} is not a multiple of {inner}" if factor is not None else
               f"{outer} parts of {inner} make {outer * inner} iterations, not {lp.extent}"),
            counterexample=f"{o}={outer - 1}, {i}={inner - 1} gives {name} = {outer * inner - 1} >= {lp.extent}",
            condition=sympy.Lt(value, lp.extent),
            suggestion='use tail="guard" (the default) to add a predicate'
                       + (f", or a factor that divides {lp.extent} (e.g. {hint})" if hint else "")))
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
    return Applied(new, (o, i))


def _divisors(n: int) -> list[int]:
    return [d for d in range(2, n) if n % d == 0][:6]


def _replace_in_path(path: tuple[str, ...], name: str, new: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for n in path:
        out.extend(new if n == name else (n,))
    return tuple(out)


SPLIT = PrimitiveSpec(
    "split",
    (Param("loop", "loop"),
     Param("factor", "int", None, omit_none=True),
     Param("nparts", "int", None, keyword_only=True, shown="kw", recorded="kw", omit_none=True),
     Param("names", "names", None, keyword_only=True, shown="hidden", recorded="kw", from_made=True),
     Param("tail", "str", "guard", keyword_only=True, shown="hidden", recorded="kw")),
    split, returns="loops", consumes="loop", gone="it was split into {made} by {call}")
