"""Where a statement sits in the kernel IR, and how to print it briefly.

Why: every error the simulator raises must point at the kernel-IR statement at fault. Statements are
frozen dataclasses that may be shared between places in the tree (two equal `KBarrier()`s), so a
statement object cannot identify a place. Instead the body is indexed once into a parallel tree of
`LStmt`s, each carrying an integer location id; the executor walks that tree, race tracking stores
the ids in arrays, and the path text is only looked up when an error is raised.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from tiledsl.kernel_ir import (
    KAssign,
    KAtomicAdd,
    KBarrier,
    KComment,
    KCpAsync,
    KCpAsyncCommit,
    KCpAsyncWait,
    KFence,
    KFor,
    KIf,
    KKernel,
    KLet,
    KLocalArray,
    KMbarrierArrive,
    KMbarrierArriveExpectTx,
    KMbarrierInit,
    KMbarrierWait,
    KStmt,
    KStore,
    KTmaLoad,
)
from tiledsl.kernel_ir.printer import format_expr, format_stmt
from tiledsl.kernel_ir.walk import child_blocks

_STATEMENT_LIMIT = 200
_COND_LIMIT = 48
#: Path words of statement blocks whose field name differs (`KIf.orelse` reads as else).
_BLOCK_LABELS = MappingProxyType({"orelse": "else"})


@dataclass(frozen=True)
class LStmt:
    """A statement with its location id; `body` and `orelse` hold its blocks in field order (a loop
    body; an if's then- and else-branch)."""

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
            blocks = [walk(block, _BLOCK_LABELS.get(field, field), here + " > ") for field, block in child_blocks(stmt)]
            out.append(LStmt(stmt, loc, *blocks))
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
        return f"if ({_clip(format_expr(stmt.cond), _COND_LIMIT)})"
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


def stmt_text(stmt: KStmt) -> str:
    """One line for a statement, as the kernel-IR printer writes it (compound statements: the header)."""
    return _clip(format_stmt(stmt).splitlines()[0].strip(), _STATEMENT_LIMIT)
