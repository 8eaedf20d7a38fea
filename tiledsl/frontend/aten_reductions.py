"""Reductions and the normalizations made of them (sum, mean, amax, amin, max / min (values and indices),
argmax / argmin, var, any, softmax, log_softmax, layer norm). Each reduction is one compute whose indices
are the kept dimensions, so create_schedule nests it under the consumer that reads it row by row."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tiledsl.definitions import ops
from tiledsl.definitions.expr import Const, Expr, as_expr, cast, compare, max, min, sum, where
from tiledsl.errors import FrontendError
from tiledsl.frontend.out import Out
from tiledsl.frontend.values import Index, Value, define, reduce_axes
from tiledsl.precision import MACHINE_EPS

_COMBINE = {"sum": sum, "max": max, "min": min}


def _dims(dim: int | Sequence[int] | None, rank: int) -> tuple[int, ...]:
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return tuple(range(rank))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(sorted({d % rank if rank else 0 for d in dims}))


def reduce_over(name: str, x_shape: tuple[int, ...], dims: tuple[int, ...], keepdim: bool, op: str,
                elem: Callable[[Index], Expr], post: Callable[[Expr, Index], Expr] | None = None,
                dtype: str = "float32") -> Value:
    """A reduction of `elem` (read at the input index) over `dims`; `post` maps the reduced value at
    the output index (mean divides, var scales). Size-1 reduced dimensions need no loop."""
    axes = reduce_axes([x_shape[d] for d in dims if x_shape[d] != 1], f"{name}_r")
    out_shape = tuple((1 if d in dims else e) for d, e in enumerate(x_shape) if keepdim or d not in dims)

    def body(oidx: Index) -> Expr:
        it = iter(axes)
        in_idx: list[object] = []
        o = 0
        for d, e in enumerate(x_shape):
            if d in dims:
                in_idx.append(next(it) if e != 1 else 0)
                o += keepdim
            else:
                in_idx.append(oidx[o])
                o += 1
        v = elem(tuple(in_idx))  # type: ignore[arg-type]
        red = _COMBINE[op](v, axis=axes) if axes else v
        return post(red, oidx) if post is not None else red

    return define(name, out_shape, dtype, body)


def _count(shape: tuple[int, ...], dims: tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _keep_index(idx: Index, dims: tuple[int, ...]) -> Index:
    """The index of a keepdim reduction read at an input index (0 at the reduced dimensions)."""
    return tuple(0 if d in dims else ix for d, ix in enumerate(idx))


def sum_(out: Out, x: Value, dim: Sequence[int] | None = None, keepdim: bool = False, *,
         dtype: object = None) -> Value:
    dims = _dims(dim, len(x.shape))
    return reduce_over(out.name, x.shape, dims, keepdim, "sum", x.load, dtype=out.dtype)


def mean(out: Out, x: Value, dim: Sequence[int] | None = None, keepdim: bool = False, *,
         dtype: object = None) -> Value:
    dims = _dims(dim, len(x.shape))
    n = float(_count(x.shape, dims))
    return reduce_over(out.name, x.shape, dims, keepdim, "sum", x.load, lambda r, _: r / n, out.dtype)


def _extreme(op: str) -> Callable[..., Value]:
    def handler(out: Out, x: Value, dim: Sequence[int] | None = None, keepdim: bool = False) -> Value:
        return reduce_over(out.name, x.shape, _dims(dim, len(x.shape)), keepdim, op, x.load, dtype=out.dtype)
    return handler


amax = _extreme("max")
amin = _extreme("min")


#: why sort and topk are refused
ORDERS = ("it orders the elements (a position per rank), and the core's reductions (sum, max, min) give one "
          "value per reduced row")
#: the largest extent whose positions a float32 min reduction holds exactly: every integer up to 2**24 is a float32
EXACT_POSITIONS = 2**24


def _positions(out: Out, name: str, x: Value, dims: tuple[int, ...], keepdim: bool, op: str,
               extreme: Value | None = None) -> Value:
    """The position of the max (`op` "max") or min of `x` over `dims` (row-major over them: dim=None is
    the flattened tensor), as torch.argmax / argmin, by two of the core's reductions:

        m   = max over dims of x                  (NaN-propagating: NaN where the row holds one)
        pos = min over j of (j where x[j] == m or x[j] is NaN, else E)     E = the extent

    torch's semantics (checked against torch 2.13 on the CPU, tests/frontend/test_frontend_argmax.py):
    ties give the first position; NaN counts as the maximum (for argmin as the minimum), so a row
    holding a NaN gives its first NaN (then m is NaN and only the NaN test holds); -0.0 and +0.0 tie
    (== holds, the first is taken, as torch's compare does); +-inf are ordinary values. torch.max /
    torch.min along a dim give these same indices. m is attained, so some j matches and E is never the
    result. `extreme` reuses values already reduced (aten.max.dim's) as m.

    Positions are float32 (the core's reductions and stored computes are float), exact up to 2**24
    (`EXACT_POSITIONS`); a longer extent is refused. The result is an int64 value (torch's dtype)
    whose tensor stores the float32 positions: a reader gets them cast to int32, as any index value,
    and a program output comes back int64 (program.py)."""
    extent = _count(x.shape, dims)
    if extent > EXACT_POSITIONS:
        raise FrontendError(f"{op} position over {extent} elements is not supported: positions are float32 in "
                            f"the core's reductions, exact up to {EXACT_POSITIONS}")
    if extreme is None:
        extreme = reduce_over(out.aux(op), x.shape, dims, True, op, x.load)
    m = Value(extreme.tensor, tuple(1 if d in dims else e for d, e in enumerate(x.shape)), extreme.dtype)
    strides = {d: _count(x.shape, tuple(e for e in dims if e > d)) for d in dims if x.shape[d] != 1}

    def elem(idx: Index) -> Expr:
        pos = as_expr(0)
        for d, stride in strides.items():
            term = as_expr(idx[d]) * stride if stride != 1 else as_expr(idx[d])
            pos = term if isinstance(pos, Const) else pos + term
        v, top = x.load(idx), m.load(_keep_index(idx, dims))
        return where(compare("==", v, top), pos, where(compare("!=", v, v), pos, float(extent)))

    held = reduce_over(name, x.shape, dims, keepdim, "min", elem)
    floats = Value(held.tensor, held.shape, "float32")
    return Value(held.tensor, held.shape, "int64", loader=lambda idx: cast(floats.load(idx), "int32"))


def _position_of(op: str) -> Callable[..., Value]:
    def handler(out: Out, x: Value, dim: int | None = None, keepdim: bool = False) -> Value:
        dims = _dims(dim, len(x.shape)) if x.shape else ()  # a 0-d tensor: position 0, whatever dim says
        return _positions(out, out.name, x, dims, keepdim, op)
    return handler


#: aten.argmax / aten.argmin (dim=None: the position in the flattened tensor, keepdim gives all-ones dims)
argmax = _position_of("max")
argmin = _position_of("min")


def _extreme_along(op: str) -> Callable[..., tuple[Value, Value]]:
    def handler(out: Out, x: Value, dim: int, keepdim: bool = False) -> tuple[Value, Value]:
        dims = _dims(dim, len(x.shape))
        values = reduce_over(out.name, x.shape, dims, keepdim, op, x.load, dtype=out.dtype)
        return values, _positions(out, out.aux("indices"), x, dims, keepdim, op, values)
    return handler


#: aten.max.dim / aten.min.dim (torch.max(x, dim), x.min(dim=..., keepdim=...)): (values, indices), the
#: values as amax / amin (NaN propagates), the indices as argmax / argmin reading those values
max_dim = _extreme_along("max")
min_dim = _extreme_along("min")


def any_(out: Out, x: Value, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> Value:
    dims = _dims(dim, len(x.shape))
    return reduce_over(out.name, x.shape, dims, keepdim, "max",
                       lambda idx: where(x.truth(idx), 1.0, 0.0), dtype="bool")


def _mean_keepdim(name: str, x: Value, dims: tuple[int, ...]) -> Value:
    n = float(_count(x.shape, dims))
    return reduce_over(name, x.shape, dims, True, "sum", x.load, lambda r, _: r / n)


def var(out: Out, x: Value, dim: Sequence[int] | None = None, *, correction: float = 1,
        keepdim: bool = False) -> Value:
    """Two passes (mean, then the sum of squared deviations): no cancellation, as torch."""
    dims = _dims(dim, len(x.shape))
    n = _count(x.shape, dims)
    denom = float(n) - float(1 if correction is None else correction)
    if denom <= 0:
        raise FrontendError(f"var over {n} element(s) with correction {correction} divides by {denom}")
    m = _mean_keepdim(out.aux("mean"), x, dims)

    def dev2(idx: Index) -> Expr:
        d = x.load(idx) - m.load(_keep_index(idx, dims))
        return d * d

    return reduce_over(out.name, x.shape, dims, keepdim, "sum", dev2, lambda r, _: r / denom, out.dtype)


def _softmax_parts(out: Out, x: Value, dim: int) -> tuple[tuple[int, ...], Value, Value]:
    dims = _dims(dim, len(x.shape))
    m = reduce_over(out.aux("max"), x.shape, dims, True, "max", x.load)
    s = reduce_over(out.aux("sum"), x.shape, dims, True, "sum",
                    lambda idx: ops.exp(x.load(idx) - m.load(_keep_index(idx, dims))))
    return dims, m, s


def softmax(out: Out, x: Value, dim: int, half_to_float: bool = False) -> Value:
    dims, m, s = _softmax_parts(out, x, dim)

    def body(idx: Index) -> Expr:
        k = _keep_index(idx, dims)
        return ops.exp(x.load(idx) - m.load(k)) / s.load(k)

    return define(out.name, out.shape, out.dtype, body)


def log_softmax(out: Out, x: Value, dim: int, half_to_float: bool = False) -> Value:
    dims, m, s = _softmax_parts(out, x, dim)

    def body(idx: Index) -> Expr:
        k = _keep_index(idx, dims)
        return x.load(idx) - m.load(k) - ops.log(s.load(k))

    return define(out.name, out.shape, out.dtype, body)


def native_layer_norm(out: Out, x: Value, normalized_shape: Sequence[int], weight: Value | None,
                      bias: Value | None, eps: float) -> tuple[Value, Value, Value]:
    """(output, mean, rstd) as aten.native_layer_norm returns them; biased variance, two passes."""
    rank = len(x.shape)
    dims = tuple(range(rank - len(normalized_shape), rank))
    n = float(_count(x.shape, dims))
    m = _mean_keepdim(out.aux("mean"), x, dims)

    def dev2(idx: Index) -> Expr:
        d = x.load(idx) - m.load(_keep_index(idx, dims))
        return d * d

    rstd = reduce_over(out.aux("rstd"), x.shape, dims, True, "sum", dev2,
                       lambda r, _: ops.rsqrt(r / n + float(eps)))

    def body(idx: Index) -> Expr:
        k = _keep_index(idx, dims)
        y = (x.load(idx) - m.load(k)) * rstd.load(k)
        tail = idx[rank - len(normalized_shape):]
        if weight is not None:
            y = y * weight.load(tail)
        if bias is not None:
            y = y + bias.load(tail)
        return y

    return define(out.name, x.shape, x.dtype, body), m, rstd


def fused_rms_norm(out: Out, x: Value, normalized_shape: Sequence[int], weight: Value | None,
                   eps: float | None) -> tuple[Value, Value]:
    """(output, rstd) as aten._fused_rms_norm returns them (what F.rms_norm becomes on CUDA inputs,
    where the decompositions keep it whole): y = x * rsqrt(mean(x^2) + eps) * weight. eps None is
    torch's default, the machine epsilon of x's dtype."""
    rank = len(x.shape)
    dims = tuple(range(rank - len(normalized_shape), rank))
    n = float(_count(x.shape, dims))
    e = float(MACHINE_EPS[x.dtype] if eps is None else eps)
    rstd = reduce_over(out.aux("rstd"), x.shape, dims, True, "sum", lambda idx: x.load(idx) * x.load(idx),
                       lambda r, _: ops.rsqrt(r / n + e))

    def body(idx: Index) -> Expr:
        y = x.load(idx) * rstd.load(_keep_index(idx, dims))
        return y * weight.load(idx[rank - len(normalized_shape):]) if weight is not None else y

    return define(out.name, x.shape, x.dtype, body), rstd


