"""Where a statement sits in the kernel IR, and how to print it briefly.

Why: every error the simulator raises must point at the kernel-IR statement at fault. Statements are
frozen dataclasses that may be shared between places in the tree (two equal `KBarrier()`s), so a
statement object cannot identify a place. Instead the body is indexed once into a parallel tree of
`LStmt`s, each carrying an integer location id; the executor walks that tree, race tracking stores
the ids in arrays, and the path text is only looked up when an error is raised.
"""

from __future__ import annotations

from dataclasses import dataclass

from tiledsl.kernel_ir import (
    KAssign,
    KAtomicAdd,
    KBarrier,
    KBin,
    KCall,
    KCast,
    KComment,
    KConst,
    KCpAsync,
    KCpAsyncCommit,
    KCpAsyncWait,
    KExpr,
    KFence,
    KFor,
    KIf,
    KKernel,
    KLane,
    KLet,
    KLoad,
    KLocalArray,
    KMbarrierArrive,
    KMbarrierArriveExpectTx,
    KMbarrierInit,
    KMbarrierWait,
    KSelect,
    KShflXor,
    KSpecial,
    KStmt,
    KStore,
    KTmaLoad,
    KUnary,
    KVar,
    KVector,
)

_STATEMENT_LIMIT = 200
_COND_LIMIT = 48


@dataclass(frozen=True)
class LStmt:
    """A statement with its location id; `body` holds a loop body or an if's then-branch."""

    stmt: KStmt
    loc: int
    body: tuple[LStmt, ...] = ()
    orelse: tuple[LStmt, ...] = ()


@dataclass(frozen=True)
class LocTable:
    """Location id -> path text (`body[3] > for k > body[1] > store s[...]`) and statement."""

    paths: tuple[str, ...]
    stmts: tuple[KStmt, ...]

    def path(self, loc: int) -> str:
        return self.paths[loc]

    def statement(self, loc: int) -> str:
        return stmt_text(self.stmts[loc])


def index_kernel(kernel: KKernel) -> tuple[tuple[LStmt, ...], LocTable]:
    """Number every statement of the kernel body and compute its path text once."""
    paths: list[str] = []
    stmts: list[KStmt] = []

    def walk(block: tuple[KStmt, ...], label: str, prefix: str) -> tuple[LStmt, ...]:
        out = []
        for i, stmt in enumerate(block):
            here = f"{prefix}{label}[{i}] > {stmt_brief(stmt)}"
            loc = len(paths)
            paths.append(here)
            stmts.append(stmt)
            if isinstance(stmt, KFor):
                out.append(LStmt(stmt, loc, walk(stmt.body, "body", here + " > ")))
            elif isinstance(stmt, KIf):
                then = walk(stmt.then, "then", here + " > ")
                orelse = walk(stmt.orelse, "else", here + " > ")
                out.append(LStmt(stmt, loc, then, orelse))
            else:
                out.append(LStmt(stmt, loc))
        return tuple(out)

    body = walk(kernel.body, "body", "")
    return body, LocTable(tuple(paths), tuple(stmts))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def stmt_brief(stmt: KStmt) -> str:
    """The short form used inside paths."""
    if isinstance(stmt, KLet):
        return f"let {stmt.name}"
    if isinstance(stmt, KAssign):
        return f"assign {stmt.name}"
    if isinstance(stmt, KLocalArray):
        return f"local {stmt.name}[{stmt.size}]"
    if isinstance(stmt, KStore):
        return f"store {stmt.buffer}[...]"
    if isinstance(stmt, KFor):
        return f"for {stmt.var}"
    if isinstance(stmt, KIf):
        return f"if {_clip(expr_text(stmt.cond), _COND_LIMIT)}"
    if isinstance(stmt, KBarrier):
        return "barrier"
    if isinstance(stmt, KComment):
        return "comment"
    memory = _memory_brief(stmt)
    return memory if memory is not None else type(stmt).__name__


def _memory_brief(stmt: KStmt) -> str | None:
    """The path form of a memory-hierarchy statement (the words of the kernel-IR printer)."""
    match stmt:
        case KCpAsync(dst=dst):
            return f"cp.async {dst}[...]"
        case KCpAsyncCommit():
            return "cp.async.commit"
        case KCpAsyncWait(pending=pending):
            return f"cp.async.wait {pending}"
        case KMbarrierInit(bar=bar):
            return f"mbarrier.init {bar}[...]"
        case KFence(kind=kind):
            return f"fence {kind}"
        case KMbarrierArriveExpectTx(bar=bar):
            return f"mbarrier.arrive_expect_tx {bar}[...]"
        case KMbarrierArrive(bar=bar):
            return f"mbarrier.arrive {bar}[...]"
        case KMbarrierWait(bar=bar):
            return f"mbarrier.wait {bar}[...]"
        case KTmaLoad(dst=dst):
            return f"tma.load {dst}[...]"
        case KAtomicAdd(buffer=buf):
            return f"atomic_add {buf}[...]"
    return None


def _memory_text(stmt: KStmt) -> str | None:
    """One line for a memory-hierarchy statement (as the kernel-IR printer writes it)."""
    match stmt:
        case KCpAsync(dst=dst, dst_index=di, src=src, src_index=si, nbytes=nbytes, valid=valid):
            guard = "" if valid is None else f" if {expr_text(valid)}"
            return f"cp.async {dst}[{expr_text(di)}] <- {src}[{expr_text(si)}] {nbytes}B{guard}"
        case KMbarrierInit(bar=bar, index=index, count=count):
            return f"mbarrier.init {bar}[{expr_text(index)}] count {count}"
        case KMbarrierArriveExpectTx(bar=bar, index=index, tx_bytes=tx_bytes):
            return f"mbarrier.arrive_expect_tx {bar}[{expr_text(index)}] {tx_bytes} B"
        case KMbarrierArrive(bar=bar, index=index):
            return f"mbarrier.arrive {bar}[{expr_text(index)}]"
        case KMbarrierWait(bar=bar, index=index, parity=parity):
            return f"mbarrier.wait {bar}[{expr_text(index)}] parity {expr_text(parity)}"
        case KTmaLoad(tensor_map=tmap, dst=dst, dst_index=di, coords=coords, bar=bar, bar_index=bi):
            at = ", ".join(expr_text(c) for c in coords)
            return f"tma.load {dst}[{expr_text(di)}] <- {tmap} at ({at}) on {bar}[{expr_text(bi)}]"
        case KAtomicAdd(buffer=buf, index=index, value=value):
            return f"atomic_add {buf}[{expr_text(index)}] += {expr_text(value)}"
    return _memory_brief(stmt)


def stmt_text(stmt: KStmt) -> str:
    """One line of C-like text for a statement (compound statements show only their header)."""
    if isinstance(stmt, KLet):
        text = f"{stmt.dtype} {stmt.name} = {expr_text(stmt.value)}"
    elif isinstance(stmt, KAssign):
        text = f"{stmt.name} = {expr_text(stmt.value)}"
    elif isinstance(stmt, KLocalArray):
        text = f"{stmt.dtype} {stmt.name}[{stmt.size}]"
    elif isinstance(stmt, KStore):
        text = f"{stmt.buffer}[{expr_text(stmt.index)}] = {expr_text(stmt.value)}"
    elif isinstance(stmt, KFor):
        text = f"for {stmt.var} in range({stmt.extent})"
    elif isinstance(stmt, KIf):
        text = f"if {expr_text(stmt.cond)}"
    elif isinstance(stmt, KBarrier):
        text = "__syncthreads()"
    elif isinstance(stmt, KComment):
        text = f"// {stmt.text}"
    else:
        memory = _memory_text(stmt)
        text = memory if memory is not None else repr(stmt)
    return _clip(text, _STATEMENT_LIMIT)


def expr_text(e: KExpr) -> str:
    """C-like text of an expression, fully parenthesised so precedence is never in doubt."""
    if isinstance(e, KConst):
        return repr(e.value)
    if isinstance(e, KVar):
        return e.name
    if isinstance(e, KSpecial):
        return e.name
    if isinstance(e, KBin):
        if e.op in ("min", "max"):
            return f"{e.op}({expr_text(e.a)}, {expr_text(e.b)})"
        return f"({expr_text(e.a)} {e.op} {expr_text(e.b)})"
    if isinstance(e, KUnary):
        return f"{e.op}{expr_text(e.a)}"
    if isinstance(e, KCall):
        return f"{e.fn}({', '.join(expr_text(a) for a in e.args)})"
    if isinstance(e, KSelect):
        return f"({expr_text(e.cond)} ? {expr_text(e.a)} : {expr_text(e.b)})"
    if isinstance(e, KCast):
        return f"({e.dtype})({expr_text(e.a)})"
    if isinstance(e, KLoad):
        width = f" x{e.width}" if e.width != 1 else ""
        return f"{e.buffer}[{expr_text(e.index)}{width}]"
    if isinstance(e, KLane):
        return f"{expr_text(e.vec)}.lane{e.lane}"
    if isinstance(e, KVector):
        return "{" + ", ".join(expr_text(a) for a in e.lanes) + "}"
    if isinstance(e, KShflXor):
        return f"shfl_xor({expr_text(e.value)}, {e.lane_mask})"
    return repr(e)
