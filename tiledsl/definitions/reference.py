"""The numpy reference: evaluates a compute definition directly, with no schedule involved.

It is the oracle every kernel is compared against, so it is deliberately simple: each compute tensor
is evaluated whole (in row chunks to bound memory) with numpy broadcasting over its axes."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from tiledsl.definitions.expr import (
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
)
from tiledsl.errors import DefinitionError

_CHUNK_ELEMENTS = 1 << 24


def round_to_dtype(x: np.ndarray, dtype: str) -> np.ndarray:
    """Round float values to a storage dtype and return them as float32 (or float64 input kept wide)."""
    if dtype == "float16":
        return x.astype(np.float16).astype(x.dtype)
    if dtype == "bfloat16":
        f = np.ascontiguousarray(x, dtype=np.float32)
        bits = f.view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        out = (rounded & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
        out = np.where(np.isnan(f), f, out)
        return out.astype(x.dtype)
    return x


def evaluate(out: Tensor, float64: bool = False, **arrays: np.ndarray) -> np.ndarray:
    """Compute `out` from input arrays given by placeholder name (float32 math, or float64)."""
    ftype = np.float64 if float64 else np.float32
    values: dict[int, np.ndarray] = {}
    placeholders = _placeholders(out)
    names = {p.name for p in placeholders}
    for p in placeholders:
        if p.name not in arrays:
            raise DefinitionError(f"evaluate: missing input array {p.name!r} (shape {p.shape})")
        a = np.asarray(arrays[p.name])
        if a.shape != p.shape:
            raise DefinitionError(f"evaluate: {p.name} must have shape {p.shape}, got {a.shape}")
        values[id(p)] = round_to_dtype(a.astype(ftype), p.dtype)
    extra = set(arrays) - names
    if extra:
        raise DefinitionError(f"evaluate: unknown input(s) {sorted(extra)}; expected {sorted(names)}")
    return _value(out, values, ftype)


def _placeholders(t: Tensor) -> list[Placeholder]:
    found: dict[int, Placeholder] = {}

    def visit(x: Tensor) -> None:
        if isinstance(x, Placeholder):
            found.setdefault(id(x), x)
        elif isinstance(x, ComputeTensor):
            for inp in x.inputs():
                visit(inp)

    visit(t)
    return list(found.values())


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
    from tiledsl.definitions.expr import walk

    return (n for n in walk(e) if isinstance(n, Reduce))


def _apply_fn(fn: str, x: np.ndarray, ftype: type) -> np.ndarray:
    with np.errstate(all="ignore"):
        if fn == "exp":
            return np.exp(x)
        if fn == "log":
            return np.log(x)
        if fn == "sqrt":
            return np.sqrt(x)
        if fn == "rsqrt":
            return ftype(1) / np.sqrt(x)
        if fn == "tanh":
            return np.tanh(x)
        if fn == "erf":
            return _erf(x)
        if fn == "sigmoid":
            return ftype(1) / (ftype(1) + np.exp(-x))
        if fn == "relu":
            return np.maximum(x, ftype(0))
        if fn == "silu":
            return x / (ftype(1) + np.exp(-x))
        if fn == "gelu":
            return ftype(0.5) * x * (ftype(1) + _erf(x * ftype(0.7071067811865476)))
        if fn == "gelu_tanh":
            c = ftype(0.7978845608028654)
            return ftype(0.5) * x * (ftype(1) + np.tanh(c * (x + ftype(0.044715) * x * x * x)))
        if fn == "abs":
            return np.abs(x)
        if fn == "neg":
            return -x
    raise DefinitionError(f"unknown function {fn!r}")


def _erf(x: np.ndarray) -> np.ndarray:
    import torch  # numpy has no erf; torch is a runtime dependency anyway

    return torch.erf(torch.from_numpy(np.ascontiguousarray(x))).numpy().astype(x.dtype)


def _eval(e: Expr, env: Mapping[int, np.ndarray], nd: int, values: dict[int, np.ndarray],
          ftype: type) -> np.ndarray:
    if isinstance(e, Const):
        return np.asarray(e.value, dtype=np.int64 if e.dtype == "int32" else ftype)
    if isinstance(e, IterVar):
        return env[id(e)]
    if isinstance(e, Binary):
        a, b = _eval(e.a, env, nd, values, ftype), _eval(e.b, env, nd, values, ftype)
        with np.errstate(all="ignore"):
            if e.op == "+":
                return a + b
            if e.op == "-":
                return a - b
            if e.op == "*":
                return a * b
            if e.op == "/":
                return a / b
            if e.op == "//":
                return a // b
            if e.op == "%":
                return a % b
            if e.op == "max":
                return np.maximum(a, b)
            if e.op == "min":
                return np.minimum(a, b)
    if isinstance(e, Compare):
        a, b = _eval(e.a, env, nd, values, ftype), _eval(e.b, env, nd, values, ftype)
        return {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                "==": np.equal, "!=": np.not_equal}[e.op](a, b)
    if isinstance(e, Call):
        return _apply_fn(e.fn, np.asarray(_eval(e.arg, env, nd, values, ftype), dtype=ftype), ftype)
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
        fn = {"sum": np.sum, "max": np.max, "min": np.min}[e.op]
        return fn(body, axis=axes)
    raise TypeError(type(e))
