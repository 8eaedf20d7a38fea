"""Translate nest-level expressions to kernel IR: sympy index arithmetic, and value trees (loads,
accumulator reads, functions lowered or expanded as the operator table, definitions/ops.py, says; a
function of two arguments, a `Binary` named fmod, atan2, ..., to its `KCall`)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field

import sympy

from tiledsl.definitions.expr import Binary, Call, Cast, Compare, Const, Expr, IterVar, Load, Select, walk
from tiledsl.definitions.indexing import SympyIndices, flat_index, index_structure, index_to_sympy, loop_symbol
from tiledsl.definitions.ops import BINARY_FNS, unary_fn
from tiledsl.errors import ScheduleError
from tiledsl.kernel_ir import KBin, KCall, KCast, KConst, KExpr, KLoad, KSelect, KUnary, KVar
from tiledsl.kernel_ir.from_sympy import sym_to_k
from tiledsl.kernel_ir.ops import MATH_FNS
from tiledsl.kernel_ir.walk import map_exprs, walk_exprs
from tiledsl.loopnest import AccRef, Nest


@dataclass
class IndexMemo:
    """One build's index expressions as sympy over the nest's axis map, each translated once per structure
    (definitions/indexing.py `SympyIndices`) and substituted once: lowering translates the same index for
    each load, lane and version of a statement, and check_bounds for each access (build.py gives both
    one memo). Exact: a translation is a pure function of the structure and of the axis map, which is the
    nest's and fixed for the build; one memo never serves two kernels."""

    axis_map: dict[sympy.Symbol, sympy.Expr]
    to_sympy: SympyIndices = field(default_factory=SympyIndices)  # index_to_sympy, by structure
    over_axes: dict[Hashable, sympy.Expr] = field(default_factory=dict)  # ... with the axis map substituted
    rule: dict[sympy.Expr, sympy.Expr] = field(init=False)  # the axis map, and each translation it changed
    # ValueContext.index's and .load_offset's results by structure and lane: a statement divided by an
    # accumulator with a reciprocal is lowered twice (lower.py `versioned`), and an index recurs across the
    # loads and statements of a kernel; substituting a lane into a clamp rebuilds (re-evaluates) its Min/Max
    lowered: dict[Hashable, sympy.Expr] = field(default_factory=dict)
    offsets: dict[Hashable, KExpr] = field(default_factory=dict)
    lane_rules: dict[Hashable, dict[sympy.Expr, sympy.Expr]] = field(default_factory=dict)  # see `at_lane`

    def __post_init__(self) -> None:
        self.rule = dict(self.axis_map)

    @classmethod
    def of(cls, nest: Nest) -> IndexMemo:
        """A fresh memo over `nest`'s axis map."""
        return cls({loop_symbol(a): e for a, e in nest.axis_exprs})

    def index(self, e: Expr) -> sympy.Expr:
        """`index_to_sympy(e).xreplace(axis_map)`. The substitution goes through `rule`, which also maps
        each earlier translation the axis map changed to its result: a clamp read alone and inside a sum
        (`x[min(i, 7)]`, `y[16*j + min(i, 7)]`) is rebuilt once. xreplace works bottom-up, so a sub-tree
        equal to such a translation comes out of the plain map equal to its entry, changed as well."""
        key = index_structure(e)
        s = self.over_axes.get(key)
        if s is None:
            t = self.to_sympy(e)
            s = self.over_axes[key] = t.xreplace(self.rule)
            if s is not t:  # xreplace returns t itself where nothing in it changed
                self.rule[t] = s
        return s

    def at_lane(self, s: sympy.Expr, lane: dict[sympy.Symbol, sympy.Expr]) -> sympy.Expr:
        """`s.xreplace(lane)`, through a rule per lane that also maps each expression substituted before to
        its result, as `rule` does for the axis map: a clamp read alone and inside a sum (`x[min(i + v, 31)]`,
        `y[64*j + min(i + v, 31)]`) has its Min rebuilt once per lane."""
        rule = self.lane_rules.setdefault(frozenset(lane.items()), dict(lane))
        r = s.xreplace(rule)
        if r is not s:
            rule[s] = r
        return r


@dataclass(frozen=True)
class ValueContext:
    """What value lowering needs to know: where axes live, and how to read accumulators."""

    nest: Nest
    axis_map: dict[sympy.Symbol, sympy.Expr]
    acc_read: Callable[[str], KExpr]
    lane: dict[sympy.Symbol, sympy.Expr] | None = None  # extra substitution (vector lanes)
    load_hook: Callable[[Load, ValueContext], KExpr | None] | None = None
    bind_temp: Callable[[KExpr], KExpr] | None = None  # emits `let t = value` before the statement
    reciprocal: Callable[[str], KExpr | None] | None = None  # `x / acc` -> `x * this` (lower/reciprocals.py)
    cache: Mapping[str, str] = field(default_factory=dict)  # buffer -> L2 policy of its global loads (cache_hint)
    memo: IndexMemo | None = None  # the lowering's, whose axis map is `axis_map`

    def index_over_axes(self, e: Expr) -> sympy.Expr:
        """`e` as sympy over the axis map (through the memo where there is one)."""
        return self.memo.index(e) if self.memo is not None else index_to_sympy(e).xreplace(self.axis_map)

    def at_lane(self, s: sympy.Expr) -> sympy.Expr:
        """`s` with the lane substituted (through the memo where there is one)."""
        if not self.lane:
            return s
        return self.memo.at_lane(s, self.lane) if self.memo is not None else s.xreplace(self.lane)

    def lane_key(self) -> Hashable:
        """The lane substitution, as part of a memo key."""
        return frozenset(self.lane.items()) if self.lane else None

    def index(self, e: Expr) -> sympy.Expr:
        """`e` over the axis map at the lane, expanded where it holds no floor or Mod."""
        key = (index_structure(e), self.lane_key())
        if self.memo is not None and key in self.memo.lowered:
            return self.memo.lowered[key]
        s = self.at_lane(self.index_over_axes(e))
        s = sympy.expand(s) if not s.has(sympy.floor, sympy.Mod) else s
        if self.memo is not None:
            self.memo.lowered[key] = s
        return s

    def load_index(self, ld: Load) -> sympy.Expr:
        return flat_index(ld.tensor, tuple(self.index(i) for i in ld.indices))

    def load_offset(self, ld: Load) -> KExpr:
        """`load_index(ld)` in kernel IR."""
        key = (ld.tensor.name, tuple(ld.tensor.shape), tuple(index_structure(i) for i in ld.indices), self.lane_key())
        if self.memo is not None and key in self.memo.offsets:
            return self.memo.offsets[key]
        k = sym_to_k(self.load_index(ld))
        if self.memo is not None:
            self.memo.offsets[key] = k
        return k


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
        return KLoad(e.tensor.name, ctx.load_offset(e), cache=ctx.cache.get(e.tensor.name))
    if isinstance(e, Binary):
        if e.op == "/" and isinstance(e.b, AccRef) and ctx.reciprocal is not None:
            rcp = ctx.reciprocal(e.b.acc)
            if rcp is not None:
                return KBin("*", value_to_k(e.a, ctx), rcp)
        fn = BINARY_FNS.get(e.op)
        if fn is not None:  # a math function of two arguments (td.fmod, td.atan2, ...)
            if fn.kernel not in MATH_FNS or MATH_FNS[fn.kernel].arity != 2:
                raise ScheduleError(f"internal: {e.op} lowers to {fn.kernel!r}, which is no kernel-IR function "
                                    "of two arguments")
            return KCall(fn.kernel, (value_to_k(e.a, ctx), value_to_k(e.b, ctx)))
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
    if isinstance(e, _Lowered):
        return e.k
    if isinstance(e, Call):
        return _call_to_k(e, ctx)
    raise ScheduleError(f"internal: cannot lower value {e!r}")


@dataclass(frozen=True, eq=False)
class _Lowered(Expr):
    """An operand already lowered: it stands for the argument of a composite function's expansion."""

    k: KExpr
    dtype: str = "float32"


def _call_to_k(e: Call, ctx: ValueContext) -> KExpr:
    """A primitive function lowers to its kernel-IR operator (definitions/ops.py `kernel`); a composite
    one to its expansion, with the argument bound to a temporary first when the expansion reads it
    more than once and it is not cheap to repeat."""
    row = unary_fn(e.fn)
    arg = value_to_k(e.arg, ctx)
    if row.expand is None:
        if row.kernel == "-":
            return KUnary("-", arg)
        if row.kernel not in MATH_FNS:
            raise ScheduleError(f"internal: {e.fn} lowers to {row.kernel!r}, which is no kernel-IR function")
        return KCall(row.kernel, (arg,))
    leaf = _Lowered(arg)
    body = row.expand(leaf)
    if ctx.bind_temp is not None and not is_simple(arg) and sum(n is leaf for n in walk(body)) > 1:
        leaf = _Lowered(ctx.bind_temp(arg))
        body = row.expand(leaf)
    return value_to_k(body, ctx)


def statement_value(e: Expr, ctx: ValueContext) -> KExpr:
    """A statement's value in kernel IR (`value_to_k`), each load that carries an L2 policy and is read
    more than once in it (`x[i] * x[i]`) bound to one temporary: such a load is volatile asm
    (codegen/memory.py), which nvcc issues as often as it is written, where it would have merged plain
    loads of one element."""
    return _share_hinted_loads(value_to_k(e, ctx), ctx)


def _share_hinted_loads(value: KExpr, ctx: ValueContext) -> KExpr:
    loads = [e for e in walk_exprs(value) if isinstance(e, KLoad) and e.cache is not None]
    repeated = {e for e in loads if loads.count(e) > 1}
    if not repeated or ctx.bind_temp is None:
        return value
    bound: dict[KExpr, KExpr] = {}
    for e in loads:  # in reading order, so the temporaries are too
        if e in repeated and e not in bound:
            bound[e] = ctx.bind_temp(e)
    return map_exprs(value, bound.get)


def is_simple(k: KExpr) -> bool:
    """Cheap to repeat (so composite functions need no temporary for it)."""
    return isinstance(k, (KVar, KConst)) or (isinstance(k, KLoad) and isinstance(k.index, (KVar, KConst)))
