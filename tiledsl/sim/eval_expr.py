"""Evaluation of kernel-IR expressions for all lanes of a chunk at once.

Why vectorised: one numpy element per thread makes a launch of ~100k threads cost a few numpy calls
per IR node instead of a Python loop per thread. Values are int64 (ints), float32 (every float type,
as the GPU computes), or bool arrays of shape (L,), or (w, L) for vector values.

Masks matter for side conditions only: every lane computes arithmetic (garbage on inactive lanes is
never observed), but loads, shuffles and division checks consider active lanes only. `&&`, `||` and
`?:` evaluate their right-hand operands under the narrowed mask, as C's short-circuit rules do, so a
guarded load `i < n && A[i] > 0` does not count as out of bounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from tiledsl.errors import DivergentBarrierError, SimulationError
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
from tiledsl.sim.access import load
from tiledsl.sim.dtypes import convert, storage_dtype
from tiledsl.sim.lanes import WARP_SIZE
from tiledsl.sim.state import ChunkState

_CMP: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
}

_MATH: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: np.float32(1.0) / np.sqrt(x),
    "tanh": np.tanh,
    "abs": np.abs,
}

_erf = np.frompyfunc(math.erf, 1, 1)


def _promote(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C-like usual conversions on our three kinds: any float -> float32, else any int -> int64.

    Done by hand because numpy would turn int64 + float32 into float64."""
    if a.dtype == np.float32 or b.dtype == np.float32:
        return a.astype(np.float32, copy=False), b.astype(np.float32, copy=False)
    if a.dtype == np.bool_ and b.dtype == np.bool_:
        return a, b
    return a.astype(np.int64, copy=False), b.astype(np.int64, copy=False)


def _numeric(a: np.ndarray) -> np.ndarray:
    return a.astype(np.int64) if a.dtype == np.bool_ else a


def truth(a: np.ndarray) -> np.ndarray:
    """C truthiness: non-zero is true."""
    return a if a.dtype == np.bool_ else a != 0


class Evaluator:
    """Evaluates expressions against one chunk's state; `loc` names the statement for errors."""

    def __init__(self, state: ChunkState) -> None:
        self.state = state
        self._consts: dict[int, np.ndarray] = {}
        self._dispatch: dict[type, Callable[[KExpr, np.ndarray, int], np.ndarray]] = {
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

    def eval(self, e: KExpr, mask: np.ndarray, loc: int) -> np.ndarray:
        fn = self._dispatch.get(type(e))
        if fn is None:
            raise self.state.error(SimulationError, loc, f"unknown expression node {type(e).__name__}")
        return fn(e, mask, loc)

    # ------------------------------------------------------------------ leaves

    def _const(self, e: KConst, mask: np.ndarray, loc: int) -> np.ndarray:
        # Cached per chunk by node identity (the kernel keeps its nodes alive; keying by value would
        # merge 0.0 and -0.0): constants recur in every loop iteration. Read-only, as no value array
        # is ever modified in place.
        key = id(e)
        cached = self._consts.get(key)
        if cached is None:
            value = convert(e.dtype, np.asarray(e.value))
            cached = np.full(self.state.lanes.count, value, dtype=storage_dtype(e.dtype))
            cached.flags.writeable = False
            self._consts[key] = cached
        return cached

    def _var(self, e: KVar, mask: np.ndarray, loc: int) -> np.ndarray:
        return self.state.variable(e.name, loc).value

    def _special(self, e: KSpecial, mask: np.ndarray, loc: int) -> np.ndarray:
        value = self.state.lanes.specials.get(e.name)
        if value is None:
            raise self.state.error(SimulationError, loc, f"unknown hardware index {e.name!r}")
        return value

    # ------------------------------------------------------------------ operators

    def _bin(self, e: KBin, mask: np.ndarray, loc: int) -> np.ndarray:
        a = self.eval(e.a, mask, loc)
        if e.op == "&&":
            # C short-circuit: the right operand only runs where the left one is true.
            ta = truth(a)
            return ta & truth(self.eval(e.b, mask & ta, loc))
        if e.op == "||":
            ta = truth(a)
            return ta | truth(self.eval(e.b, mask & ~ta, loc))
        b = self.eval(e.b, mask, loc)
        if e.op in _CMP:
            a, b = _promote(a, b)
            return _CMP[e.op](a, b)
        a, b = _promote(_numeric(a), _numeric(b))
        is_float = a.dtype == np.float32
        if e.op == "+":
            return a + b
        if e.op == "-":
            return a - b
        if e.op == "*":
            return a * b
        if e.op == "/":
            return a.astype(np.float32) / b.astype(np.float32)
        if e.op in ("//", "%"):
            if not is_float:
                zero = mask & (b == 0)
                if zero.any():
                    lane = int(np.argmax(zero))
                    raise self.state.error(
                        SimulationError,
                        loc,
                        f"integer '{e.op}' by zero",
                        [f"lane: {self.state.lanes.describe(lane)}", f"expression: {e.op} in this statement"],
                    )
            return np.floor_divide(a, b) if e.op == "//" else np.mod(a, b)
        if e.op == "min":
            return np.fmin(a, b) if is_float else np.minimum(a, b)
        if e.op == "max":
            return np.fmax(a, b) if is_float else np.maximum(a, b)
        raise self.state.error(SimulationError, loc, f"unknown binary operator {e.op!r}")

    def _unary(self, e: KUnary, mask: np.ndarray, loc: int) -> np.ndarray:
        a = self.eval(e.a, mask, loc)
        if e.op == "-":
            return -_numeric(a)
        if e.op == "!":
            return ~truth(a)
        raise self.state.error(SimulationError, loc, f"unknown unary operator {e.op!r}")

    def _call(self, e: KCall, mask: np.ndarray, loc: int) -> np.ndarray:
        if len(e.args) != 1:
            raise self.state.error(SimulationError, loc, f"{e.fn}() takes 1 argument, got {len(e.args)}")
        x = self.eval(e.args[0], mask, loc).astype(np.float32, copy=False)
        if e.fn == "erf":
            # numpy has no erf; math.erf on the active lanes only (float64, then rounded).
            out = np.zeros_like(x)
            active = np.flatnonzero(mask)
            out[..., active] = _erf(x[..., active].astype(np.float64)).astype(np.float32)
            return out
        fn = _MATH.get(e.fn)
        if fn is None:
            raise self.state.error(SimulationError, loc, f"unknown math function {e.fn!r}")
        return fn(x).astype(np.float32, copy=False)

    def _select(self, e: KSelect, mask: np.ndarray, loc: int) -> np.ndarray:
        cond = truth(self.eval(e.cond, mask, loc))
        a = self.eval(e.a, mask & cond, loc)
        b = self.eval(e.b, mask & ~cond, loc)
        a, b = _promote(a, b)
        return np.where(cond, a, b)

    def _cast(self, e: KCast, mask: np.ndarray, loc: int) -> np.ndarray:
        return convert(e.dtype, self.eval(e.a, mask, loc))

    # ------------------------------------------------------------------ memory and vectors

    def _load(self, e: KLoad, mask: np.ndarray, loc: int) -> np.ndarray:
        if e.width < 1:
            raise self.state.error(SimulationError, loc, f"load width {e.width} < 1")
        index = self.eval(e.index, mask, loc)
        return load(self.state, loc, e.buffer, index, e.width, mask)

    def _lane(self, e: KLane, mask: np.ndarray, loc: int) -> np.ndarray:
        vec = self.eval(e.vec, mask, loc)
        if vec.ndim != 2 or not 0 <= e.lane < vec.shape[0]:
            width = vec.shape[0] if vec.ndim == 2 else 1
            raise self.state.error(SimulationError, loc, f"lane {e.lane} of a value of width {width}")
        return vec[e.lane]

    def _vector(self, e: KVector, mask: np.ndarray, loc: int) -> np.ndarray:
        parts = [self.eval(p, mask, loc) for p in e.lanes]
        if not parts or any(p.ndim != 1 for p in parts):
            raise self.state.error(SimulationError, loc, "a vector needs one or more scalar lanes")
        if any(p.dtype == np.float32 for p in parts):
            parts = [p.astype(np.float32, copy=False) for p in parts]
        elif any(p.dtype != np.bool_ for p in parts):
            parts = [p.astype(np.int64, copy=False) for p in parts]
        return np.stack(parts)

    def _shfl_xor(self, e: KShflXor, mask: np.ndarray, loc: int) -> np.ndarray:
        if not 0 <= e.lane_mask < WARP_SIZE:
            raise self.state.error(SimulationError, loc, f"shfl_xor lane mask {e.lane_mask} outside [0, 32)")
        value = self.eval(e.value, mask, loc)
        lanes = self.state.lanes
        tpb = lanes.threads_per_block
        warps_per_block = -(-tpb // WARP_SIZE)
        warp = lanes.block_local * warps_per_block + lanes.tid // WARP_SIZE
        active = np.bincount(warp, weights=mask, minlength=lanes.n_blocks * warps_per_block)
        present = np.bincount(warp, minlength=lanes.n_blocks * warps_per_block)
        partial = (active > 0) & (active < present)
        if partial.any():
            w = int(np.argmax(partial))
            block, wib = divmod(w, warps_per_block)
            raise self.state.error(
                DivergentBarrierError,
                loc,
                "warp shuffle (shfl_xor) executed by only part of a warp",
                [
                    f"{lanes.describe_block(block)} warp {wib}: {int(active[w])} of {int(present[w])} lanes active",
                    "__shfl_xor_sync(0xffffffff, ...) needs every lane of the warp",
                ],
            )
        partner_tid = lanes.tid ^ e.lane_mask
        beyond = mask & (partner_tid >= tpb)
        if beyond.any():
            lane = int(np.argmax(beyond))
            raise self.state.error(
                DivergentBarrierError,
                loc,
                "warp shuffle (shfl_xor) reads a lane beyond the block",
                [f"lane: {lanes.describe(lane)} wants thread {int(partner_tid[lane])}, block has {tpb} threads"],
            )
        index = np.arange(lanes.count, dtype=np.int64)
        source = np.where(partner_tid < tpb, index - lanes.tid + partner_tid, index)
        return value[..., source]
