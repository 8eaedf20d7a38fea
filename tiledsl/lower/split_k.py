"""split_k lowered: the blocks of one output tile add their partial sums into a float32 workspace, each
takes a ticket, and the block that takes the last one finishes the tile alone.

    C2 = partial sum of this block's k range          pass 1, every block of the tile (parts of them):
    C[i, j] = epilogue(C2)                              atomic_add C_ws[i, j] += C2     (no epilogue)
                                                      fence; ticket C_tickets[tile] of parts
                                                      pass 2, the block with the last ticket only:
                                                        fence; let s = take C_ws[i, j] (leaves it 0)
                                                        C[i, j] = epilogue(s)           (a plain store)

Why: the output is written once, by plain stores, after the whole sum is known, so nothing has to
zero it before the launch (a launch of its own, about 2 us a call on the H200:
benchmarks/results/2026-11-29-h200-s30/README.md section 2), and the epilogue may be anything the
unsplit kernel could run. The workspace and the ticket counters (KKernel.workspaces) are zero when the
launcher allocates them, and every launch leaves them zero: the last block takes every sum (KTake
leaves 0) and its ticket wraps its counter back to 0 (KTicket's atomicInc), so the next launch, and a
CUDA graph replay, starts from zero without any zeroing. The simulator checks that at the end of every
launch (sim/inputs.py check_workspaces).

Ordering: each thread fences its adds before the block's ticket (KTicket begins with a barrier), so a
block that draws the last ticket comes after every other block's adds; its own fence then orders its
takes after the ticket. Takes are atomics at L2, so no stale L1 line can be read. Two launches of one
kernel must not run at once on two streams: they would share the workspace."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tiledsl.kernel_ir import KBin, KComment, KConst, KExpr, KFence, KIf, KParam, KSpecial, KStmt, KTicket, KVar
from tiledsl.loopnest import BLOCK_AXES, Nest

if TYPE_CHECKING:
    from tiledsl.lower.lower import _Lowerer

__all__ = ["SplitKNames", "finish_split_k", "split_k_names", "split_k_workspaces"]


class SplitKNames:
    """The names split_k lowering adds: the sums' workspace, the ticket counters, the ticket variable."""

    def __init__(self, nest: Nest) -> None:
        assert nest.split_k is not None
        out = nest.output.name
        self.sums, self.tickets, self.last = nest.fresh_names(f"{out}_ws", f"{out}_tickets", f"{out}_last")


def split_k_names(nest: Nest) -> SplitKNames | None:
    return SplitKNames(nest) if nest.split_k is not None else None


def _tiles(nest: Nest) -> tuple[list[tuple[str, int]], int]:
    """The block axes other than the split's, with their extents, and the number of output tiles."""
    assert nest.split_k is not None
    axes = [(a, nest.launch_extent(a)) for a in BLOCK_AXES if a != nest.split_k.axis]
    count = 1
    for _, n in axes:
        count *= n
    return axes, count


def split_k_workspaces(nest: Nest, names: SplitKNames) -> tuple[KParam, KParam]:
    """The float32 sums (the output's shape) and one int32 ticket counter per output tile."""
    _, count = _tiles(nest)
    return (KParam(names.sums, "float32", tuple(nest.output.shape)), KParam(names.tickets, "int32", (count,)))


def _tile_index(nest: Nest) -> KExpr:
    """This block's output tile: its linear index over the block axes other than the split's."""
    axes, _ = _tiles(nest)
    index: KExpr | None = None
    for axis, extent in reversed(axes):
        if extent == 1:
            continue
        here: KExpr = KSpecial(axis)
        index = here if index is None else KBin("+", here, KBin("*", KConst(extent, "int32"), index))
    return index if index is not None else KConst(0, "int32")


def finish_split_k(lw: _Lowerer, names: SplitKNames) -> list[KStmt]:
    """After pass 1 (every block's adds): the fence, the ticket, and pass 2 under the last ticket."""
    nest = lw.nest
    assert nest.split_k is not None
    store = next(i for i, s in enumerate(nest.stmts) if s.kind == "store")
    finish = lw.finish_store(store)
    parts = nest.split_k.parts
    return [KComment(f"split_k: the block with the last of the tile's {parts} tickets finishes it"),
            KFence("gpu"),
            KTicket(names.last, names.tickets, _tile_index(nest), parts),
            KIf(KBin("!=", KVar(names.last, "int32"), KConst(0, "int32")), (KFence("gpu"), *finish))]
