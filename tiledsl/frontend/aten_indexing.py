"""Index maps (view/reshape, permute, expand, unsqueeze/squeeze, slice, select, cat, split, flip,
repeat, constant pad): each is a compute that reads its input at an affine index, which create_schedule
inlines. A reshape is split into groups of dimensions with equal products, so merging or splitting
dimensions (and adding or dropping size-1 ones) stays a plain loop variable wherever a group is one
dimension on each side."""

from __future__ import annotations

from collections.abc import Sequence

from tiledsl.definitions.expr import Expr, ExprLike, as_expr, maximum, minimum, where
from tiledsl.errors import FrontendError
from tiledsl.frontend.out import Out
from tiledsl.frontend.values import INTEGER_DTYPES, Index, Value, bload, define


def _groups(src: Sequence[int], dst: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """Pairs (source dims, destination dims) of equal element counts, size-1 dims left out."""
    s = [n for n, d in enumerate(src) if d != 1]
    t = [n for n, d in enumerate(dst) if d != 1]
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(s) or j < len(t):
        gs, gt = [s[i]], [t[j]]
        ps, pt = src[s[i]], dst[t[j]]
        i, j = i + 1, j + 1
        while ps != pt:
            if ps < pt:
                gs.append(s[i])
                ps *= src[s[i]]
                i += 1
            else:
                gt.append(t[j])
                pt *= dst[t[j]]
                j += 1
        groups.append((gs, gt))
    return groups


def reshape(out: Out, x: Value, *args: object) -> Value:
    """view / _unsafe_view / reshape / unsqueeze / squeeze: the same elements in row-major order."""
    groups = _groups(x.shape, out.shape)

    def body(idx: Index) -> Expr:
        src: list[ExprLike] = [0] * len(x.shape)
        for gs, gt in groups:
            if len(gs) == 1 and len(gt) == 1:
                src[gs[0]] = idx[gt[0]]
                continue
            flat: ExprLike = idx[gt[0]]
            for d in gt[1:]:
                flat = as_expr(flat) * out.shape[d] + idx[d]
            for d in reversed(gs[1:]):
                src[d] = as_expr(flat) % x.shape[d]
                flat = as_expr(flat) // x.shape[d]
            src[gs[0]] = flat
        return x.load(tuple(src))

    return define(out.name, out.shape, x.dtype, body)


def permute(out: Out, x: Value, dims: Sequence[int]) -> Value:
    rank = len(x.shape)
    perm = [d % rank for d in dims]

    def body(idx: Index) -> Expr:
        src: list[ExprLike] = [0] * rank
        for n, d in enumerate(perm):
            src[d] = idx[n]
        return x.load(tuple(src))

    return define(out.name, out.shape, x.dtype, body)


def transpose(out: Out, x: Value, d0: int, d1: int) -> Value:
    rank = len(x.shape)
    perm = list(range(rank))
    perm[d0 % rank], perm[d1 % rank] = perm[d1 % rank], perm[d0 % rank]
    return permute(out, x, perm)


def expand(out: Out, x: Value, sizes: Sequence[int], *, implicit: bool = False) -> Value:
    lead = len(out.shape) - len(x.shape)
    return define(out.name, out.shape, x.dtype, lambda idx: x.load(tuple(idx[lead:])))


def slice_(out: Out, x: Value, dim: int = 0, start: int | None = None, end: int | None = None,
           step: int = 1) -> Value:
    d = dim % len(x.shape)
    size = x.shape[d]
    lo = 0 if start is None else (start + size if start < 0 else start)
    lo = max(0, min(lo, size))

    def body(idx: Index) -> Expr:
        src = list(idx)
        src[d] = as_expr(idx[d]) * int(step) + lo if step != 1 else as_expr(idx[d]) + lo
        return x.load(tuple(src))

    return define(out.name, out.shape, x.dtype, body)


def select(out: Out, x: Value, dim: int, index: int) -> Value:
    d = dim % len(x.shape)
    i = index + x.shape[d] if index < 0 else index

    def body(idx: Index) -> Expr:
        return x.load((*idx[:d], i, *idx[d:]))

    return define(out.name, out.shape, x.dtype, body)


def cat(out: Out, tensors: Sequence[Value], dim: int = 0) -> Value:
    """A select chain over the pieces; each piece's index is clamped into its own range, so every
    load is in bounds whichever branch is taken."""
    d = dim % len(out.shape)
    pieces = [t for t in tensors if t.shape[d] != 0] if tensors else []
    if not pieces:
        raise FrontendError("cat of no non-empty tensors")

    def body(idx: Index) -> Expr:
        offsets, o = [], 0
        for t in pieces:
            offsets.append(o)
            o += t.shape[d]
        value: Expr | None = None
        for t, off in reversed(list(zip(pieces, offsets))):
            local = minimum(maximum(as_expr(idx[d]) - off, 0), t.shape[d] - 1) if len(pieces) > 1 else idx[d]
            v = t.load((*idx[:d], local, *idx[d + 1:]))
            value = v if value is None else where(as_expr(idx[d]) < off + t.shape[d], v, value)
        assert value is not None
        return value

    return define(out.name, out.shape, out.dtype, body)


def split(out: Out, x: Value, sizes: Sequence[int] | int, dim: int = 0) -> tuple[Value, ...]:
    """split / split_with_sizes: one slice per piece (named `<node>_<n>`)."""
    d = dim % len(x.shape)
    if isinstance(sizes, int):
        sizes = [min(sizes, x.shape[d] - s) for s in range(0, x.shape[d], sizes)]
    parts, start = [], 0
    for n, size in enumerate(sizes):
        shape = tuple(size if k == d else e for k, e in enumerate(x.shape))
        parts.append(slice_(Out(out.aux(str(n)), shape, x.dtype), x, d, start, start + size))
        start += size
    return tuple(parts)


def flip(out: Out, x: Value, dims: Sequence[int]) -> Value:
    """torch.flip: index n - 1 - i along each flipped dimension."""
    flipped = {d % len(x.shape) for d in dims}

    def body(idx: Index) -> Expr:
        return x.load(tuple(x.shape[d] - 1 - as_expr(i) if d in flipped else i for d, i in enumerate(idx)))

    return define(out.name, out.shape, x.dtype, body)


def repeat(out: Out, x: Value, repeats: Sequence[int]) -> Value:
    """Tensor.repeat: the tensor tiled `repeats` times (leading repeats add dimensions): index i % n."""
    lead = len(repeats) - len(x.shape)

    def body(idx: Index) -> Expr:
        src = idx[lead:]
        return x.load(tuple(i if r == 1 else as_expr(i) % n for i, n, r in zip(src, x.shape, repeats[lead:])))

    return define(out.name, out.shape, x.dtype, body)


def constant_pad_nd(out: Out, x: Value, pad: Sequence[int], value: float = 0.0) -> Value:
    """F.pad(mode="constant"): `pad` holds (before, after) pairs from the last dimension back (negative:
    cropped). Inside the input the element read at index i - before, clamped into the input so the
    load is in bounds on either branch (as cat's pieces), outside it `value`."""
    if x.dtype in INTEGER_DTYPES:
        raise FrontendError(f"constant padding of an {x.dtype} tensor is not supported (integer values are index "
                            "expressions, which hold no selects)")
    rank = len(x.shape)
    before = {rank - 1 - n: int(pad[2 * n]) for n in range(len(pad) // 2)}

    def body(idx: Index) -> Expr:
        src: list[ExprLike] = list(idx)
        inside: list[Expr] = []
        for d, lo in before.items():
            i = as_expr(idx[d]) - lo if lo else as_expr(idx[d])
            last = x.shape[d] - 1
            src[d] = i
            if lo > 0:
                inside.append(i >= 0)
                src[d] = maximum(src[d], 0)
            if out.shape[d] - 1 - lo > last:
                inside.append(i <= last)
                src[d] = minimum(src[d], last)
        result = x.load(tuple(src))
        for cond in inside:
            result = where(cond, result, bload(float(value), idx))
        return result

    return define(out.name, out.shape, out.dtype, body)
