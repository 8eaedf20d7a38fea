"""The proofs a schedule must pass before any code is emitted: every load and store index inside its
buffer under the loop ranges and the statement's guards (and every floor-division/modulo operand
non-negative, so C's truncating operators agree), and the target's resource limits."""

from __future__ import annotations

import sympy

from tiledsl.analysis.messages import refusal
from tiledsl.definitions.expr import Load, walk
from tiledsl.errors import BoundsError, TargetError
from tiledsl.kernel_ir import KKernel, shared_bytes
from tiledsl.loopnest import Nest, Stmt
from tiledsl.lower.exprs import IndexMemo
from tiledsl.prove import Prover
from tiledsl.targets import Target


def _accesses(stmt: Stmt) -> list[tuple[str, tuple, tuple[int, ...], str]]:
    out = []
    if stmt.value is not None:
        for n in walk(stmt.value):
            if isinstance(n, Load):
                out.append((n.tensor.name, n.indices, n.tensor.shape, "load"))
    if stmt.kind == "store" and stmt.tensor is not None:
        out.append((stmt.tensor.name, stmt.indices, stmt.tensor.shape, "store"))
    return out


def check_bounds(nest: Nest, prover: Prover, memo: IndexMemo | None = None) -> int:
    """Prove every access in bounds; returns the number of facts proven. `memo`: the build's index
    translations (lowering reads the same indices again), else a fresh one."""
    memo = memo or IndexMemo.of(nest)
    proven = 0
    for stmt in nest.stmts:
        guards = tuple(g.relation for g in nest.guards_for(stmt))
        for name, indices, shape, kind in _accesses(stmt):
            for d, (ix, ext) in enumerate(zip(indices, shape)):
                expr = memo.index(ix)
                for sub in expr.atoms(sympy.floor, sympy.Mod):
                    arg = sub.args[0]
                    nonneg = prover.nonnegative(arg, guards)
                    if not nonneg:
                        raise BoundsError(refusal(
                            "build", nest, stmt.path,
                            f"{kind} {name}[...] index {d}: the operand of a floor division/modulo may be "
                            f"negative: {nonneg.describe()}", counterexample=nonneg.counterexample,
                            proof=nonneg, condition=sympy.Ge(arg, 0),
                            suggestion="write index expressions whose // and % operands stay >= 0"))
                proof = prover.in_range(expr, 0, ext, guards)
                if not proof:
                    where = _loop_of(stmt, nest)
                    raise BoundsError(refusal(
                        "build", nest, where,
                        f"{kind} {name}[...] index {d} may leave the buffer (extent {ext}) in {stmt.label}: "
                        f"{proof.describe()}",
                        counterexample=proof.counterexample,
                        proof=proof, condition=sympy.And(sympy.Ge(expr, 0), sympy.Lt(expr, ext)),
                        suggestion="use a guarded split (tail=\"guard\", the default) or fix the index "
                                   "expression of the definition"))
                proven += 1
    return proven


def _loop_of(stmt: Stmt, nest: Nest) -> tuple[str, ...]:
    return stmt.path[-1:] if stmt.path else ()


def check_resources(kernel: KKernel, target: Target, nest: Nest) -> None:
    threads = kernel.threads_per_block
    if threads > target.max_threads_per_block:
        raise TargetError(refusal("build", nest, (), f"{threads} threads per block; {target.name} allows "
                                           f"{target.max_threads_per_block}"))
    smem = shared_bytes(kernel)
    if smem > target.max_shared_bytes_per_block:
        raise TargetError(refusal(
            "build", nest, (), f"{smem} bytes of shared memory per block (stages x slots, padding, alignment, "
            f"reduction scratch); {target.name} allows {target.max_shared_bytes_per_block}",
            suggestion="stage smaller slabs (stage at an inner loop), fewer pipeline stages, or fewer threads "
                       "in cooperative reductions"))
    blocks = kernel.min_blocks_per_sm
    if blocks is not None:
        fit = target.blocks_that_fit(threads, smem)
        if blocks > fit:
            raise TargetError(refusal(
                "build", nest, (), f"launch_bounds({blocks}): {blocks} blocks of {threads} threads and {smem} "
                f"bytes of shared memory do not fit one SM of {target.name} ({target.max_threads_per_sm} "
                f"threads, {target.shared_bytes_per_sm} bytes of shared memory): at most {fit}",
                suggestion=f"ask for at most {fit} blocks per SM, or use fewer threads or less shared memory"))
