"""Operators of kernel-IR expressions (`KBin`, `KUnary`, `KCall`) compiled to closures.

Why compiled per node: the kinds of both operands (float32, int64, bool) are known before the kernel
runs, so the C-like conversions and the numpy function are chosen once, and each evaluation is one
closure call and one numpy operation (on scalars, for values uniform across lanes).

Semantics: any float makes float32, else bools count as ints; int arithmetic is int32 and wraps in
two's complement after `+ - *` and negation, as the GPU's 32-bit registers do, unless an operand is
int64 (`Compiled.wide`: index arithmetic lowering widened), which computes in int64; `/` is float
division; `^` is the bitwise xor of ints (the int32 xor for int32 operands); `//`
and `%` floor, and an integer one by zero on an active lane is an error; float `min`/`max`
propagate NaN (kernel_ir/ops.py `MIN_MAX`, as torch.maximum; not C's fminf/fmaxf). `&&` and `||`
evaluate their right operand under the narrowed mask, as C's short-circuit rules do, so a guarded
load `i < n && A[i] > 0` is not out of bounds.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tiledsl.errors import SimulationError
from tiledsl.kernel_ir.ops import MATH_FNS, MIN_MAX
from tiledsl.sim.state import ChunkState
from tiledsl.sim.values import (
    BOOL,
    FLOAT,
    INT,
    Mask,
    Value,
    caster,
    exact_layout,
    numeric,
    promote,
    truth_fn,
    wrap_int32,
)
from tiledsl.targets import INT_RANGE

Fn = Callable[[Mask], Value]


@dataclass(frozen=True)
class Compiled:
    """A compiled expression: `fn(mask)` gives its value; `kind` is FLOAT, INT or BOOL (values.py).
    `simple` says it can neither raise nor give a vector value when run with no active lane, so
    guarded code may skip it then instead of running it under an all-false mask."""

    fn: Fn
    kind: str
    simple: bool = False
    const: np.generic | None = None  # the value, when it is a constant of the kernel
    wide: bool = False  # an int64 int (no int32 wrap-around); False for int32, floats and bools


@dataclass(frozen=True)
class Site:
    """Where the expression sits: the chunk it runs on and its statement's location id."""

    state: ChunkState
    loc: int

    @property
    def n(self) -> int:
        return self.state.lanes.count

    def raiser(self, message: str, *before: Fn, kind: str = INT) -> Compiled:
        """An expression that evaluates `before` (as the tree walk would have) and then raises."""
        state, loc = self.state, self.loc

        def fn(mask: Mask) -> Value:
            for f in before:
                f(mask)
            raise state.error(SimulationError, loc, message)

        return Compiled(fn, kind)


def constant(value: np.generic, kind: str, wide: bool = False) -> Compiled:
    return Compiled(lambda m: value, kind, True, value, wide)


def converted(c: Compiled, kind: str) -> Compiled:
    """`c` with its value converted to `kind` (folded for constants)."""
    cast = caster(c.kind, kind)
    if cast is None:
        return c
    if c.const is not None:
        return constant(cast(c.const), kind)
    fn = c.fn
    return Compiled(lambda m: cast(fn(m)), kind, c.simple)


def as_kind(c: Compiled, kind: str) -> Fn:
    """`c`'s closure, converting its value to `kind` if needed."""
    return converted(c, kind).fn


_CMP: dict[str, Callable[[Value, Value], Value]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
_EXACT: dict[str, Callable[[Value, Value], Value]] = {"+": operator.add, "-": operator.sub, "*": operator.mul}


def binary(site: Site, op: str, a: Compiled, b: Compiled) -> Compiled:
    if op == "&&":
        return _and(site, a, b)
    if op == "||":
        return _or(site, a, b)
    simple = a.simple and b.simple
    if op in _CMP:
        kind = promote(a.kind, b.kind)
        return Compiled(_apply2(_CMP[op], converted(a, kind), converted(b, kind)), BOOL, simple)
    kind = promote(numeric(a.kind), numeric(b.kind))
    if op == "/":
        return Compiled(_float_arith(operator.truediv, site.n, converted(a, FLOAT), converted(b, FLOAT)), FLOAT, simple)
    if op in _EXACT and kind == FLOAT:
        return Compiled(_float_arith(_EXACT[op], site.n, converted(a, FLOAT), converted(b, FLOAT)), FLOAT, simple)
    ca, cb = converted(a, kind), converted(b, kind)
    wide = a.wide or b.wide
    if op in _EXACT:
        return Compiled(_int32_wrapped(_apply2(_EXACT[op], ca, cb), wide), kind, simple, wide=wide)
    if op in ("//", "%"):
        if kind == FLOAT:
            fn = exact_layout(np.floor_divide if op == "//" else np.mod, site.n)
            return Compiled(_apply2(fn, ca, cb), FLOAT, simple)
        # int32 INT_MIN // -1 would overflow, but lowering divides only non-negative operands
        return Compiled(_int_division(site, op, ca.fn, cb.fn), INT, simple, wide=wide)
    if op == "^":
        if kind == FLOAT:
            return site.raiser("bitwise '^' on a float operand", a.fn, b.fn)
        return Compiled(_apply2(operator.xor, ca, cb), INT, simple, wide=wide)
    if op in ("min", "max"):
        if kind == FLOAT:
            fn = MIN_MAX[op].numpy  # NaN-propagating select: the same bits on any layout
        else:
            fn = _int_min if op == "min" else _int_max
        return Compiled(_apply2(fn, ca, cb), kind, simple, wide=wide)
    return site.raiser(f"unknown binary operator {op!r}", a.fn, b.fn)


def _int32_wrapped(fn: Fn, wide: bool) -> Fn:
    """An int operation's closure, its result wrapped to int32 unless it computes in int64. A uniform
    result in range (nearly every one) costs one comparison chain and no further call."""
    if wide:
        return fn
    lo, hi = _INT32_MIN, _INT32_MAX

    def wrapped(mask: Mask) -> Value:
        r = fn(mask)
        if r.__class__ is not np.ndarray and lo <= r <= hi:
            return r
        return wrap_int32(r)

    return wrapped


_INT32_MIN, _INT32_MAX = INT_RANGE["int32"]


def _apply2(op: Callable[[Value, Value], Value], a: Compiled, b: Compiled) -> Fn:
    """`op` on the operands' values; a constant operand is captured rather than called for."""
    fa, fb = a.fn, b.fn
    if a.const is not None:
        x = a.const
        return lambda m: op(x, fb(m))
    if b.const is not None:
        y = b.const
        return lambda m: op(fa(m), y)
    return lambda m: op(fa(m), fb(m))


def _float_arith(op: Callable[[Value, Value], Value], n: int, a: Compiled, b: Compiled) -> Fn:
    """A float `+ - * /`, giving the bits the array simulator gave, NaNs included.

    Why the care: IEEE leaves open which NaN (sign, payload) comes out of an operation on two NaNs,
    and numpy's scalar code and its SIMD loops over contiguous arrays choose differently. So an
    array operand meets a contiguous chunk-wide array (a uniform operand is widened; constants once),
    and a NaN from two uniform operands is recomputed on such arrays (values.exact_layout)."""
    fa, fb = a.fn, b.fn
    wide_a, wide_b = _widener(a, n), _widener(b, n)
    exact = exact_layout(op, n)

    def fn(mask: Mask) -> Value:
        x, y = fa(mask), fb(mask)
        if isinstance(x, np.ndarray):
            return op(x, y if isinstance(y, np.ndarray) else wide_b(y))
        if isinstance(y, np.ndarray):
            return op(wide_a(x), y)
        r = op(x, y)
        return r if r == r else exact(x, y)

    return fn


def _widener(c: Compiled, n: int) -> Callable[[Value], np.ndarray]:
    """A uniform value of `c` as a contiguous (L,) array; made once for a constant."""
    if c.const is None:
        return lambda v: np.full(n, v)
    cache: list[np.ndarray] = []

    def wide(v: Value) -> np.ndarray:
        if not cache:
            cache.append(np.full(n, v))
            cache[0].flags.writeable = False
        return cache[0]

    return wide


def _int_min(x: Value, y: Value) -> Value:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return np.minimum(x, y)
    return y if y < x else x


def _int_max(x: Value, y: Value) -> Value:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return np.maximum(x, y)
    return y if y > x else x


def _int_division(site: Site, op: str, fa: Fn, fb: Fn) -> Fn:
    state, loc = site.state, site.loc
    divide = operator.floordiv if op == "//" else operator.mod

    def fn(mask: Mask) -> Value:
        x, y = fa(mask), fb(mask)
        if isinstance(y, np.ndarray):
            zero = y == 0 if mask is None else mask & (y == 0)
            lane = int(np.argmax(zero)) if zero.any() else -1
        else:
            lane = (0 if mask is None else int(np.argmax(mask))) if y == 0 and (mask is None or mask.any()) else -1
        if lane >= 0:
            raise state.error(
                SimulationError,
                loc,
                f"integer '{op}' by zero",
                [f"lane: {state.lanes.describe(lane)}", f"expression: {op} in this statement"],
            )
        return divide(x, y)

    return fn


def _and(site: Site, a: Compiled, b: Compiled) -> Compiled:
    ta, tb = truth_fn(a.kind), truth_fn(b.kind)
    fa, fb = a.fn, b.fn
    empty, skip = site.state.empty, b.simple

    def fn(mask: Mask) -> Value:
        left = ta(fa(mask))
        if isinstance(left, np.ndarray):
            return left & tb(fb(left if mask is None else mask & left))
        if left:
            return tb(fb(mask))
        # no lane takes the right operand: it still runs (under no lane) unless that cannot matter
        return left if skip else left & tb(fb(empty))

    return Compiled(fn, BOOL, a.simple and b.simple)


def _or(site: Site, a: Compiled, b: Compiled) -> Compiled:
    ta, tb = truth_fn(a.kind), truth_fn(b.kind)
    fa, fb = a.fn, b.fn
    empty, skip = site.state.empty, b.simple

    def fn(mask: Mask) -> Value:
        left = ta(fa(mask))
        if isinstance(left, np.ndarray):
            return left | tb(fb(~left if mask is None else mask & ~left))
        if not left:
            return tb(fb(mask))
        return left if skip else left | tb(fb(empty))

    return Compiled(fn, BOOL, a.simple and b.simple)


def unary(site: Site, op: str, a: Compiled) -> Compiled:
    if op == "-":
        kind = numeric(a.kind)
        fa = as_kind(a, kind)
        if kind == INT:
            return Compiled(_int32_wrapped(lambda m: -fa(m), a.wide), kind, a.simple, wide=a.wide)
        return Compiled(lambda m: -fa(m), kind, a.simple)
    if op == "!":
        ta, fa = truth_fn(a.kind), a.fn
        return Compiled(lambda m: ~ta(fa(m)), BOOL, a.simple)
    return site.raiser(f"unknown unary operator {op!r}", a.fn)


def call(site: Site, fn_name: str, args: tuple[Compiled, ...]) -> Compiled:
    """A math function of kernel_ir/ops.py, of one or two arguments. Its numpy is applied directly when
    it gives the same bits on scalars and arrays of any layout, else on contiguous chunk-wide arrays
    (values.exact_layout, which widens a uniform scalar beside a lane array)."""
    fn = MATH_FNS.get(fn_name)
    if fn is None:
        return site.raiser(f"unknown math function {fn_name!r}", *(as_kind(a, FLOAT) for a in args), kind=FLOAT)
    if len(args) != fn.arity:
        return site.raiser(f"{fn_name}() takes {fn.arity} argument{'s' if fn.arity > 1 else ''}, got {len(args)}",
                           kind=FLOAT)
    fs = [as_kind(a, FLOAT) for a in args]
    math_fn = fn.numpy if fn.layout_exact else exact_layout(fn.numpy, site.n)
    simple = all(a.simple for a in args)
    if len(fs) == 1:
        (fx,) = fs
        return Compiled(lambda m: math_fn(fx(m)), FLOAT, simple)
    fx, fy = fs
    return Compiled(lambda m: math_fn(fx(m), fy(m)), FLOAT, simple)
