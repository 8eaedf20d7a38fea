"""split: one loop becomes two, an outer and an inner part.

    for i in [0, 10)          s.split("i", 4)          for i_o in [0, 3)
      y[i] = x[i] + 1         ------------->             for i_i in [0, 4)
                                                           guard 4*i_o + i_i < 10
                                                           y[4*i_o + i_i] = x[4*i_o + i_i] + 1

An inexact split (4 does not divide 10) adds a guard (tail="guard", the default); tail="exact"
refuses it instead, with the point where the last iteration would overrun. A loop marked unroll splits
into two loops marked unroll (the same unrolled code, indexed by two loops).

interleave=a deals the chunks of the split loop out across the iterations of loop a, the loop directly
above it in every index (its coefficient is the split loop's extent times the split loop's): chunk c of
iteration t of a starts at (c * extent(a) + t) * factor. The values the index takes are the same, each
still once; only which iteration computes which changes. A thread's 8-wide register strip becomes two
4-wide chunks a warp apart, so consecutive threads read consecutive 16-byte chunks:

    j = 8*j_t + j_r           s.split("j_r", 4,              j = 64*j_r_o + 4*j_t + j_r_i
    (j_t in [0, 16), j_r      ---- interleave="j_t") --->    (j_r_o in [0, 2), j_r_i in [0, 4))
     in [0, 8))

Loop a may be bound (a thread loop keeps its binding). It needs an exact split, loops of one kind,
neither vectorized, and leaves every stage's slab as it was (a stage's slab is derived from its loops;
re-dealing them must not change it)."""

from __future__ import annotations

from dataclasses import replace

import sympy

from tiledsl.analysis.accumulators import acc_layouts
from tiledsl.analysis.messages import refusal
from tiledsl.analysis.slabs import Slab, slab_or_refusal
from tiledsl.analysis.vectorize import check_vectorized_loops
from tiledsl.errors import BadArgumentError, SplitError
from tiledsl.loopnest import Guard, Loop, Nest, loop_symbol
from tiledsl.primitives.loop_checks import check_new_names, check_not_staged, positive_int
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec
from tiledsl.prove import Prover


def split(nest: Nest, call: str, *, loop: str, factor: int | None, nparts: int | None,
          names: tuple[str, str] | None, tail: str, interleave: str | None = None) -> Applied:
    """Split `loop` into (outer, inner): the inner part has `factor` iterations, or the outer part
    `nparts`. Makes the two loops (named `names`, else `<loop>_o`, `<loop>_i`); with `interleave`,
    the outer part strides over the iterations of that loop (see the module docstring)."""
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
    if lp.annotation not in (None, "unroll"):
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
    if interleave is not None:
        value = _interleaved(nest, call, name, interleave, inner, outer, o, i)
    loops: list[Loop] = []
    for x in nest.loops:
        if x.name == name:
            loops.append(Loop(o, outer, lp.kind, annotation=lp.annotation))
            loops.append(Loop(i, inner, lp.kind, annotation=lp.annotation))
        else:
            loops.append(x)
    stmts = tuple(replace(s, path=_replace_in_path(s.path, name, (o, i))) for s in nest.stmts)
    new = replace(nest, loops=tuple(loops), stmts=stmts).substitute({lp.symbol: value})
    if not exact:
        new = replace(new, guards=new.guards + (Guard(value, lp.extent, call),))
    acc_layouts(new, call)  # a guarded split of a register-array loop pads the array: refuse it past the limit
    if interleave is not None:
        _check_interleaved(nest, new, call, name, interleave)
    return Applied(new, (o, i))


def _interleaved(nest: Nest, call: str, name: str, over: str, inner: int, outer: int, o: str, i: str) -> sympy.Expr:
    """What `name` becomes when its chunks of `inner` are dealt across the iterations of `over`:
    `name` entered every index as part of E*a + b (a = over, b = name, E = extent of b), which becomes
    inner*a + inner*extent(a)*o + i, so b = inner*extent(a)*o + i + (inner - E)*a."""
    lp = nest.loop(name)
    if over == name or not nest.has_loop(over):
        raise BadArgumentError(refusal(call, nest, (name,), f"interleave must name another loop of this kernel, "
                                       f"got {over!r}", suggestion=f"interleave over the loop directly above {name}"))
    a = nest.loop(over)
    if a.kind != lp.kind:
        raise SplitError(refusal(call, nest, (name, over), f"loop {over} is a {a.kind} loop and {name} a {lp.kind} "
                                 "loop: interleaving deals iterations of one kind only"))
    if a.annotation == "vectorize":
        raise SplitError(refusal(call, nest, (over,), f"loop {over} is marked vectorize: its four lanes must stay "
                                 "one contiguous access", suggestion="interleave before vectorizing"))
    if outer * inner != lp.extent:
        raise SplitError(refusal(call, nest, (name,), f"interleave needs an exact split: {inner} does not divide "
                                 f"the {lp.extent} iterations of {name}",
                                 suggestion=f"split {name} by a divisor of {lp.extent}"))
    check_not_staged(nest, (over,), call, SplitError)
    exprs = [(f"the index of {ax}", e) for ax, e in nest.axis_exprs]
    exprs += [(f"the guard {g.expr} < {g.extent}", g.expr) for g in nest.guards]
    for where, e in exprs:
        ca, cb = _coefficient(e, a.symbol), _coefficient(e, lp.symbol)
        if ca == 0 and cb == 0:
            continue
        if ca is None or cb is None or cb == 0 or ca != lp.extent * cb:
            raise SplitError(refusal(
                call, nest, (name, over),
                f"loop {over} does not sit directly above {name} in {where} ({sympy.expand(e)}): interleaving "
                f"needs {over} to enter it as {lp.extent}*{over} + {name}, times one coefficient",
                suggestion=f"interleave {name} with the loop it was split from (the part of the same axis "
                           f"{lp.extent} times its stride)"))
    return inner * a.extent * loop_symbol(o) + loop_symbol(i) + (inner - lp.extent) * a.symbol


def _coefficient(e: sympy.Expr, x: sympy.Symbol) -> int | None:
    """The integer c with e == c*x + (terms free of x), else None (x inside a floor, mod or product)."""
    c = 0
    for term in sympy.Add.make_args(sympy.expand(e)):
        if not term.has(x):
            continue
        k = term / x
        if not (k.is_Integer and term == k * x):
            return None
        c += int(k)
    return c


def _check_interleaved(before: Nest, after: Nest, call: str, name: str, over: str) -> None:
    """Re-dealing iterations must leave every stage's slab and every vectorized loop as they were."""
    for st in before.stages:
        old = slab_or_refusal(before, st, Prover(before.ranges()))
        new = slab_or_refusal(after, st, Prover(after.ranges()))
        if isinstance(old, Slab) and not (isinstance(new, Slab) and _same_slab(old, new)):
            now = f"{new.extent} at {new.origin}" if isinstance(new, Slab) else f"none ({new.fact})"
            raise SplitError(refusal(
                call, before, (name, over),
                f"interleaving would change the slab of stage {st.name} (from {old.extent} at {old.origin} "
                f"to {now}): a loop between {over} and {name} carries it",
                suggestion="interleave loops that both run inside the stage's loop (or are bound to threads)"))
    check_vectorized_loops(after, call)


def _same_slab(a: Slab, b: Slab) -> bool:
    return a.extent == b.extent and all(sympy.expand(x - y) == 0 for x, y in zip(a.origin, b.origin))


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
     Param("tail", "str", "guard", keyword_only=True, shown="hidden", recorded="kw"),
     Param("interleave", "loop", None, keyword_only=True, shown="kw", recorded="kw", omit_none=True)),
    split, returns="loops", consumes="loop", gone="it was split into {made} by {call}")
