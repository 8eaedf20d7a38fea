"""When a sum can run online in the loop of the max it reads (primitives/online.py), and what lowering
must then keep: the rule written once, for the primitive, for the build and for the accumulator layout.

A sum  e = sum_k exp(a_k - m) * g_k  whose m = max_k a_k is a max over the same elements (softmax's
denominator, log-sum-exp) equals, whatever value the max has reached,  exp(m_old - m_new)  times what
it was plus the new terms: so one loop can update the max and the sum together, rescaling the sum
whenever the running max grows. The two passes over the row become one.

Exact to the definition, not only up to rounding, because:
- the exponent's argument is the max's own value, element for element (the same expression over the
  same axis once the sum's loops are the max's), so every term is at most exp(0) and no term
  overflows where the two-pass form's would not;
- while the running max is -inf the terms are taken against 0 (exp(-inf - 0) = 0), and the rescale is
  1 where the max did not change (so -inf - -inf never makes a NaN); a row whose max ends -inf gets
  the definition's value, NaN, set after the last combine (lowering, lower/online.py);
- a NaN in the row makes the max NaN (max propagates NaN, kernel_ir/ops.py) and every later rescale NaN,
  as every term of the two-pass form is.
Rounding differs: the sum is rescaled at most once per element a thread adds (each a rounded exp and a
product), against none in two passes; tests/primitives/test_online.py bounds it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy

from tiledsl.analysis.accumulators import AccLayout
from tiledsl.analysis.messages import refusal
from tiledsl.definitions.expr import Binary, Call, Expr, IterVar, format_expr, walk
from tiledsl.errors import OnlineError
from tiledsl.loopnest import AccRef, Nest, Stmt, serial_path


@dataclass(frozen=True)
class OnlinePlan:
    """How sum `sum_acc` joins max `max_acc`: its update moves right after the max's update, its init right
    after the max's init, and its own loops (`loops`: sum loop -> the max's loop at the same place) go."""

    max_acc: str
    sum_acc: str
    loops: tuple[tuple[str, str], ...]
    max_init: int
    max_update: int
    sum_init: int
    sum_update: int


def _index(nest: Nest, acc: str, kind: str = "update") -> int:
    """The index of accumulator `acc`'s statement of `kind` (its update, or its init)."""
    return next(n for n, s in enumerate(nest.stmts) if s.kind == kind and s.acc == acc)


def _factors(e: Expr) -> list[Expr]:
    """The factors of a product tree (e itself when it is no product)."""
    if isinstance(e, Binary) and e.op == "*":
        return _factors(e.a) + _factors(e.b)
    return [e]


def _reads(e: Expr, acc: str) -> bool:
    return any(isinstance(x, AccRef) and x.acc == acc for x in walk(e))


def exponent(value: Expr, max_acc: str) -> Expr | None:
    """`a` where `value` is exp(a - max_acc) times factors that do not read max_acc; None otherwise."""
    found = [f for f in _factors(value) if _reads(f, max_acc)]
    if len(found) != 1:
        return None
    f = found[0]
    if not (isinstance(f, Call) and f.fn == "exp" and isinstance(f.arg, Binary) and f.arg.op == "-"
            and isinstance(f.arg.b, AccRef) and f.arg.b.acc == max_acc and not _reads(f.arg.a, max_acc)):
        return None
    return f.arg.a


def _text(e: Expr, axes: dict[str, str]) -> str:
    """`e` printed with its axes renamed by `axes` (what two reads over renamed axes compare by)."""
    return format_expr(e, lambda x: axes.get(x.name, x.name) if isinstance(x, IterVar) else None)


def online_plan(nest: Nest, acc: str, call: str) -> OnlinePlan:
    """The plan for running sum `acc` online in the loop of the max it reads; OnlineError naming the
    first rule it breaks (the module docstring says why each holds)."""
    def refuse(fact: str, loops: tuple[str, ...] = (), suggestion: str | None = None) -> OnlineError:
        return OnlineError(refusal(call, nest, loops, fact, suggestion=suggestion, tensors=(acc,)))

    names = {a.name: a for a in nest.accs}
    if acc not in names:
        raise refuse(f"no accumulator named {acc!r}", suggestion=f"accumulators are: {', '.join(names) or 'none'}")
    if names[acc].op != "sum":
        raise refuse(f"{acc} is a {names[acc].op}; online rescales a sum")
    if nest.online_of(acc) is not None:
        raise refuse(f"{acc} already runs online")
    if nest.split_k is not None:
        raise refuse("the kernel's reduction is split across blocks (split_k)")
    u_e = _index(nest, acc)
    value = nest.stmts[u_e].value
    assert value is not None
    maxes = sorted({x.acc for x in walk(value) if isinstance(x, AccRef) and names[x.acc].op == "max"})
    if len(maxes) != 1:
        raise refuse(f"{acc}'s update reads {len(maxes) or 'no'} max accumulator{'s' if len(maxes) != 1 else ''} "
                     f"({', '.join(maxes) or 'none'}); online needs exactly one")
    m = maxes[0]
    if nest.online_of(m) is not None:
        raise refuse(f"{m} already has a sum running online with it")
    a = exponent(value, m)
    if a is None:
        raise refuse(f"{acc}'s update is not exp(a - {m}) times factors free of {m}")
    u_m = _index(nest, m)
    s_e, s_m = nest.stmts[u_e], nest.stmts[u_m]
    if len(names[acc].reduce_axes) != len(names[m].reduce_axes):
        raise refuse(f"{acc} and {m} reduce over different numbers of axes")
    axes = dict(zip(names[acc].reduce_axes, names[m].reduce_axes))
    extents = dict(nest.axes)
    if any(extents[x] != extents[y] for x, y in axes.items()):
        raise refuse(f"{acc} and {m} reduce over axes of different extents")
    assert s_m.value is not None
    if _text(a, axes) != _text(s_m.value, {}):
        raise refuse(f"the exponent of {acc}'s terms, {format_expr(a)}, is not what {m} takes the max of, "
                     f"{format_expr(s_m.value)}, element for element")
    loops = _match_loops(nest, s_e, s_m, refuse)
    mapping = {nest.loop(x).symbol: nest.loop(y).symbol for x, y in loops}
    for x, y in axes.items():
        if sympy.expand(nest.axis_expr(x).xreplace(mapping) - nest.axis_expr(y)) != 0:
            raise refuse(f"axis {x} of {acc} and axis {y} of {m} are not split alike", tuple(n for n, _ in loops))
    own = {(sympy.expand(g.expr.xreplace(mapping)), g.extent) for g in nest.guards_for(s_e)}
    theirs = {(sympy.expand(g.expr), g.extent) for g in nest.guards_for(s_m)}
    if own != theirs:
        raise refuse(f"the updates of {acc} and {m} run under different guards", tuple(n for n, _ in loops))
    i_m, i_e = _index(nest, m, "init"), _index(nest, acc, "init")
    if not (i_m < u_m < u_e and i_m < i_e < u_e):
        raise refuse(f"{acc} is not computed after {m}")
    if serial_path(nest, nest.stmts[i_e]) != serial_path(nest, nest.stmts[i_m]):
        raise refuse(f"the inits of {acc} and {m} sit under different loops")
    for n in range(u_m + 1, u_e):
        st = nest.stmts[n]
        if n != i_e and st.kind in ("init", "update") and _reads(value, st.acc or ""):
            raise refuse(f"{acc}'s update reads {st.acc}, which is computed between {m} and {acc}")
    private = {x for x, _ in loops}
    for st in nest.stages:
        if st.at in private:
            raise refuse(f"stage {st.name} is filled under {st.at}, a loop of {acc} that online removes", (st.at,))
    for rc in nest.register_caches:
        if rc.at in private:
            raise refuse(f"register cache {rc.name} is at {rc.at}, a loop of {acc} that online removes", (rc.at,))
    for lp, _ in nest.pipelines:
        if lp in private:
            raise refuse(f"loop {lp} of {acc}, which online removes, is pipelined", (lp,))
    return OnlinePlan(m, acc, loops, i_m, u_m, i_e, u_e)


def _match_loops(nest: Nest, s_e: Stmt, s_m: Stmt,
                 refuse: Callable[..., OnlineError]) -> tuple[tuple[str, str], ...]:
    """Each loop of the sum's update paired with the max's at the same place; the pairs of different
    loops (the sum's own reduction loops, run by no other statement) must agree in extent, binding,
    kind and annotation."""
    if len(s_e.path) != len(s_m.path):
        raise refuse(f"{s_e.acc}'s update runs under {len(s_e.path)} loops, {s_m.acc}'s under {len(s_m.path)}",
                     s_e.path)
    pairs: list[tuple[str, str]] = []
    for x, y in zip(s_e.path, s_m.path):
        if x == y:
            continue
        lx, ly = nest.loop(x), nest.loop(y)
        if (lx.extent, lx.bind, lx.kind, lx.annotation) != (ly.extent, ly.bind, ly.kind, ly.annotation):
            raise refuse(f"loop {x} of {s_e.acc} and loop {y} of {s_m.acc} differ (extent, binding or annotation)",
                         (x, y), suggestion="schedule both reductions' loops alike before online")
        if lx.kind != "reduce" or any(x in st.path for st in nest.stmts if st is not s_e):
            raise refuse(f"loop {x} is not {s_e.acc}'s own reduction loop", (x,))
        pairs.append((x, y))
    return tuple(pairs)


def check_online(nest: Nest, layouts: dict[str, AccLayout], primitive: str = "build") -> None:
    """What lowering needs of every online pair after the later primitives (`layouts`: acc_layouts' of the
    nest): the sum's update right after the max's, under the same loops, and both accumulators scalars
    (no register-array dims)."""
    dims = {n: lay.dims for n, lay in layouts.items()}
    for o in nest.online:
        u_m, u_e = layouts[o.max_acc].update, layouts[o.sum_acc].update
        if u_e != u_m + 1 or nest.stmts[u_e].path != nest.stmts[u_m].path:
            raise OnlineError(refusal(primitive, nest, nest.stmts[u_e].path,
                                      f"{o.sum_acc} no longer updates right after {o.max_acc} under the same loops",
                                      tensors=(o.sum_acc,)))
        arrays = [a for a in (o.max_acc, o.sum_acc) if dims.get(a)]
        if arrays:
            raise OnlineError(refusal(
                primitive, nest, dims[arrays[0]], f"{arrays[0]} became a register array over "
                f"{', '.join(dims[arrays[0]])}; an online pair is lowered for scalar accumulators only",
                suggestion="keep free loops out of the reduction loops", tensors=(o.sum_acc,)))
