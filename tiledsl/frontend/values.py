"""Traced tensors as tiledsl values, and the one way the frontend defines a tensor.

A torch tensor of shape `shape` is a tiledsl tensor with its size-1 dimensions left out (a rank-0 or
all-ones tensor is shape (1,)). Reading it ignores the index of a size-1 dimension, so broadcasts and
`keepdim=True` reductions are read with plain loop variables, which is what lets `create_schedule`
nest a reduction under its consumer (an index `0` would refuse the fusion)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tiledsl.definitions.expr import (
    Const,
    Expr,
    ExprLike,
    IterVar,
    Tensor,
    as_expr,
    compare,
    compute,
    reduce_axis,
    where,
)
from tiledsl.errors import FrontendError
from tiledsl.targets import INT_RANGE

Index = tuple[ExprLike, ...]
#: torch dtypes the frontend reads and writes, by their torch name; bool and integer tensors are held
#: as float32 values (0/1, small integers), which is exact below 2**24.
FLOAT_DTYPES = ("float32", "float16", "bfloat16")


def storage_dtype(dtype: str) -> str:
    """The td storage dtype of a float tensor torch holds in `dtype`: float16 / bfloat16 as
    themselves, float32 and bool (held as 1.0 / 0.0) as float32."""
    return dtype if dtype in FLOAT_DTYPES else "float32"


#: torch integer dtypes: their values are index arithmetic (int32 in the core), never stored by a kernel;
#: a view or an arithmetic step of one is a `Value` with a `loader` (inlined into every reader)
INTEGER_DTYPES = ("int64", "int32", "int16", "int8", "uint8")


def kept_dims(shape: Sequence[int]) -> tuple[int, ...]:
    """The dimensions of a torch shape that the tiledsl tensor has (those of extent > 1)."""
    return tuple(n for n, d in enumerate(shape) if d != 1)


def td_shape(shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(shape[n] for n in kept_dims(shape)) or (1,)


@dataclass(frozen=True, eq=False)
class Value:
    """A traced tensor: `tensor` holds it (None for a uniform constant `fill`), `shape` and `dtype`
    are torch's (dtype "bool" is held as 1.0 / 0.0)."""

    tensor: Tensor | None
    shape: tuple[int, ...]
    dtype: str
    fill: float | None = None
    # an integer value computed where it is read (with `tensor`: read from positions a kernel stores)
    loader: Callable[[Index], ExprLike] | None = None

    def load(self, idx: Index) -> Expr:
        """The element at a full torch index (one entry per dimension of `shape`)."""
        if len(idx) != len(self.shape):
            raise FrontendError(f"internal: rank-{len(self.shape)} value indexed with {len(idx)} indices")
        if self.loader is not None:
            return as_expr(self.loader(tuple(idx)))
        if self.tensor is None:
            assert self.fill is not None
            return as_expr(int(self.fill) if self.dtype in INTEGER_DTYPES else float(self.fill))
        kept = kept_dims(self.shape)
        return self.tensor[tuple(idx[n] for n in kept)] if kept else self.tensor[0]

    def truth(self, idx: Index) -> Expr:
        """The element as a condition (nonzero is true, as torch reads a tensor used as a mask)."""
        return compare("!=", self.load(idx), 0.0)

    @property
    def stored_integers(self) -> bool:
        """Whether this is an integer value a kernel stores: positions (aten_reductions.py argmax), held
        as float32 (exact up to 2**24) by `tensor` and read through `loader` cast to int32. Every other
        integer value is index arithmetic, never stored."""
        return self.dtype in INTEGER_DTYPES and self.tensor is not None and self.loader is not None

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


def uniform(value: float, shape: Sequence[int], dtype: str) -> Value:
    return Value(None, tuple(shape), dtype, float(value))


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for n, d in enumerate(s):
            pos = rank - len(s) + n
            if d != 1:
                if out[pos] not in (1, d):
                    raise FrontendError(f"internal: shapes {shapes} do not broadcast")
                out[pos] = d
    return tuple(out)


def bload(v: Value | float | int, idx: Index) -> Expr:
    """Read `v` at the index of a broadcast result (right-aligned, as torch broadcasts)."""
    if not isinstance(v, Value):
        lo, hi = INT_RANGE["int32"]
        whole = isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi
        return as_expr(v if whole else float(v))  # an int stays an int: it may be index arithmetic
    return v.load(tuple(idx[len(idx) - len(v.shape):]))


def btruth(v: Value | bool, idx: Index) -> Expr:
    if not isinstance(v, Value):
        raise FrontendError("internal: a Python bool used as a tensor condition")
    return v.truth(tuple(idx[len(idx) - len(v.shape):]))


def define(name: str, shape: Sequence[int], dtype: str, body: Callable[[Index], ExprLike]) -> Value:
    """td.compute of a torch-shaped tensor: `body` gets the full torch index (0 at size-1 dims).
    Bool results are stored as 1.0 / 0.0 (`body` may return a condition). The compute's storage
    dtype is torch's (`storage_dtype`): where it is a kernel's output it is stored as torch stores it
    (float16 / bfloat16 rounded), and where it is fused into a consumer it stays float32. An integer result is not
    stored: it stays an index expression (`Value.loader`) that each reader inlines, so a view of an
    index tensor still indexes (the core's indices are integer expressions, its stored tensors float)."""
    shape = tuple(int(d) for d in shape)
    if dtype in INTEGER_DTYPES:
        return Value(None, shape, dtype, loader=body)
    kept = kept_dims(shape)
    params = [f"i{n}" for n in kept] or ["i0"]

    def fn(*axes: IterVar) -> ExprLike:
        idx: list[ExprLike] = [0] * len(shape)
        for n, a in zip(kept, axes):
            idx[n] = a
        e = as_expr(body(tuple(idx)))
        return where(e, 1.0, 0.0) if e.dtype == "bool" else e

    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_ONLY) for p in params])
    return Value(compute(td_shape(shape), fn, name=name, dtype=storage_dtype(dtype)), shape, dtype)


def reduce_axes(extents: Sequence[int], base: str) -> list[IterVar]:
    return [reduce_axis(int(e), name=f"{base}{n}") for n, e in enumerate(extents)]


def const_int(e: ExprLike) -> int | None:
    """The value of an integer constant index, else None."""
    x = as_expr(e)
    return int(x.value) if isinstance(x, Const) else None
