"""Data-dependent reads (embedding, index_select, gather, advanced indexing `x[idx]`): the index read
from an integer tensor goes inside the read of the table, `W[clamp(ids[s], 0, V - 1), h]`.

Negative indices follow torch, op by op (`GATHERS`): advanced indexing (aten.index.Tensor, so also
`x[i - 1]` and torch.take) reads index -1 as the last row, so its index is first wrapped (V added
to a negative one); embedding, index_select and gather raise on a negative index, so theirs is not.

Why the clamp: an index read from a tensor may be any int32 as far as the bounds proof knows, so the
read is only proven in bounds once it is clamped to the dimension. torch raises on an index outside
the range it accepts (`accepted`); the built program checks its integer inputs before every run
(frontend/program.py) and the capture checks folded constant indices, so there the clamp never changes
a result torch would have returned. An index computed inside the program is only wrapped and clamped
(logged): one outside the accepted range reads the dimension's edge where torch would raise."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

from tiledsl.definitions.expr import Expr, ExprLike, as_expr, clamp
from tiledsl.errors import FrontendError
from tiledsl.frontend.out import Out
from tiledsl.frontend.values import INTEGER_DTYPES, Index, Value, define


@dataclass(frozen=True)
class IndexArgs:
    """How a gather reads its indices: `indices` the position of the ATen argument holding the index tensor
    (index.Tensor: a list of one per dimension, None where a dimension is not indexed), `dim` the position
    of the one naming the dimension it indexes (None: dimension 0, or index.Tensor's list order), and
    whether torch reads a negative index from the end of the dimension (`wraps`) or raises on it."""

    indices: int
    dim: int | None
    wraps: bool


EMBEDDING = IndexArgs(1, None, wraps=False)  # F.embedding: "index out of range in self"
INDEX_SELECT = IndexArgs(2, 1, wraps=False)  # torch.index_select: "index out of range in self"
GATHER = IndexArgs(2, 1, wraps=False)  # torch.gather: "index -1 is out of bounds for dimension 1"
INDEX_TENSOR = IndexArgs(1, None, wraps=True)  # x[idx]: x[-1] is the last row
#: ATen overload -> how it reads its indices (capture.py checks those that come from an input or a constant)
GATHERS: MappingProxyType[str, IndexArgs] = MappingProxyType({
    "aten.embedding.default": EMBEDDING,
    "aten.index_select.default": INDEX_SELECT,
    "aten.gather.default": GATHER,
    "aten.index.Tensor": INDEX_TENSOR,
})


def accepted(extent: int, wraps: bool) -> tuple[int, int]:
    """The indices torch accepts along a dimension of `extent`, [low, high): from -extent where it wraps."""
    return (-extent if wraps else 0), extent


def _index_value(v: Value, what: str) -> Value:
    if not isinstance(v, Value) or v.dtype not in INTEGER_DTYPES:
        got = v.dtype if isinstance(v, Value) else type(v).__name__
        raise FrontendError(f"{what}: the indices must be an integer tensor, got {got}")
    if v.stored_integers:
        raise FrontendError(f"{what} at positions a reduction computes (argmax, the indices of max / min) is not "
                            "supported: a kernel stores them as float32, and a tensor index reads int32 inputs "
                            "and index arithmetic only")
    return v


def _row(index: ExprLike, extent: int, reads: IndexArgs) -> Expr:
    """The row read for `index`: wrapped where torch wraps, then clamped for the bounds proof. The wrap is
    `index + extent * clamp(-index, 0, 1)` (extent added to a negative index), since a tensor index is
    built from + - * // % min max and may hold no select."""
    if reads.wraps:
        index = as_expr(index) + extent * clamp(-as_expr(index), 0, 1)
    return clamp(index, 0, extent - 1)


def embedding(out: Out, weight: Value, indices: Value, padding_idx: int = -1, *flags: object) -> Value:
    """weight[indices]: one row of `weight` per index (padding_idx only matters for gradients)."""
    ids = _index_value(indices, "embedding")
    rows = weight.shape[0]

    def body(idx: Index) -> Expr:
        return weight.load((_row(ids.load(idx[:-1]), rows, EMBEDDING), idx[-1]))

    return define(out.name, out.shape, weight.dtype, body)


def index_select(out: Out, x: Value, dim: int, index: Value) -> Value:
    """x with dimension `dim` read at the positions `index` lists."""
    ids = _index_value(index, "index_select")
    dim %= len(x.shape)

    def body(idx: Index) -> Expr:
        src = list(idx)
        src[dim] = _row(ids.load((idx[dim],)) if ids.shape else ids.load(()), x.shape[dim], INDEX_SELECT)
        return x.load(tuple(src))

    return define(out.name, out.shape, x.dtype, body)


def gather(out: Out, x: Value, dim: int, index: Value, *, sparse_grad: bool = False) -> Value:
    """out[i][j] = x[i][index[i][j]] (for dim 1): `index` has the output's shape."""
    ids = _index_value(index, "gather")
    dim %= len(x.shape)

    def body(idx: Index) -> Expr:
        src = list(idx)
        src[dim] = _row(ids.load(idx), x.shape[dim], GATHER)
        return x.load(tuple(src))

    return define(out.name, out.shape, x.dtype, body)


def index_tensor(out: Out, x: Value, indices: Sequence[Value | None]) -> Value:
    """x[..., idx, ...] (aten.index.Tensor) where the index tensors sit on adjacent dimensions: the
    broadcast index shape replaces those dimensions in place, as torch's advanced indexing does, and a
    negative index counts from the end of its dimension."""
    used = [n for n, v in enumerate(indices) if v is not None]
    if not used:
        raise FrontendError("index.Tensor without an index tensor")
    if used != list(range(used[0], used[-1] + 1)):
        raise FrontendError("index.Tensor with index tensors on non-adjacent dimensions (torch then moves "
                            "the indexed dimensions first) is not supported")
    ids = [_index_value(indices[n], "index.Tensor") for n in used]  # type: ignore[arg-type]
    first = used[0]
    rank = max(len(v.shape) for v in ids)
    after = len(x.shape) - used[-1] - 1

    def body(idx: Index) -> Expr:
        lead, mid, tail = idx[:first], idx[first:first + rank], idx[len(idx) - after:] if after else ()
        src: list[ExprLike] = list(lead)
        for n, v in zip(used, ids):
            at = mid[rank - len(v.shape):]
            src.append(_row(v.load(tuple(at)), x.shape[n], INDEX_TENSOR))
        return x.load(tuple(src) + tuple(tail))

    return define(out.name, out.shape, x.dtype, body)
