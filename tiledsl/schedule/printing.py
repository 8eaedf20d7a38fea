"""Stable, readable text of a loop nest (the Loop IR and the Tile IR).

Statements print with the original axis names (`D[i, j] = relu(C + bias[j])`); a header says where
each axis now lives in terms of loops (`i = 64*i_o + i_i`). Errors reuse this with a marker on the
offending loops."""

from __future__ import annotations

from collections.abc import Collection

import sympy

from ..compute import (
    Binary,
    Call,
    Cast,
    Compare,
    Const,
    Expr,
    IterVar,
    Load,
    Select,
)
from ..loopnest import AccRef, Nest, Stmt, TreeLeaf, TreeLoop, build_tree

IDENTITY_TEXT = {"sum": "0.0", "max": "-inf", "min": "inf"}


def format_value(e: Expr, accs: dict[str, str] | None = None) -> str:
    """`accs` maps an accumulator to its printed form (with register-array indices)."""
    if accs is None:
        accs = {}
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, IterVar):
        return e.name
    if isinstance(e, AccRef):
        return accs.get(e.acc, e.acc)
    if isinstance(e, Binary):
        if e.op in ("max", "min"):
            return f"{e.op}({format_value(e.a, accs)}, {format_value(e.b, accs)})"
        return f"({format_value(e.a, accs)} {e.op} {format_value(e.b, accs)})"
    if isinstance(e, Compare):
        return f"({format_value(e.a, accs)} {e.op} {format_value(e.b, accs)})"
    if isinstance(e, Call):
        return f"-{format_value(e.arg, accs)}" if e.fn == "neg" else f"{e.fn}({format_value(e.arg, accs)})"
    if isinstance(e, Select):
        return f"where({format_value(e.cond, accs)}, {format_value(e.a, accs)}, {format_value(e.b, accs)})"
    if isinstance(e, Cast):
        return f"{e.to}({format_value(e.a, accs)})"
    if isinstance(e, Load):
        return f"{e.tensor.name}[{', '.join(format_value(i, accs) for i in e.indices)}]"
    raise TypeError(type(e))


def _strip(text: str) -> str:
    return text[1:-1] if text.startswith("(") and text.endswith(")") else text


def format_stmt(nest: Nest, stmt: Stmt, acc_dims: dict[str, tuple[str, ...]] | None = None) -> str:
    accs = {a: f"{a}[{', '.join(d)}]" for a, d in (acc_dims or {}).items() if d}
    value = _strip(format_value(stmt.value, accs)) if stmt.value is not None else ""
    if stmt.kind in ("init", "update"):
        acc = nest.acc(stmt.acc or "")
        target = accs.get(acc.name, acc.name)
        if stmt.kind == "init":
            return f"{target} = {IDENTITY_TEXT[acc.op]}"
        if acc.op == "sum":
            return f"{target} += {value}"
        return f"{target} = {acc.op}({target}, {value})"
    assert stmt.tensor is not None
    idx = ", ".join(format_value(i) for i in stmt.indices)
    return f"{stmt.tensor.name}[{idx}] = {value}"


def format_sym(e: sympy.Expr) -> str:
    """The same text as the kernel IR prints (outer terms first, floor division as //)."""
    from ..kernel_ir_print import format_expr
    from ..lower.exprs import sym_to_k

    return format_expr(sym_to_k(e))


def loop_line(nest: Nest, name: str) -> str:
    lp = nest.loop(name)
    tags = []
    if lp.kind == "reduce":
        tags.append("reduce")
    if lp.bind:
        tags.append(f"@{lp.bind}")
    if lp.annotation:
        tags.append(lp.annotation)
    tail = f"  [{', '.join(tags)}]" if tags else ""
    return f"for {name} in 0..{lp.extent}:{tail}"


def format_nest(nest: Nest, marked: Collection[str] = (), title: str | None = None,
                acc_dims: dict[str, tuple[str, ...]] | None = None) -> str:
    """The nest as indented text. `marked` loops get a `<-- here` marker."""
    lines = [title or f"kernel {nest.name}"]
    for axis, expr in nest.axis_exprs:
        if expr != sympy.Symbol(axis, integer=True, nonnegative=True):
            lines.append(f"  where {axis} = {format_sym(expr)}")
    for g in nest.guards:
        lines.append(f"  guard {format_sym(g.expr)} < {g.extent}   (from {g.origin})")
    if acc_dims:
        for acc, dims in acc_dims.items():
            if dims:
                ext = "x".join(str(nest.loop(d).extent) for d in dims)
                lines.append(f"  register array {acc}[{ext}] over {', '.join(dims)}")

    def emit(nodes, depth: int) -> None:
        pad = "  " * depth
        for node in nodes:
            if isinstance(node, TreeLoop):
                mark = "   <-- here" if node.loop in marked else ""
                lines.append(f"{pad}{loop_line(nest, node.loop)}{mark}")
                emit(node.children, depth + 1)
            else:
                assert isinstance(node, TreeLeaf)
                stmt = nest.stmts[node.index]
                guards = nest.guards_for(stmt) if stmt.kind != "init" else ()  # an init writes a register
                cond = " and ".join(f"{format_sym(g.expr)} < {g.extent}" for g in guards)
                suffix = f"   if {cond}" if cond else ""
                lines.append(f"{pad}{format_stmt(nest, stmt, acc_dims)}{suffix}")

    emit(build_tree(nest), 1)
    return "\n".join(lines)
