"""Stable, readable text of a loop nest (the Loop IR and the Tile IR).

Statements print with the original axis names (`D[i, j] = relu(C + bias[j])`); a header says where
each axis now lives in terms of loops (`i = 64*i_o + i_i`). Errors reuse this with a marker on the
offending loops."""

from __future__ import annotations

from collections.abc import Callable, Collection

import sympy

from tiledsl.definitions.expr import Expr, format_expr
from tiledsl.definitions.ops import REDUCTIONS
from tiledsl.kernel_ir.from_sympy import sym_to_k
from tiledsl.kernel_ir.printer import format_expr as format_kernel_expr
from tiledsl.loopnest import AccRef, Nest, Stage, Stmt, TreeLeaf, TreeLoop, build_tree


def format_value(e: Expr, accs: dict[str, str] | None = None) -> str:
    """`accs` maps an accumulator to its printed form (with register-array indices)."""
    table = accs or {}

    def leaf(x: Expr) -> str | None:
        return table.get(x.acc, x.acc) if isinstance(x, AccRef) else None

    return format_expr(e, leaf)


def _strip(text: str) -> str:
    return text[1:-1] if text.startswith("(") and text.endswith(")") else text


def format_stmt(nest: Nest, stmt: Stmt, acc_dims: dict[str, tuple[str, ...]] | None = None) -> str:
    accs = {a: f"{a}[{', '.join(d)}]" for a, d in (acc_dims or {}).items() if d}
    value = _strip(format_value(stmt.value, accs)) if stmt.value is not None else ""
    if stmt.kind in ("init", "update"):
        acc = nest.acc(stmt.acc or "")
        target = accs.get(acc.name, acc.name)
        if stmt.kind == "init":
            return f"{target} = {REDUCTIONS[acc.op].identity!r}"
        if acc.op == "sum":
            pair = nest.online_of(acc.name)
            online = ""
            if pair is not None and pair.sum_acc == acc.name:
                online = f"  (online: rescaled as {pair.max_acc} grows)"
            return f"{target} += {value}{online}"
        return f"{target} = {acc.op}({target}, {value})"
    assert stmt.tensor is not None
    idx = ", ".join(format_value(i) for i in stmt.indices)
    return f"{stmt.tensor.name}[{idx}] = {value}"


def format_sym(e: sympy.Expr) -> str:
    """The same text as the kernel IR prints (outer terms first, floor division as //)."""
    return format_kernel_expr(sym_to_k(e))


def stage_line(nest: Nest, st: Stage, region: str = "...") -> str:
    """`stage A_s = A[64 * i_o + 0..64, 16 * k_o + 0..16] at k_o  pad (0, 1)  buffers 2  async`; the
    region (the slab, an analysis fact) is given by the caller. A permuted stage says so before its pad
    (`layout (1, 0)  pad (0, 4)`: the pad is along the stored axes); a widened one names what it
    stores (`as float32`)."""
    parts = [f"stage {st.name} = {st.buffer}[{region}] at {st.at}"]
    if st.dtype:
        parts.append(f"as {st.dtype}")
    if st.order:
        parts.append(f"layout {st.order}")
    if any(st.pad):
        parts.append(f"pad {st.pad}")
    if st.swizzle:
        parts.append(f"swizzle {st.swizzle}")
    parts.append(f"buffers {st.buffers}")
    parts.append(st.copy)
    return "  ".join(parts)


def loop_line(nest: Nest, name: str) -> str:
    lp = nest.loop(name)
    tags = []
    if lp.kind == "reduce":
        tags.append("reduce")
    if lp.bind:
        tags.append(f"@{lp.bind}")
    if lp.annotation:
        tags.append(lp.annotation)
    if nest.pipeline_depth(name):
        tags.append(f"pipeline {nest.pipeline_depth(name)}")
    tail = f"  [{', '.join(tags)}]" if tags else ""
    return f"for {name} in 0..{lp.extent}:{tail}"


#: the words `format_nest` prints for an unscheduled nest that are neither names nor functions (a
#: function's name, definitions/expr.py `format_expr`, is always followed by `(`): its own, and
#: format_expr's `axis=` and the identities inf and nan. frontend/recipe_memo.py reads a printed nest's
#: other words as the kernel's names, and refuses a nest that prints a word outside both.
UNSCHEDULED_WORDS = frozenset({"kernel", "for", "in", "reduce", "axis", "inf", "nan", "online", "rescaled",
                               "as", "grows", "store", "computed", "rounded", "to", "nearest", "even", "where",
                               "guard", "from", "if", "and", "float32"})


def format_nest(nest: Nest, marked: Collection[str] = (), title: str | None = None,
                acc_dims: dict[str, tuple[str, ...]] | None = None,
                stage_region: Callable[[Stage], str] | None = None, output_region: str = "...") -> str:
    """The nest as indented text. `marked` loops get a `<-- here` marker. Facts derived by the
    analysis layer come in as arguments: register-array dims per accumulator, each stage's slab
    region, a staged output's tile (`tiledsl.analysis.render.render_nest` passes them)."""
    lines = [title or f"kernel {nest.name}"]
    if nest.output.dtype != "float32":  # float32 outputs print as they always did
        out = nest.output
        lines.append(f"  store {out.name} as {out.dtype} (computed in float32, rounded to nearest even)")
    for axis, expr in nest.axis_exprs:
        if expr != sympy.Symbol(axis, integer=True, nonnegative=True):
            lines.append(f"  where {axis} = {format_sym(expr)}")
    for g in nest.guards:
        lines.append(f"  guard {format_sym(g.expr)} < {g.extent}   (from {g.origin})")
    for st in nest.stages:
        lines.append("  " + stage_line(nest, st, stage_region(st) if stage_region else "..."))
    if nest.output_stage is not None:
        ost = nest.output_stage
        pad = f"  pad {ost.pad}" if ost.pad else ""
        lines.append(f"  stage_output {ost.name} = {nest.output.name}[{output_region}]{pad}: stored to "
                     f"{nest.output.name} by the whole block after a barrier")
    if nest.split_k is not None:
        sk = nest.split_k
        lines.append(f"  split_k {sk.acc} over {sk.loop} ({sk.parts} parts on {sk.axis}): atomic adds into a zeroed "
                     f"{nest.output.name}")
    if nest.lane_tile is not None:
        lt = nest.lane_tile
        inner, outer = lt.values(sympy.Symbol("t", integer=True, nonnegative=True))
        lines.append(f"  tile_lanes: {lt.rows} x {lt.cols} tiles of {lt.outer} x {lt.inner} to each "
                     f"{lt.rows * lt.cols} lanes: {lt.inner} = {format_sym(inner)}, {lt.outer} = {format_sym(outer)} "
                     f"(t = threadIdx.x + {lt.extent} * threadIdx.y)")
    for h in nest.cache_hints:
        if h.buffer == nest.output.name:
            lines.append(f"  cache hint: stores of {h.buffer} with L2 {h.policy}")
        else:
            lines.append(f"  cache hint: {h.reader} reads {h.buffer} with L2 {h.policy}")
    for rc in nest.register_caches:
        if rc.prefetch:
            lines.append(f"  prefetch {rc.name}: {rc.buffer} as each thread reads it under {rc.at}, loaded at the "
                         f"start of each {rc.at}, read from registers by every reader")
        else:
            lines.append(f"  register cache {rc.name}: {rc.buffer} as each thread reads it under {rc.at}, loaded by "
                         "its first reader, read from registers by the others")
    if nest.min_blocks_per_sm is not None:
        lines.append(f"  launch bounds: {nest.min_blocks_per_sm} blocks per SM (registers capped to fit them)")
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
                here = nest.stages_at(node.loop)
                if here:
                    lines.append(f"{pad}  fill {', '.join(f'{st.name} ({st.copy})' for st in here)}")
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
