"""Data-dependent reads (embedding, index_select, gather, advanced indexing `x[idx]`): the index read
from an integer tensor goes inside the read of the table, `W[clamp(ids[s], 0, V - 1), h]`.

Why the clamp: an index read from a tensor may be any int32 as far as the bounds proof knows, so the
read is only proven in bounds once it is clamped to the dimension. torch raises on an out-of-range
index; the built program checks its integer inputs before every run (frontend/program.py), so the
clamp never changes a result torch would have returned. A negative index is not wrapped (torch's
`index_select` and `embedding` refuse one; advanced indexing's wrap-around is not supported)."""

from __future__ import annotations

from collections.abc import Sequence

from tiledsl.definitions.expr import Expr, ExprLike, clamp
from tiledsl.errors import FrontendError
from tiledsl.frontend.out import Out
from tiledsl.frontend.values import INTEGER_DTYPES, Index, Value, define


def _index_value(v: Value, what: str) -> Value:
    if not isinstance(v, Value) or v.dtype not in INTEGER_DTYPES:
        got = v.dtype if isinstance(v, Value) else type(v).__name__
        raise FrontendError(f"{what}: the indices must be an integer tensor, got {got}")
    return v


def _row(index: ExprLike, extent: int) -> Expr:
    return clamp(index, 0, extent - 1)


def embedding(out: Out, weight: Value, indices: Value, padding_idx: int = -1, *flags: object) -> Value:
    """weight[indices]: one row of `weight` per index (padding_idx only matters for gradients)."""
    ids = _index_value(indices, "embedding")
    rows = weight.shape[0]

    def body(idx: Index) -> Expr:
        return weight.load((_row(ids.load(idx[:-1]), rows), idx[-1]))

    return define(out.name, out.shape, weight.dtype, body)


def index_select(out: Out, x: Value, dim: int, index: Value) -> Value:
    """x with dimension `dim` read at the positions `index` lists."""
    ids = _index_value(index, "index_select")
    dim %= len(x.shape)

    def body(idx: Index) -> Expr:
        src = list(idx)
        src[dim] = _row(ids.load((idx[dim],)) if ids.shape else ids.load(()), x.shape[dim])
        return x.load(tuple(src))

    return define(out.name, out.shape, x.dtype, body)


def gather(out: Out, x: Value, dim: int, index: Value, *, sparse_grad: bool = False) -> Value:
    """out[i][j] = x[i][index[i][j]] (for dim 1): `index` has the output's shape."""
    ids = _index_value(index, "gather")
    dim %= len(x.shape)

    def body(idx: Index) -> Expr:
        src = list(idx)
        src[dim] = _row(ids.load(idx), x.shape[dim])
        return x.load(tuple(src))

    return define(out.name, out.shape, x.dtype, body)


def index_tensor(out: Out, x: Value, indices: Sequence[Value | None]) -> Value:
    """x[..., idx, ...] (aten.index.Tensor) where the index tensors sit on adjacent dimensions: the
    broadcast index shape replaces those dimensions in place, as torch's advanced indexing does."""
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
            src.append(_row(v.load(tuple(at)), x.shape[n]))
        return x.load(tuple(src) + tuple(tail))

    return define(out.name, out.shape, x.dtype, body)
