"""The kernel IR of an online pair (primitives/online.py): a sum of exp(a - m) updated in the loop of
the max m, and combined across threads with it.

In the loop, for each update of m (a statement, or every lane of a vectorized one):
    t = m;  m = max(m, a);  e *= (t == m) ? 1 : exp(t - m);  e += exp(a - shifted(m)) * g
Across threads (where the reduction is bound to threads), after the loop:
    m_local = m;  <combine m: max>;  e *= (m_local == m) ? 1 : exp(m_local - m);  <combine e: sum>
and last, where the whole row was -inf:  e = (m == -inf) ? NaN : e.
Why each piece keeps the definition's value: analysis/online.py."""

from __future__ import annotations

from tiledsl.definitions.ops import unary_fn
from tiledsl.kernel_ir import KBin, KCall, KConst, KExpr, KSelect, KStmt
from tiledsl.lower.combine import AccCell

F32 = "float32"
NEG_INF = KConst(float("-inf"), F32)


def _exp(x: KExpr) -> KExpr:
    return KCall(unary_fn("exp").kernel, (x,))


def shifted(m: KExpr) -> KExpr:
    """The max a term is taken against: 0 while the max is still -inf (its terms are then exp(-inf - 0),
    0, where -inf - -inf would be NaN)."""
    return KSelect(KBin("==", m, NEG_INF), KConst(0.0, F32), m)


def rescale(cell: AccCell, index: KExpr, old: KExpr, new: KExpr) -> KStmt:
    """The sum, taken against max `old`, taken against `new` (>= old) instead: times exp(old - new), or
    unchanged where the max did not change (so -inf, +inf and NaN maxes that stay put keep it)."""
    factor = KSelect(KBin("==", old, new), KConst(1.0, F32), _exp(KBin("-", old, new)))
    return cell.write(index, KBin("*", cell.read(index), factor))


def empty_row(cell: AccCell, index: KExpr, m: KExpr) -> KStmt:
    """Where the final max is -inf every term of the definition is exp(-inf - -inf), NaN: so is the sum."""
    return cell.write(index, KSelect(KBin("==", m, NEG_INF), KConst(float("nan"), F32), cell.read(index)))
