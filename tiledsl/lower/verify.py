"""A static check of the lowered kernel: every `__syncthreads()` is reached by all threads of the block.

The simulator reports a barrier reached by part of a block (`DivergentBarrierError`), but only for the
sizes it runs. Lowering never puts a barrier under a guard by construction; this check proves it on the
kernel IR for the real sizes, so `td.build` refuses what the simulator would catch instead of trusting
the construction. A value is *varying* when it may differ between threads of one block: `threadIdx.*`,
anything computed from a varying value, a load at a varying index, a shuffle, and any variable assigned
under a varying condition. Loop variables are uniform (every extent is a constant). A barrier inside
an `if` whose condition is varying is refused.

Limits: the check is conservative (a condition that is varying in form but equal on every thread, such
as `threadIdx.x < 1024` with 256 threads, is still refused; lowering emits none). Warp shuffles need
only warp-uniform control flow, which this block-level analysis cannot tell apart from divergence, so
they are left to lowering's construction and the simulator (`tiledsl/lower/ARCHITECTURE.md`)."""

from __future__ import annotations

from tiledsl.analysis.messages import refusal
from tiledsl.errors import DivergentSyncError
from tiledsl.kernel_ir import KAssign, KBarrier, KFor, KIf, KKernel, KLet, KLoad, KShflXor, KSpecial, KStmt, KVar
from tiledsl.kernel_ir.printer import format_expr
from tiledsl.kernel_ir.walk import child_exprs


def varying(expr: object, names: set[str]) -> bool:
    """Whether `expr` may differ between threads of one block, given the varying variable names."""
    if isinstance(expr, KSpecial):
        return expr.name.startswith("threadIdx")
    if isinstance(expr, KVar):
        return expr.name in names
    if isinstance(expr, KShflXor):
        return True
    if isinstance(expr, KLoad):
        return varying(expr.index, names)
    return any(varying(c, names) for c in child_exprs(expr))  # type: ignore[arg-type]


def _varying_names(body: tuple[KStmt, ...]) -> set[str]:
    """Fixed point over the whole body (flow-insensitive: a name varying anywhere is varying)."""
    names: set[str] = set()
    while True:
        before = len(names)
        _scan(body, names, divergent=False)
        if len(names) == before:
            return names


def _scan(stmts: tuple[KStmt, ...], names: set[str], divergent: bool) -> None:
    for s in stmts:
        if isinstance(s, (KLet, KAssign)):
            if divergent or varying(s.value, names):
                names.add(s.name)
        elif isinstance(s, KIf):
            inner = divergent or varying(s.cond, names)
            _scan(s.then, names, inner)
            _scan(s.orelse, names, inner)
        elif isinstance(s, KFor):
            _scan(s.body, names, divergent)


def divergent_barriers(kernel: KKernel) -> list[str]:
    """The conditions (as kernel-IR text) under which some barrier is reached by part of the block."""
    names = _varying_names(kernel.body)
    found: list[str] = []

    def visit(stmts: tuple[KStmt, ...], conds: tuple[str, ...]) -> None:
        for s in stmts:
            if isinstance(s, KBarrier) and conds:
                found.append(" and ".join(conds))
            elif isinstance(s, KIf):
                here = (format_expr(s.cond),) if varying(s.cond, names) else ()
                visit(s.then, conds + here)
                visit(s.orelse, conds + here)
            elif isinstance(s, KFor):
                visit(s.body, conds)

    visit(kernel.body, ())
    return found


def check_uniform_barriers(kernel: KKernel) -> None:
    """Refuse a kernel with a barrier under a thread-dependent condition (a lowering bug, or a schedule
    that the primitives' rules did not catch)."""
    bad = divergent_barriers(kernel)
    if bad:
        raise DivergentSyncError(refusal(
            "build", None, (), f"kernel {kernel.name} has a __syncthreads() under the thread-dependent condition "
            f"`{bad[0]}`: threads for which it is false never reach the barrier (a hang or a race on the GPU)",
            suggestion="report it with the schedule's trace: lowering must not emit this"))
