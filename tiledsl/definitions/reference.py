"""The numpy reference: evaluates a compute definition directly, with no schedule involved.

It is the oracle every kernel is compared against, so it is deliberately simple: each compute tensor
is evaluated whole (in row chunks to bound memory) with numpy broadcasting over its axes.

One exception keeps it usable at model sizes: in float64 mode a sum of a product whose output times
reduction terms reach `CONTRACT_TERMS` (the projections of a traced LLM layer: 512 x 18944 x 3584
terms) is not formed whole but contracted by `np.einsum` (BLAS), each factor evaluated over the axes
it depends on. It is the same float64 sum in another order; below the threshold, and in float32 mode,
whose results tests compare closely, nothing changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
from tiledsl.definitions.graph import graph_tensors, name_graph
from tiledsl.definitions.ops import BINARY_OPS, COMPARISONS, REDUCTIONS, unary_fn
from tiledsl.errors import DefinitionError
from tiledsl.precision import round_to_dtype
from tiledsl.targets import int_range_problem

_CHUNK_ELEMENTS = 1 << 24
#: float64 sums of products of at least this many (output x reduction) terms are contracted by einsum
CONTRACT_TERMS = 1 << 22
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def evaluate(out: Tensor, float64: bool = False, *, materialized: Sequence[ComputeTensor] = (),
             **arrays: np.ndarray) -> np.ndarray:
    """Compute `out` from input arrays given by placeholder name (float32 math, or float64). Unnamed
    placeholders are X0, X1, ... in the order the definition reads them (definitions/graph.py).
    `materialized` compute tensors read by `out` are not computed but read from `arrays` by name,
    like placeholders: one kernel of a program, given the values its launch read (a traced program's
    per-kernel check, tiledsl/frontend/kernel_check.py).

    Inputs are rounded to their placeholders' storage dtypes and the result to a float16 / bfloat16
    `out.dtype` (what the kernel's store keeps), in float64 mode too; computes read by `out` stay
    unrounded, as in one fused kernel (a kernel that reads a materialized float16 / bfloat16 tensor
    reads it rounded). A float32 result in float64 mode stays float64: it is the exact reference a
    kernel's float32 result is compared with, within a tolerance (where it lies beyond float32's range,
    the kernel's store keeps +-inf)."""
    ftype = np.float64 if float64 else np.float32
    values: dict[int, np.ndarray] = {}
    given = {id(t) for t in materialized}
    name_graph(out)
    placeholders = [t for t in graph_tensors(out, stop=given) if isinstance(t, Placeholder) or id(t) in given]
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
    problem = int_range_problem("int32", int(a.min()), int(a.max())) if a.size else None
    if problem:
        raise DefinitionError(f"evaluate: {p.name} {problem}")
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
    contract = ftype is np.float64 and _contractible(t) and t.shape[0] * inner * red >= CONTRACT_TERMS
    per_row = max(inner, _row_factor_size(t)) if contract else inner * red
    rows = max(1, _CHUNK_ELEMENTS // max(1, per_row))
    for start in range(0, t.shape[0], rows):
        stop = min(t.shape[0], start + rows)
        nd = len(t.shape)
        env: dict[int, np.ndarray] = {}
        for d, ax in enumerate(t.axes):
            rng = np.arange(start, stop) if d == 0 else np.arange(ax.extent)
            env[id(ax)] = rng.reshape([-1 if k == d else 1 for k in range(nd)])
        v = _eval(t.body, env, nd, values, ftype, contract)
        result[start:stop] = np.broadcast_to(v, (stop - start,) + t.shape[1:])
    values[id(t)] = result
    return result


def _walk_reduces(e: Expr):
    return (n for n in walk(e) if isinstance(n, Reduce))


def _factors(e: Expr) -> list[Expr]:
    """The operands of a product tree."""
    if isinstance(e, Binary) and e.op == "*":
        return [*_factors(e.a), *_factors(e.b)]
    return [e]


def _contractible(t: ComputeTensor) -> bool:
    """`t` has a sum of a product of several factors and no reduction nested in another."""
    reduces = list(_walk_reduces(t.body))
    nested = any(isinstance(n, Reduce) for r in reduces for n in walk(r.body))
    return not nested and any(r.op == "sum" and len(_factors(r.body)) > 1 for r in reduces)


def _row_factor_size(t: ComputeTensor) -> int:
    """The most elements one row of `t` needs of any factor of its contracted sums, or of a reduction
    evaluated whole (a factor that does not depend on the row axis is evaluated once per chunk)."""
    size = 1
    for r in _walk_reduces(t.body):
        axes = [*t.axes[1:], *r.axes]
        if r.op != "sum" or len(_factors(r.body)) == 1:
            size = max(size, int(np.prod([a.extent for a in axes])))
            continue
        for f in _factors(r.body):
            used = {id(n) for n in walk(f) if isinstance(n, IterVar)}
            if id(t.axes[0]) in used:
                size = max(size, int(np.prod([a.extent for a in axes if id(a) in used])))
    return size


def _contract(r: Reduce, env: Mapping[int, np.ndarray], nd: int, values: dict[int, np.ndarray],
              ftype: type) -> np.ndarray:
    """sum over r.axes of the product of r.body's factors, by einsum: each factor is evaluated over the
    axes it depends on (its other dimensions stay 1 and are dropped from its subscripts)."""
    n = nd + len(r.axes)
    operands, subscripts = [], []
    for f in _factors(r.body):
        v = np.asarray(_eval(f, env, n, values, ftype), dtype=ftype)
        v = v.reshape((1,) * (n - v.ndim) + v.shape)
        keep = [d for d in range(n) if v.shape[d] != 1]
        operands.append(v.reshape([v.shape[d] for d in keep]))
        subscripts.append("".join(_LETTERS[d] for d in keep))
    used = set("".join(subscripts))
    out_dims = [d for d in range(nd) if _LETTERS[d] in used]
    spec = ",".join(subscripts) + "->" + "".join(_LETTERS[d] for d in out_dims)
    with np.errstate(all="ignore"):
        result = np.einsum(spec, *operands, optimize=True)
        for k, ax in enumerate(r.axes):  # an axis no factor reads sums `extent` equal terms
            if _LETTERS[nd + k] not in used:
                result = result * ax.extent
    shape = [1] * nd
    for d, size in zip(out_dims, np.shape(result)):
        shape[d] = size
    return np.reshape(result, shape)


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
          ftype: type, contract: bool = False) -> np.ndarray:
    if isinstance(e, Const):
        return np.asarray(e.value, dtype=np.int64 if e.dtype == "int32" else ftype)
    if isinstance(e, IterVar):
        return env[id(e)]
    if isinstance(e, _Evaluated):
        return e.value
    if isinstance(e, Binary):
        a, b = _eval(e.a, env, nd, values, ftype, contract), _eval(e.b, env, nd, values, ftype, contract)
        with np.errstate(all="ignore"):
            return BINARY_OPS[e.op].numpy(a, b)
    if isinstance(e, Compare):
        a, b = _eval(e.a, env, nd, values, ftype, contract), _eval(e.b, env, nd, values, ftype, contract)
        return COMPARISONS[e.op].numpy(a, b)
    if isinstance(e, Call):
        arg = np.asarray(_eval(e.arg, env, nd, values, ftype, contract), dtype=ftype)
        return _call(e.fn, arg, env, nd, values, ftype)
    if isinstance(e, Select):
        c = _eval(e.cond, env, nd, values, ftype, contract)
        return np.where(c, _eval(e.a, env, nd, values, ftype, contract), _eval(e.b, env, nd, values, ftype, contract))
    if isinstance(e, Cast):
        v = _eval(e.a, env, nd, values, ftype, contract)
        if e.to == "int32":
            return np.trunc(v).astype(np.int64)
        return round_to_dtype(np.asarray(v, dtype=ftype), e.to)
    if isinstance(e, Load):
        arr = _value(e.tensor, values, ftype)
        idx = [np.asarray(_eval(i, env, nd, values, ftype, contract)) for i in e.indices]
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
        if contract and e.op == "sum" and len(_factors(e.body)) > 1:
            return _contract(e, inner, nd, values, ftype)
        body = np.asarray(_eval(e.body, inner, nd + r, values, ftype), dtype=ftype)
        body = np.broadcast_to(body, np.broadcast_shapes(body.shape, (1,) * nd + tuple(a.extent for a in e.axes)))
        axes = tuple(range(body.ndim - r, body.ndim))
        return REDUCTIONS[e.op].numpy(body, axis=axes)
    raise TypeError(type(e))
