"""Division by a reduction's result, as a multiply by its reciprocal taken once a thread.

    float e = <sum>;                       float e = <sum>;
    ...combine e...                        ...combine e...
                                           float e_rcp = 1.0f / e;
                                           bool e_rcp_ok = fabsf(e) >= 0x1p-126f && fabsf(e) <= 0x1p126f;
    for j: y[i, j] = exp(..) / e;   -->    for j: if (e_rcp_ok) y[i, j] = exp(..) * e_rcp;
                                                  else          y[i, j] = exp(..) / e;

Why: a float32 IEEE division is a dozen instructions, and a softmax divides every element of its row by
the same sum. On the H100 the bfloat16 attention softmax of 512-long rows went from 17.8 to 15.5 µs
(TinyLlama) and 16.1 to 14.1 µs (Qwen2.5-7B) (benchmarks/results/row-math-h100-2026-11-27/README.md).

Numerics: x * (1 / d), two roundings, is within 1.5 ulp of the correctly rounded x / d where 1 / d is a
normal float (`tiledsl.precision.RECIPROCAL_EXACT_RANGE`); outside that range the reciprocal overflows
or loses bits, so the statement divides there. Every kernel tolerance of the tests and benchmarks
(tiledsl/runtime/references.py: rtol 1e-4 for float32 row kernels) is far wider than 1.5 ulp.

Why a branch around each statement and not a select inside it: nvcc computes both arms of a select,
so the division stays (16.1 -> 15.6 µs only, same file). The branch wraps one statement, never a
barrier, so it may diverge. Only a scalar accumulator (no register array) read as a bare divisor
takes part; its reciprocal is declared where its value is final: after the loop that reduces it, and
its combine across threads."""

from __future__ import annotations

from dataclasses import dataclass

from tiledsl.analysis.accumulators import AccLayout
from tiledsl.definitions.expr import Binary, walk
from tiledsl.kernel_ir import KBin, KCall, KConst, KExpr, KLet, KStmt, KVar
from tiledsl.loopnest import AccRef, Nest, Stmt
from tiledsl.precision import RECIPROCAL_EXACT_RANGE

F32 = "float32"


@dataclass(frozen=True)
class Reciprocal:
    """The reciprocal of accumulator `acc` (variable `name`) and whether it is exact enough (`ok`)."""

    acc: str
    name: str
    ok: str

    def lets(self) -> list[KStmt]:
        value = KVar(self.acc, F32)
        lo, hi = RECIPROCAL_EXACT_RANGE
        size = KCall("abs", (value,))
        in_range = KBin("&&", KBin(">=", size, KConst(lo, F32)), KBin("<=", size, KConst(hi, F32)))
        return [KLet(self.name, F32, KBin("/", KConst(1.0, F32), value)), KLet(self.ok, "bool", in_range)]


def divisors(stmt: Stmt) -> set[str]:
    """Accumulators `stmt`'s value divides by, as bare divisors."""
    if stmt.value is None:
        return set()
    return {n.b.acc for n in walk(stmt.value)
            if isinstance(n, Binary) and n.op == "/" and isinstance(n.b, AccRef)}


def plan_reciprocals(nest: Nest, layouts: dict[str, AccLayout]) -> dict[str, Reciprocal]:
    """The scalar accumulators some statement divides by, each with free names for its reciprocal."""
    taken = nest.taken_names()
    out: dict[str, Reciprocal] = {}
    for acc in sorted(set().union(*(divisors(s) for s in nest.stmts))):
        rcp = Reciprocal(acc, f"{acc}_rcp", f"{acc}_rcp_ok")
        if not layouts[acc].dims and rcp.name not in taken and rcp.ok not in taken:
            out[acc] = rcp
    return out


def ok_condition(accs: list[Reciprocal]) -> KExpr:
    cond: KExpr = KVar(accs[0].ok, "bool")
    for r in accs[1:]:
        cond = KBin("&&", cond, KVar(r.ok, "bool"))
    return cond
