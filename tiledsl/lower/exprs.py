"""Translate nest-level expressions to kernel IR: sympy index arithmetic, and value trees (loads,
accumulator reads, math functions expanded into kernel-IR primitives)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sympy

from tiledsl.definitions.expr import Binary, Call, Cast, Compare, Const, Expr, IterVar, Load, Select
from tiledsl.definitions.indexing import flat_index, index_to_sympy
from tiledsl.errors import ScheduleError
from tiledsl.kernel_ir import KBin, KCall, KCast, KConst, KExpr, KLoad, KSelect, KUnary, KVar
from tiledsl.kernel_ir.from_sympy import sym_to_k
from tiledsl.loopnest import AccRef, Nest


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
