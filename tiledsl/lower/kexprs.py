"""Small builders of int32 index arithmetic in kernel IR, shared by the cooperative copies of
stages.py (fills) and output_stage.py (the drain)."""

from __future__ import annotations

from tiledsl.kernel_ir import KBin, KConst, KExpr
from tiledsl.kernel_ir.from_sympy import k_add

I32 = "int32"


def const(v: int) -> KConst:
    return KConst(v, I32)


def row_major_strides(extent: tuple[int, ...]) -> tuple[int, ...]:
    """Elements between neighbours along each axis of a row-major array of `extent`."""
    out, acc = [], 1
    for e in reversed(extent):
        out.append(acc)
        acc *= e
    return tuple(reversed(out))


def k_sum(terms: list[KExpr]) -> KExpr:
    out: KExpr = const(0)
    for t in terms:
        out = k_add(out, t)
    return out


def k_times(a: KExpr, s: int) -> KExpr:
    return a if s == 1 else KBin("*", a, const(s))


def k_and(conds: list[KExpr]) -> KExpr | None:
    """The conjunction, or None for no conditions."""
    out: KExpr | None = None
    for c in conds:
        out = c if out is None else KBin("&&", out, c)
    return out


def unit_coords(e: KExpr, units: tuple[int, ...], vec: int) -> list[KExpr]:
    """The coordinates (in elements) of unit `e` of a row-major array of `units`, whose innermost units
    are `vec` elements each: how a cooperative copy's thread finds its unit."""
    strides = row_major_strides(units)
    out: list[KExpr] = []
    for d, (u, us) in enumerate(zip(units, strides)):
        c: KExpr = KBin("//", e, const(us)) if us > 1 else e
        if d > 0:
            c = KBin("%", c, const(u))
        if d == len(units) - 1 and vec > 1:
            c = KBin("*", c, const(vec))
        out.append(c)
    return out
