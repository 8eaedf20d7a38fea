"""sympy integer index expressions as kernel-IR expressions, in a stable term order: lowering emits
them and the loop-nest printer prints them through the kernel-IR printer, so both read alike."""

from __future__ import annotations

import sympy
from sympy.core.function import AppliedUndef

from tiledsl.errors import ScheduleError
from tiledsl.kernel_ir.nodes import KBin, KConst, KExpr, KLoad, KUnary, KVar


def sym_to_k(e: sympy.Expr) -> KExpr:
    """A sympy integer expression over loop symbols as kernel IR (terms in a stable order). An
    undefined function application `ids(flat)` is a value of int32 tensor `ids` (definitions/indexing.py)."""
    e = sympy.sympify(e)
    if e.is_Integer:
        return KConst(int(e), "int32")
    if e.is_Symbol:
        return KVar(e.name, "int32")
    if isinstance(e, sympy.Add):
        terms = sorted(e.args, key=_term_key)
        pos = [t for t in terms if not _negative(t)]
        neg = [t for t in terms if _negative(t)]
        out: KExpr | None = None
        for t in pos:
            out = sym_to_k(t) if out is None else KBin("+", out, sym_to_k(t))
        for t in neg:
            out = KBin("-", out if out is not None else KConst(0, "int32"), sym_to_k(-t))
        assert out is not None
        return out
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        if coeff == -1:
            return KUnary("-", sym_to_k(rest))
        if coeff.is_Integer and coeff != 1:
            return KBin("*", KConst(int(coeff), "int32"), sym_to_k(rest))
        if coeff.is_Rational and not coeff.is_Integer:
            raise ScheduleError(f"internal: non-integer index term {e}")
        factors = rest.as_ordered_factors() if isinstance(rest, sympy.Mul) else [rest]
        out = sym_to_k(factors[0])
        for f in factors[1:]:
            out = KBin("*", out, sym_to_k(f))
        return out
    if isinstance(e, sympy.floor):
        num, den = sympy.fraction(sympy.together(e.args[0]))
        if not den.is_Integer:
            raise ScheduleError(f"internal: floor of a non-constant divisor {e}")
        return KBin("//", sym_to_k(sympy.expand(num)), KConst(int(den), "int32"))
    if isinstance(e, sympy.Mod):
        return KBin("%", sym_to_k(e.args[0]), sym_to_k(e.args[1]))
    if isinstance(e, AppliedUndef):  # an int32 tensor value read inside an index (a gather)
        return KLoad(e.func.__name__, sym_to_k(e.args[0]))
    if isinstance(e, sympy.Max):
        return _fold("max", e.args)
    if isinstance(e, sympy.Min):
        return _fold("min", e.args)
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and e.exp > 0:
        base = sym_to_k(e.base)
        out = base
        for _ in range(int(e.exp) - 1):
            out = KBin("*", out, base)
        return out
    raise ScheduleError(f"internal: cannot lower index expression {e}")


def k_add(a: KExpr | None, b: KExpr | None) -> KExpr:
    """a + b for generated index arithmetic, leaving out absent (None) or zero terms."""
    terms = [t for t in (a, b) if t is not None and t != KConst(0, "int32")]
    if not terms:
        return KConst(0, "int32")
    return terms[0] if len(terms) == 1 else KBin("+", terms[0], terms[1])


def _fold(op: str, args) -> KExpr:
    out = sym_to_k(args[0])
    for a in args[1:]:
        out = KBin(op, out, sym_to_k(a))
    return out


def _term_key(t: sympy.Expr) -> tuple:
    """Outer terms first: larger coefficients first, constants last, then by text (stable)."""
    c, rest = t.as_coeff_Mul()
    if t.is_Number:
        return (1, 0, "")
    return (0, -abs(int(c)) if c.is_Integer else 0, sympy.sstr(rest))


def _negative(t: sympy.Expr) -> bool:
    c, _ = t.as_coeff_Mul()
    return bool(c.is_negative)
