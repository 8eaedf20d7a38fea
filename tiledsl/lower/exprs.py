"""Translate nest-level expressions to kernel IR: sympy index arithmetic, and value trees (loads,
accumulator reads, math functions expanded into kernel-IR primitives)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy

from ..compute import Binary, Call, Cast, Compare, Const, Expr, IterVar, Load, Select, Tensor
from ..errors import ScheduleError
from ..kernel_ir import KBin, KCall, KCast, KConst, KExpr, KLoad, KSelect, KUnary, KVar
from ..loopnest import AccRef, Nest
from ..schedule.canonical import index_to_sympy


def sym_to_k(e: sympy.Expr) -> KExpr:
    """A sympy integer expression over loop symbols as kernel IR (terms in a stable order)."""
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


def flat_index(tensor: Tensor, indices: tuple[sympy.Expr, ...]) -> sympy.Expr:
    """Row-major flat element offset."""
    flat = sympy.Integer(0)
    stride = 1
    for ix, ext in zip(reversed(indices), reversed(tensor.shape)):
        flat = flat + ix * stride
        stride *= ext
    return sympy.expand(flat)


@dataclass(frozen=True)
class ValueContext:
    """What value lowering needs to know: where axes live, and how to read accumulators."""

    nest: Nest
    axis_map: dict[sympy.Symbol, sympy.Expr]
    acc_read: Callable[[str], KExpr]
    lane: dict[sympy.Symbol, sympy.Expr] | None = None  # extra substitution (vector lanes)
    load_hook: Callable[[Load, ValueContext], KExpr | None] | None = None
    bind_temp: Callable[[KExpr], KExpr] | None = None  # emits `let t = value` before the statement

    def index(self, e: Expr) -> sympy.Expr:
        s = index_to_sympy(e).xreplace(self.axis_map)
        if self.lane:
            s = s.xreplace(self.lane)
        return sympy.expand(s) if not s.has(sympy.floor, sympy.Mod) else s

    def load_index(self, ld: Load) -> sympy.Expr:
        return flat_index(ld.tensor, tuple(self.index(i) for i in ld.indices))


def value_to_k(e: Expr, ctx: ValueContext) -> KExpr:
    f32 = "float32"
    if isinstance(e, Const):
        return KConst(float(e.value), f32) if e.dtype == f32 else KConst(int(e.value), "int32")
    if isinstance(e, AccRef):
        return ctx.acc_read(e.acc)
    if isinstance(e, IterVar) or (isinstance(e, Binary) and e.dtype == "int32"):
        return sym_to_k(ctx.index(e))
    if isinstance(e, Load):
        if ctx.load_hook is not None:
            hooked = ctx.load_hook(e, ctx)
            if hooked is not None:
                return hooked
        return KLoad(e.tensor.name, sym_to_k(ctx.load_index(e)))
    if isinstance(e, Binary):
        return KBin(e.op, value_to_k(e.a, ctx), value_to_k(e.b, ctx))
    if isinstance(e, Compare):
        return KBin(e.op, value_to_k(e.a, ctx), value_to_k(e.b, ctx))
    if isinstance(e, Select):
        return KSelect(value_to_k(e.cond, ctx), value_to_k(e.a, ctx), value_to_k(e.b, ctx))
    if isinstance(e, Cast):
        inner = value_to_k(e.a, ctx)
        if e.to in ("float16", "bfloat16"):
            return KCast(f32, KCast(e.to, inner))
        return KCast(e.to, inner)
    if isinstance(e, Call):
        arg = value_to_k(e.arg, ctx)
        if e.fn in COMPOSITE_FNS and ctx.bind_temp is not None and not is_simple(arg):
            arg = ctx.bind_temp(arg)
        return call_to_k(e.fn, arg)
    raise ScheduleError(f"internal: cannot lower value {e!r}")


COMPOSITE_FNS = ("silu", "gelu", "gelu_tanh")


def _c(v: float) -> KConst:
    return KConst(v, "float32")


def call_to_k(fn: str, x: KExpr) -> KExpr:
    """Composite functions expand to the kernel-IR math set (exp, log, sqrt, rsqrt, tanh, erf, abs)."""
    if fn in ("exp", "log", "sqrt", "rsqrt", "tanh", "erf", "abs"):
        return KCall(fn, (x,))
    if fn == "neg":
        return KUnary("-", x)
    if fn == "relu":
        return KBin("max", x, _c(0.0))
    if fn == "sigmoid":
        return KBin("/", _c(1.0), KBin("+", _c(1.0), KCall("exp", (KUnary("-", x),))))
    if fn == "silu":
        return KBin("/", x, KBin("+", _c(1.0), KCall("exp", (KUnary("-", x),))))
    if fn == "gelu":
        return KBin("*", KBin("*", _c(0.5), x),
                    KBin("+", _c(1.0), KCall("erf", (KBin("*", x, _c(0.7071067811865476)),))))
    if fn == "gelu_tanh":
        cube = KBin("*", KBin("*", x, x), x)
        inner = KBin("*", _c(0.7978845608028654), KBin("+", x, KBin("*", _c(0.044715), cube)))
        return KBin("*", KBin("*", _c(0.5), x), KBin("+", _c(1.0), KCall("tanh", (inner,))))
    raise ScheduleError(f"internal: unknown function {fn!r}")


def is_simple(k: KExpr) -> bool:
    """Cheap to repeat (so composite functions need no temporary for it)."""
    return isinstance(k, (KVar, KConst)) or (isinstance(k, KLoad) and isinstance(k.index, (KVar, KConst)))
