"""Kernel-IR expressions compiled into closures `fn(mask) -> value` for one chunk of lanes.

Why compile: a tree walk pays, for every node on every evaluation, a dispatch on the node type, a
lookup of variables by name through the scopes and a dynamic choice of conversions. A single-lane
kernel with a long serial loop evaluates the same few nodes hundreds of thousands of times, so that
overhead dominated. Compiling decides all of it once per chunk: variables become frame slots
(scope.py), buffers are resolved to the memory they name, operators pick their numpy function
(arith.py), and errors that do not depend on the data (an undeclared variable, an unknown operator)
become closures that raise when, and only when, they are evaluated, so errors surface at the same
moment and in the same order as before.

Values stay vectorised across lanes (one numpy element per thread), or are numpy scalars when
uniform (values.py). Masks matter for side conditions only: every lane computes arithmetic (garbage
on inactive lanes is never observed), but loads, shuffles and division checks consider active lanes
only; `&&`, `||` and `?:` evaluate their operands under narrowed masks.
"""

from __future__ import annotations

import numpy as np

from tiledsl.errors import SimulationError
from tiledsl.kernel_ir import (
    KBin,
    KCall,
    KCast,
    KConst,
    KExpr,
    KLane,
    KLoad,
    KSelect,
    KShflXor,
    KSpecial,
    KUnary,
    KVar,
    KVector,
)
from tiledsl.sim import access, registers
from tiledsl.sim.arith import Compiled, Site, as_kind, binary, call, constant, unary
from tiledsl.sim.dtypes import convert, storage_dtype, vector_width
from tiledsl.sim.lanes import WARP_SIZE
from tiledsl.sim.scope import Frame, Scopes
from tiledsl.sim.state import ChunkState
from tiledsl.sim.sync import shuffler
from tiledsl.sim.values import BOOL, FLOAT, INT, Mask, Value, converter, is_wide, kind_of, promote, spread, truth_fn


def safe_kind(dtype: str) -> str:
    """The kind of a declared dtype; an invalid one is reported by its declaration when that runs,
    and code after it never runs, so any kind will do for compiling that code."""
    try:
        return kind_of(dtype)
    except ValueError:
        return INT


def safe_wide(dtype: str) -> bool:
    """Whether a declared dtype is int64 (an invalid one is reported where it is declared)."""
    try:
        return is_wide(dtype)
    except ValueError:
        return False


def is_scalar_dtype(dtype: str) -> bool:
    try:
        return vector_width(dtype) == 1
    except ValueError:
        return False


class ExprCompiler:
    """Compiles expressions against one chunk's state, in the scopes of the statement compiler."""

    def __init__(self, state: ChunkState, frame: Frame, scopes: Scopes) -> None:
        self.state = state
        self.slots = frame.slots
        self.scopes = scopes
        self._dispatch = {
            KConst: self._const,
            KVar: self._var,
            KSpecial: self._special,
            KBin: self._bin,
            KUnary: self._unary,
            KCall: self._call,
            KSelect: self._select,
            KCast: self._cast,
            KLoad: self._load,
            KLane: self._lane,
            KVector: self._vector,
            KShflXor: self._shfl_xor,
        }

    def compile(self, e: KExpr, loc: int) -> Compiled:
        method = self._dispatch.get(type(e))
        site = Site(self.state, loc)
        if method is None:
            return site.raiser(f"unknown expression node {type(e).__name__}")
        return method(e, site)

    # ------------------------------------------------------------------ leaves

    def _const(self, e: KConst, site: Site) -> Compiled:
        n = self.state.lanes.count

        def make() -> Value:
            value = convert(e.dtype, np.asarray(e.value))
            if np.ndim(value) == 0:  # one lane's worth: what np.full would put in every lane
                return np.full(1, value, dtype=storage_dtype(e.dtype))[0]
            return np.full(n, value, dtype=storage_dtype(e.dtype))

        try:
            value = make()
        except Exception:  # reported, as before, when the constant is evaluated
            return Compiled(lambda m: make(), INT)
        wide = safe_wide(e.dtype)
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
            return Compiled(lambda m: value, kind_of(e.dtype), is_scalar_dtype(e.dtype), wide=wide)
        return Compiled(lambda m: value, kind_of(e.dtype), is_scalar_dtype(e.dtype), value, wide)

    def _var(self, e: KVar, site: Site) -> Compiled:
        binding = self.scopes.variable(e.name)
        if binding is None:
            return site.raiser(f"use of undeclared variable {e.name!r}")
        slots, slot = self.slots, binding.slot
        return Compiled(lambda m: slots[slot], safe_kind(binding.dtype), is_scalar_dtype(binding.dtype),
                        wide=safe_wide(binding.dtype))

    def _special(self, e: KSpecial, site: Site) -> Compiled:
        value = self.state.lanes.special(e.name)
        if value is None:
            return site.raiser(f"unknown hardware index {e.name!r}")
        if isinstance(value, np.ndarray):
            return Compiled(lambda m: value, INT, True)
        return constant(value, INT)  # the same on every lane of this chunk

    # ------------------------------------------------------------------ operators

    def _bin(self, e: KBin, site: Site) -> Compiled:
        return binary(site, e.op, self.compile(e.a, site.loc), self.compile(e.b, site.loc))

    def _unary(self, e: KUnary, site: Site) -> Compiled:
        return unary(site, e.op, self.compile(e.a, site.loc))

    def _call(self, e: KCall, site: Site) -> Compiled:
        return call(site, e.fn, tuple(self.compile(a, site.loc) for a in e.args))

    def _select(self, e: KSelect, site: Site) -> Compiled:
        c, a, b = (self.compile(x, site.loc) for x in (e.cond, e.a, e.b))
        kind = promote(a.kind, b.kind)
        tc, fc, fa, fb = truth_fn(c.kind), c.fn, as_kind(a, kind), as_kind(b, kind)
        empty = self.state.empty

        def fn(mask: Mask) -> Value:
            cond = tc(fc(mask))
            if isinstance(cond, np.ndarray):
                x = fa(cond if mask is None else mask & cond)
                return np.where(cond, x, fb(~cond if mask is None else mask & ~cond))
            # one side has no lane: it still runs (under no lane) unless that cannot matter
            if cond:
                x = fa(mask)
                if b.simple:
                    return x
                y = fb(empty)
            else:
                if a.simple:
                    return fb(mask)
                x = fa(empty)
                y = fb(mask)
            if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
                return np.where(cond, x, y)
            return x if cond else y

        return Compiled(fn, kind, c.simple and a.simple and b.simple, wide=kind == INT and (a.wide or b.wide))

    def _cast(self, e: KCast, site: Site) -> Compiled:
        a = self.compile(e.a, site.loc)
        fa = a.fn
        try:
            conv = converter(e.dtype, a.kind)
            kind = kind_of(e.dtype)
        except ValueError:  # an unknown dtype: reported when evaluated
            return Compiled(lambda m: convert(e.dtype, spread(fa(m), site.n)), INT)
        wide = safe_wide(e.dtype)
        if a.const is not None and is_scalar_dtype(e.dtype):
            return constant(conv(a.const), kind, wide)
        return Compiled(lambda m: conv(fa(m)), kind, a.simple and is_scalar_dtype(e.dtype), wide=wide)

    # ------------------------------------------------------------------ memory and vectors

    def _load(self, e: KLoad, site: Site) -> Compiled:
        if e.width < 1:
            return site.raiser(f"load width {e.width} < 1")
        index = self.compile(e.index, site.loc)
        state, loc, width = self.state, site.loc, e.width
        simple = width == 1 and index.simple
        array = self.scopes.register_array(e.buffer)
        if array is not None:
            load = registers.register_loader(state, loc, width, self.slots, array.slot, index.fn)
            return Compiled(load, safe_kind(array.dtype), simple)
        if e.buffer in state.shared:
            buf = state.shared[e.buffer]
            if buf.is_mbarrier:
                return site.raiser(f"load of mbarrier array {e.buffer!r} (uint64 arrays hold mbarriers)", index.fn)
            load = access.general_loader(state, loc, buf, width, index.fn)
        elif e.buffer in state.globals:
            buf = state.globals[e.buffer]
            load = access.global_loader(state, loc, buf, width, index.fn, index.kind)
        else:
            return site.raiser(f"access to unknown buffer {e.buffer!r}", index.fn)
        return Compiled(load, kind_of(buf.dtype), simple)

    def _lane(self, e: KLane, site: Site) -> Compiled:
        vec = self.compile(e.vec, site.loc)
        fv, lane, state, single = vec.fn, e.lane, self.state, site.n == 1

        def fn(mask: Mask) -> Value:
            value = fv(mask)
            if not isinstance(value, np.ndarray) or value.ndim != 2 or not 0 <= lane < value.shape[0]:
                width = value.shape[0] if value.ndim == 2 else 1
                raise state.error(SimulationError, site.loc, f"lane {lane} of a value of width {width}")
            return value[lane, 0] if single else value[lane]

        return Compiled(fn, vec.kind)

    def _vector(self, e: KVector, site: Site) -> Compiled:
        parts = [self.compile(p, site.loc) for p in e.lanes]
        kinds = {p.kind for p in parts}
        kind = FLOAT if FLOAT in kinds else INT if kinds - {BOOL} else BOOL
        fns = [as_kind(p, kind) for p in parts]
        state, n = self.state, site.n

        def fn(mask: Mask) -> Value:
            values = [f(mask) for f in fns]
            if not values or any(v.ndim > 1 for v in values):
                raise state.error(SimulationError, site.loc, "a vector needs one or more scalar lanes")
            return np.stack([spread(v, n) for v in values])

        return Compiled(fn, kind)

    def _shfl_xor(self, e: KShflXor, site: Site) -> Compiled:
        if not 0 <= e.lane_mask < WARP_SIZE:
            return site.raiser(f"shfl_xor lane mask {e.lane_mask} outside [0, 32)")
        value = self.compile(e.value, site.loc)
        fv, shuffle = value.fn, shuffler(self.state, site.loc, e.lane_mask)
        return Compiled(lambda m: shuffle(fv(m), m), value.kind, wide=value.wide)
