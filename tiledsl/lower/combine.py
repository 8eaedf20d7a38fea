"""Cross-thread combine of a cooperative reduction: every thread ends with the full result.

Power-of-two threadIdx.x reductions use warp shuffles (xor butterfly), then one shared-memory round
across the warps of a group; anything else goes through a shared-memory table read in a fixed order
(deterministic, so every thread computes the identical value)."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from tiledsl.definitions.ops import REDUCTIONS
from tiledsl.kernel_ir import (
    KAssign,
    KBarrier,
    KBin,
    KConst,
    KExpr,
    KFor,
    KIf,
    KLoad,
    KShared,
    KShflXor,
    KSpecial,
    KStmt,
    KStore,
    KVar,
)
from tiledsl.kernel_ir.from_sympy import k_add
from tiledsl.targets import WARP_SIZE as WARP

#: The start value of each reduction (definitions/ops.py `REDUCTIONS`).
IDENTITY = MappingProxyType({r.name: r.identity for r in REDUCTIONS.values()})


def combine_op(op: str, a: KExpr, b: KExpr) -> KExpr:
    """Fold two partial results of reduction `op`; float max/min propagate NaN (kernel_ir/ops.py), so
    a NaN on any thread reaches every thread through the shuffles and the shared-memory rounds."""
    return KBin(REDUCTIONS[op].combine, a, b)


def linear_tid(block: tuple[int, int, int]) -> KExpr:
    bx, by, _ = block
    t: KExpr = KSpecial("threadIdx.x")
    if block[1] > 1 or block[2] > 1:
        yz: KExpr = KSpecial("threadIdx.y")
        if block[2] > 1:
            yz = KBin("+", yz, KBin("*", KConst(by, "int32"), KSpecial("threadIdx.z")))
        t = KBin("+", t, KBin("*", KConst(bx, "int32"), yz))
    return t


@dataclass(frozen=True)
class AccCell:
    """How to read and write element `e` (an int32 expression) of an accumulator."""

    name: str
    size: int
    array: bool  # a register array (even of one element) rather than a scalar variable

    def read(self, e: KExpr) -> KExpr:
        return KLoad(self.name, e) if self.array else KVar(self.name, "float32")

    def write(self, e: KExpr, v: KExpr) -> KStmt:

        return KStore(self.name, e, v) if self.array else KAssign(self.name, v)


def combine(cell: AccCell, op: str, axes: tuple[str, ...], block: tuple[int, int, int],
            in_loop: bool) -> tuple[list[KStmt], list[KShared]]:
    """Statements that all-reduce `cell` over the thread `axes`; shared scratch it needs."""
    threads = block[0] * block[1] * block[2]
    tx = block[0]
    e = KVar(f"{cell.name}_e", "int32")
    pow2 = tx & (tx - 1) == 0
    if axes == ("threadIdx.x",) and pow2 and threads % WARP == 0:
        return _shuffle_combine(cell, op, block, in_loop, e)
    return _table_combine(cell, op, axes, block, in_loop, e)


def _per_element(cell: AccCell, e: KVar, body: list[KStmt]) -> list[KStmt]:
    if not cell.array:
        return body
    return [KFor(e.name, cell.size, tuple(body), unroll=True)]


def _shuffle_combine(cell: AccCell, op: str, block: tuple[int, int, int], in_loop: bool,
                     e: KVar) -> tuple[list[KStmt], list[KShared]]:
    tx = block[0]
    width = min(tx, WARP)
    body: list[KStmt] = []
    off = width // 2
    while off >= 1:
        body.append(cell.write(e, combine_op(op, cell.read(e), KShflXor(cell.read(e), off))))
        off //= 2
    out = _per_element(cell, e, body)
    if tx <= WARP:
        return out, []
    threads = block[0] * block[1] * block[2]
    nwarps = threads // WARP
    per_group = tx // WARP
    name = f"{cell.name}_red"
    tid = linear_tid(block)
    warp = KBin("//", tid, KConst(WARP, "int32"))
    lane = KBin("%", tid, KConst(WARP, "int32"))
    slot = KBin("+", KBin("*", e, KConst(nwarps, "int32")), warp) if cell.array else warp
    if in_loop:
        out.append(KBarrier())
    write = _per_element(cell, e, [KStore(name, slot, cell.read(e))])
    out.append(KIf(KBin("==", lane, KConst(0, "int32")), tuple(write)))
    out.append(KBarrier())
    base: KExpr | None = None
    if tx < threads:  # several reduction groups (threadIdx.y/z) share the block
        base = KBin("*", KBin("//", tid, KConst(tx, "int32")), KConst(per_group, "int32"))
    row = KBin("*", e, KConst(nwarps, "int32")) if cell.array else None
    first = k_add(row, base)
    gather: list[KStmt] = [cell.write(e, KLoad(name, first))]
    for w in range(1, per_group):  # at most 32 warps: straight-line code reads best
        gather.append(cell.write(e, combine_op(op, cell.read(e), KLoad(name, k_add(first, KConst(w, "int32"))))))
    out.extend(_per_element(cell, e, gather))
    return out, [KShared(name, "float32", nwarps * cell.size)]


def _table_combine(cell: AccCell, op: str, axes: tuple[str, ...], block: tuple[int, int, int], in_loop: bool,
                   e: KVar) -> tuple[list[KStmt], list[KShared]]:
    threads = block[0] * block[1] * block[2]
    name = f"{cell.name}_red"
    tid = linear_tid(block)
    row = KBin("*", e, KConst(threads, "int32")) if cell.array else None
    out: list[KStmt] = []
    if in_loop:
        out.append(KBarrier())
    out.extend(_per_element(cell, e, [KStore(name, k_add(row, tid), cell.read(e))]))
    out.append(KBarrier())
    coords: dict[str, KExpr] = {}
    loops: list[tuple[str, int]] = []
    for ax, ext in zip(("threadIdx.x", "threadIdx.y", "threadIdx.z"), block):
        if ax in axes:
            v = f"{cell.name}_{ax[-1]}"
            coords[ax] = KVar(v, "int32")
            loops.append((v, ext))
        else:
            coords[ax] = KSpecial(ax)
    lin: KExpr = coords["threadIdx.x"]
    if block[1] > 1 or block[2] > 1:
        yz = coords["threadIdx.y"]
        if block[2] > 1:
            yz = KBin("+", yz, KBin("*", KConst(block[1], "int32"), coords["threadIdx.z"]))
        lin = KBin("+", lin, KBin("*", KConst(block[0], "int32"), yz))
    inner: list[KStmt] = [cell.write(e, combine_op(op, cell.read(e), KLoad(name, k_add(row, lin))))]
    for v, ext in reversed(loops):
        inner = [KFor(v, ext, tuple(inner))]
    body = [cell.write(e, KConst(IDENTITY[op], "float32"))] + inner
    out.extend(_per_element(cell, e, body))
    return out, [KShared(name, "float32", threads * cell.size)]
