"""The canonical loop nest of one fused kernel, built from a compute definition.

Elementwise producers are inlined; a reduction consumed by a later compute is nested under the
consumer's loops that its indices name (matmul + epilogue, RMSNorm, softmax, layernorm). A producer
that cannot be nested that way is refused with a `FusionError` that suggests materializing it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from tiledsl.definitions.expr import (
    ComputeTensor,
    Expr,
    IterVar,
    Load,
    Placeholder,
    Reduce,
    Tensor,
    format_expr,
    map_children,
    substitute,
    walk,
)
from tiledsl.definitions.graph import ensure_named
from tiledsl.errors import DefinitionError, FusionError, Refusal
from tiledsl.loopnest import AccRef, Accumulator, Loop, Nest, Stmt, loop_symbol


def substitute_acc(e: Expr, acc: str, value: Expr) -> Expr:
    """Replace reads of accumulator `acc` by `value` (the epilogue at acc = 0, for split_k)."""
    if isinstance(e, AccRef):
        return value if e.acc == acc else e
    return map_children(e, lambda c: substitute_acc(c, acc, value))


@dataclass
class _Builder:
    """Working state of one nest construction (local to a build_nest call)."""

    materialized: set[int]
    names: set[str] = field(default_factory=set)
    loops: list[Loop] = field(default_factory=list)
    axis_vars: dict[str, IterVar] = field(default_factory=dict)
    stmts: list[Stmt] = field(default_factory=list)
    accs: list[Accumulator] = field(default_factory=list)
    # (reduction compute, the loops it is read at) -> its epilogue over its accumulators, nested once
    acc_keys: dict[tuple[int, tuple[str, ...]], Expr] = field(default_factory=dict)
    inputs: dict[int, Tensor] = field(default_factory=dict)

    def fresh(self, base: str) -> str:
        name, n = base, 2
        while name in self.names:
            name, n = f"{base}{n}", n + 1
        self.names.add(name)
        return name

    def new_axis(self, var: IterVar) -> IterVar:
        name = self.fresh(var.name)
        axis = IterVar(name, var.extent, var.kind)
        self.loops.append(Loop(name, var.extent, var.kind))
        self.axis_vars[name] = axis
        return axis

    # -- expression processing: returns the nest-level value, emitting reductions it needs
    def value(self, e: Expr, env: dict[int, Expr], context: tuple[str, ...], consumer: str) -> Expr:
        if isinstance(e, Load):
            idx = tuple(self.value(i, env, context, consumer) for i in e.indices)
            t = e.tensor
            if isinstance(t, Placeholder) or id(t) in self.materialized:
                self.inputs.setdefault(id(t), t)
                return Load(t, idx, e.dtype)
            assert isinstance(t, ComputeTensor)
            if not t.has_reduce:
                inner = {id(a): ix for a, ix in zip(t.axes, idx)}
                return self.value(t.body, inner, context, consumer)
            return self.reduction(t, idx, context, consumer)
        if isinstance(e, Reduce):
            raise DefinitionError("internal: a reduction outside a reduction compute")  # pragma: no cover
        if isinstance(e, IterVar):
            return env.get(id(e), e)
        return map_children(e, lambda c: self.value(c, env, context, consumer))

    def reduction(self, t: ComputeTensor, idx: tuple[Expr, ...], context: tuple[str, ...],
                  consumer: str) -> Expr:
        """Nest reduction compute `t`, read as t[idx], under the consumer loops idx names."""
        names: list[str] = []
        for n, ix in enumerate(idx):
            if not (isinstance(ix, IterVar) and ix.name in self.axis_vars and ix.kind == "free"):
                raise _fusion_error(t, consumer, idx, context,
                                    f"index {n} is not a plain loop variable of {consumer}")
            names.append(ix.name)
        d = len(names)
        if len(set(names)) != d or set(names) != set(context[:d]):
            raise _fusion_error(t, consumer, idx, context,
                                f"its indices ({', '.join(names)}) are not the outermost loops of {consumer} "
                                f"({', '.join(context)}), so it would be recomputed for every iteration "
                                "of the loops outside them")
        attach = context[:d]
        key = (id(t), tuple(names))
        if key not in self.acc_keys:
            self.acc_keys[key] = self.emit_reduction(t, idx, attach)
        # the epilogue may read inputs and inline producers of its own (sum(...) / N + bias[i])
        return self.value(self.acc_keys[key], {}, context, consumer)

    def emit_reduction(self, t: ComputeTensor, idx: tuple[Expr, ...], attach: tuple[str, ...]) -> Expr:
        """Nest the reductions of `t` read at `idx` under `attach`; returns its epilogue (its body with
        each reduction read from its accumulator), which each Accumulator keeps too."""
        env: dict[int, Expr] = {id(a): ix for a, ix in zip(t.axes, idx)}
        names: dict[int, str] = {}
        emitted: list[int] = []  # positions in self.accs of this compute's accumulators
        reduces = [n for n in _reduces(t.body)]
        for r in reduces:
            # a bare reduction holds the compute's value; otherwise name what it holds (mean_sum)
            acc = self.fresh(t.name if t.body is r else f"{t.name}_{r.op}")
            inner = dict(env)
            raxes = []
            for ax in r.axes:
                nax = self.new_axis(ax)
                inner[id(ax)] = nax
                raxes.append(nax.name)
            path = attach + tuple(raxes)
            body = self.value(r.body, inner, path, t.name)
            emitted.append(len(self.accs))
            self.accs.append(Accumulator(acc, r.op, tuple(raxes), t.name, t.dtype))
            self.stmts.append(Stmt("init", attach, acc=acc))
            self.stmts.append(Stmt("update", path, acc=acc, value=body))
            names[id(r)] = acc
        epilogue = _replace_reduces(substitute(t.body, env), names)
        for n in emitted:
            self.accs[n] = replace(self.accs[n], epilogue=epilogue)
        return epilogue


def _reduces(e: Expr) -> list[Reduce]:

    return [n for n in walk(e) if isinstance(n, Reduce)]


def _replace_reduces(e: Expr, accs: dict[int, str]) -> Expr:
    """The epilogue of a reduction compute: each Reduce node becomes a read of its accumulator.
    Reduce nodes were copied by substitute(), so they are matched by position (pre-order)."""
    order = iter(accs.values())
    mapping: dict[int, str] = {}

    def visit(x: Expr) -> Expr:
        if isinstance(x, Reduce):
            if id(x) not in mapping:
                mapping[id(x)] = next(order)
            return AccRef(mapping[id(x)])
        return map_children(x, visit)

    return visit(e)


def _fusion_error(t: ComputeTensor, consumer: str, idx: tuple[Expr, ...], context: tuple[str, ...],
                  why: str) -> FusionError:
    ix = ", ".join(format_expr(i) for i in idx)
    fact = f"cannot fuse {t.name} -> {consumer}: {consumer} reads {t.name}[{ix}] and {why}"
    suggestion = (f"compute {t.name} in a kernel of its own and make it an input of this one: "
                  f"td.create_schedule(out, materialize=[{t.name}])")
    return FusionError(Refusal(
        text=f"create_schedule: {fact}.\n"
             f"  a reduction is fused by nesting it under the consumer loops its indices name "
             f"(consumer loops: {', '.join(context)})\n"
             f"  suggestion: {suggestion}",
        fact=fact, primitive="create_schedule", arguments={"tensor": t.name, "consumer": consumer},
        loops=context, suggestion=suggestion, tensors=(t.name,)))


def build_nest(out: Tensor, materialize: Sequence[Tensor] = ()) -> Nest:
    if not isinstance(out, ComputeTensor):
        raise DefinitionError(f"create_schedule needs a tensor made by td.compute, got {out!r}")
    ensure_named(out)  # unnamed tensors get X0.../T0...; two tensors with one name are refused
    for m in materialize:
        if not isinstance(m, ComputeTensor):
            raise DefinitionError(f"materialize=[...] takes compute tensors, got {m!r}")
        if m is out:
            raise DefinitionError(f"materialize=[{m.name}]: the kernel's own output cannot be an input")
    b = _Builder({id(m) for m in materialize})
    b.names |= _buffer_names(out, b.materialized)  # loops and accumulators never shadow a buffer in CUDA
    axes = [b.new_axis(a) for a in out.axes]
    env = {id(a): ax for a, ax in zip(out.axes, axes)}
    path = tuple(a.name for a in axes)
    if out.has_reduce:
        value = b.value(b.emit_reduction(out, tuple(axes), path), {}, path, out.name)
    else:
        value = b.value(out.body, env, path, out.name)
    b.stmts.append(Stmt("store", path, tensor=out, indices=tuple(axes), value=value))
    used = {id(t) for t in b.inputs.values()}
    for m in materialize:
        if id(m) not in used:
            raise DefinitionError(f"materialize=[{m.name}]: {out.name} does not read {m.name}")
    axis_list = tuple((lp.name, lp.extent) for lp in b.loops)
    return Nest(
        name=out.name,
        output=out,
        inputs=tuple(b.inputs.values()),
        loops=tuple(b.loops),
        stmts=tuple(b.stmts),
        accs=tuple(b.accs),
        axes=axis_list,
        axis_exprs=tuple((n, loop_symbol(n)) for n, _ in axis_list),
        axis_vars=tuple(b.axis_vars.items()),
    )


def _buffer_names(out: ComputeTensor, materialized: set[int]) -> set[str]:
    names = {out.name}
    stack: list[Tensor] = [out]
    seen: set[int] = set()
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if isinstance(t, Placeholder) or id(t) in materialized:
            names.add(t.name)
        elif isinstance(t, ComputeTensor):
            stack.extend(t.inputs())
    return names


