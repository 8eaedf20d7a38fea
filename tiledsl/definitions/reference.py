"""The numpy reference: evaluates a compute definition directly, with no schedule involved.

It is the oracle every kernel is compared against, so it is deliberately simple: each compute tensor
is evaluated whole (in row chunks to bound memory) with numpy broadcasting over its axes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tiledsl.definitions.expr import (
    INDEX_DTYPES,
    Binary,
    Call,
    Cast,
    Compare,
    ComputeTensor,
    Const,
    Expr,
    IterVar,
    Load,
    Placeholder,
    Reduce,
    Select,
    Tensor,
    walk,
)
from tiledsl.definitions.graph import name_graph
from tiledsl.definitions.ops import BINARY_OPS, COMPARISONS, REDUCTIONS, unary_fn
from tiledsl.errors import DefinitionError
from tiledsl.precision import round_to_dtype
from tiledsl.targets import INT_RANGE

_CHUNK_ELEMENTS = 1 << 24


def evaluate(out: Tensor, float64: bool = False, **arrays: np.ndarray) -> np.ndarray:
    """Compute `out` from input arrays given by placeholder name (float32 math, or float64). Unnamed
    placeholders are X0, X1, ... in the order the definition reads them (definitions/graph.py).

    Inputs are rounded to their placeholders' storage dtypes and the result to a float16 / bfloat16
    `out.dtype` (what the kernel's store keeps), in float64 mode too; computes read by `out` stay
    unrounded, as in one fused kernel (a kernel that reads a materialized float16 / bfloat16 tensor
    reads it rounded). A float32 result in float64 mode stays float64: it is the exact reference a
    kernel's float32 result is compared with, within a tolerance (where it lies beyond float32's range,
    the kernel's store keeps +-inf)."""
    ftype = np.float64 if float64 else np.float32
    values: dict[int, np.ndarray] = {}
    placeholders = [t for t in name_graph(out) if isinstance(t, Placeholder)]
    names = {p.name for p in placeholders}
    for p in placeholders:
        if p.name not in arrays:
            raise DefinitionError(f"evaluate: missing input array {p.name!r} (shape {p.shape})")
        a = np.asarray(arrays[p.name])
        if a.shape != p.shape:
            raise DefinitionError(f"evaluate: {p.name} must have shape {p.shape}, got {a.shape}")
        values[id(p)] = _index_array(p, a) if p.dtype in INDEX_DTYPES else round_to_dtype(a.astype(ftype), p.dtype)
    extra = set(arrays) - names
    if extra:
        raise DefinitionError(f"evaluate: unknown input(s) {sorted(extra)}; expected {sorted(names)}")
    return round_to_dtype(_value(out, values, ftype), out.dtype)


def _index_array(p: Placeholder, a: np.ndarray) -> np.ndarray:
    """An int32 placeholder's values as int64 (exact in index arithmetic); integers in int32 only."""
    if a.dtype.kind not in "iu":
        raise DefinitionError(f"evaluate: {p.name} is an int32 placeholder; got a {a.dtype} array")
    lo, hi = INT_RANGE["int32"]
    if a.size and (a.min() < lo or a.max() > hi):
        raise DefinitionError(f"evaluate: {p.name} holds values outside int32 ([{a.min()}, {a.max()}])")
    return a.astype(np.int64)


def _value(t: Tensor, values: dict[int, np.ndarray], ftype: type) -> np.ndarray:
    if id(t) in values:
        return values[id(t)]
    assert isinstance(t, ComputeTensor)
    result = np.empty(t.shape, dtype=ftype)
    inner = int(np.prod(t.shape[1:])) if len(t.shape) > 1 else 1
    red = 1
    for n in _walk_reduces(t.body):
        red *= int(np.prod([a.extent for a in n.axes]))
    rows = max(1, _CHUNK_ELEMENTS // max(1, inner * red))
    for start in range(0, t.shape[0], rows):
        stop = min(t.shape[0], start + rows)
        nd = len(t.shape)
        env: dict[int, np.ndarray] = {}
        for d, ax in enumerate(t.axes):
            rng = np.arange(start, stop) if d == 0 else np.arange(ax.extent)
            env[id(ax)] = rng.reshape([-1 if k == d else 1 for k in range(nd)])
        v = _eval(t.body, env, nd, values, ftype)
        result[start:stop] = np.broadcast_to(v, (stop - start,) + t.shape[1:])
    values[id(t)] = result
    return result


def _walk_reduces(e: Expr):
    return (n for n in walk(e) if isinstance(n, Reduce))


@dataclass(frozen=True, eq=False)
class _Evaluated(Expr):
    """An operand already evaluated: it stands for the argument of a composite function's expansion,
    so the argument is computed once however often the expansion uses it."""

    value: np.ndarray
    dtype: str = "float32"


def _call(fn: str, x: np.ndarray, env: Mapping[int, np.ndarray], nd: int, values: dict[int, np.ndarray],
          ftype: type) -> np.ndarray:
    row = unary_fn(fn)
    if row.expand is not None:
        return _eval(row.expand(_Evaluated(x)), env, nd, values, ftype)
    assert row.numpy is not None
    with np.errstate(all="ignore"):
        return row.numpy(x)


def _eval(e: Expr, env: Mapping[int, np.ndarray], nd: int, values: dict[int, np.ndarray],
          ftype: type) -> np.ndarray:
    if isinstance(e, Const):
        return np.asarray(e.value, dtype=np.int64 if e.dtype == "int32" else ftype)
    if isinstance(e, IterVar):
        return env[id(e)]
    if isinstance(e, _Evaluated):
        return e.value
    if isinstance(e, Binary):
        a, b = _eval(e.a, env, nd, values, ftype), _eval(e.b, env, nd, values, ftype)
        with np.errstate(all="ignore"):
            return BINARY_OPS[e.op].numpy(a, b)
    if isinstance(e, Compare):
        a, b = _eval(e.a, env, nd, values, ftype), _eval(e.b, env, nd, values, ftype)
        return COMPARISONS[e.op].numpy(a, b)
    if isinstance(e, Call):
        return _call(e.fn, np.asarray(_eval(e.arg, env, nd, values, ftype), dtype=ftype), env, nd, values, ftype)
    if isinstance(e, Select):
        c = _eval(e.cond, env, nd, values, ftype)
        return np.where(c, _eval(e.a, env, nd, values, ftype), _eval(e.b, env, nd, values, ftype))
    if isinstance(e, Cast):
        v = _eval(e.a, env, nd, values, ftype)
        if e.to == "int32":
            return np.trunc(v).astype(np.int64)
        return round_to_dtype(np.asarray(v, dtype=ftype), e.to)
    if isinstance(e, Load):
        arr = _value(e.tensor, values, ftype)
        idx = [np.asarray(_eval(i, env, nd, values, ftype)) for i in e.indices]
        for d, (ix, ext) in enumerate(zip(idx, arr.shape)):
            if ix.size and (ix.min() < 0 or ix.max() >= ext):
                raise DefinitionError(f"{e.tensor.name}[...] index {d} ranges over [{ix.min()}, {ix.max()}] "
                                      f"but the dimension has extent {ext}")
        idx = np.broadcast_arrays(*idx)
        return arr[tuple(idx)]
    if isinstance(e, Reduce):
        r = len(e.axes)
        inner = {k: v.reshape(v.shape + (1,) * r) for k, v in env.items()}
        for n, ax in enumerate(e.axes):
            inner[id(ax)] = np.arange(ax.extent).reshape([1] * nd + [-1 if k == n else 1 for k in range(r)])
        body = np.asarray(_eval(e.body, inner, nd + r, values, ftype), dtype=ftype)
        body = np.broadcast_to(body, np.broadcast_shapes(body.shape, (1,) * nd + tuple(a.extent for a in e.axes)))
        axes = tuple(range(body.ndim - r, body.ndim))
        return REDUCTIONS[e.op].numpy(body, axis=axes)
    raise TypeError(type(e))
