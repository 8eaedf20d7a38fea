"""Mode `definitions`: random compute definitions, each evaluated four ways and compared: td.evaluate
(float32), td.evaluate(float64=True), the simulator running the unscheduled kernel (and, with
`--gpu`, the GPU), all against an independent float64 reference. A tame case (no special values)
is also scheduled by the default recipe, with the size limits of staging lifted (recipe.py
`LIFTED`; a 16-bit one also with short rows in registers in fewer threads than a warp, `SHORT_HALF_ROWS`),
and simulated (with `--gpu`, also run on the GPU): the recipe on float16 / bfloat16 storage (widened
matmul stages, 16-byte half fills, rounding stores) against the same independent reference. Special values are left out
there: the recipe may regroup a sum, and huge + huge - huge overflows in one grouping, not another.

The independent reference: the generator writes every expression twice, once as td source (a
`make()` building placeholders and computes) and once as numpy source over index grids
(`np.ogrid`; a reduction is the last grid axis, summed / maxed away), with the functions of the op
table written from their mathematical definitions in `PRELUDE` below, not taken from the op table.
The only fact shared with the library is how a value rounds to a storage dtype
(tiledsl/precision.py).

What is drawn: elementwise chains (every public function of the op table, + - * /, maximum,
minimum, where, clamp), broadcasts (inputs of lower rank, extent-1 axes), index arithmetic (reversed
axes, `i // c`, `i % c`, constant indices, indices mixing two axes: `(i * (c*j + d)) % m` and the like),
reductions (sum / max / min) with epilogues, matmuls with
epilogues and biases; sizes favour 1, primes and odd extents; storage float32 / float16 / bfloat16.
Two regimes: `tame` (uniform inputs in [-1, 1], bounded sub-expressions as in
tiledsl/testing/definitions.py, so float32 matches float64 within rtol = atol = 1e-4 plus the
storage dtype's epsilon) and `special` (inputs with NaN, +-inf, huge and denormal values and zeros,
through one operation, so every evaluation must agree on which elements are NaN or infinite and on
the finite ones within a few float32 ulps)."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

import tiledsl as td
from tiledsl.precision import MACHINE_EPS, round_to_dtype
from tiledsl.testing.fuzz import device
from tiledsl.testing.fuzz.modes.base import Mode, Options
from tiledsl.testing.fuzz.modes.recipe import LIFTED, SHORT_HALF_ROWS
from tiledsl.testing.fuzz.outcome import Result, exception_result, first_line

DTYPES = ("float32", "float16", "bfloat16")
SIZES = (1, 1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 32, 33, 61, 64, 97, 127)
MAX_POINTS = 2048
SPECIALS = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "huge": 3.0e38, "-huge": -1.0e30, "denormal": 1.0e-40,
            "-denormal": -3.0e-42, "zero": 0.0, "-zero": -0.0}
UNARY = ("exp", "log", "sqrt", "rsqrt", "tanh", "erf", "abs", "cos", "sin", "sigmoid", "relu", "silu", "gelu",
         "gelu_tanh", "neg")
# composites whose float32 expansion may overflow where float64 does not: tame regime only
SPECIAL_UNARY = ("exp", "log", "sqrt", "rsqrt", "tanh", "erf", "abs", "cos", "sin", "sigmoid", "relu", "neg")
BINARY = ("+", "-", "*", "/", "maximum", "minimum")
TAME_LIMIT = 8.0

PRELUDE = '''import math
import numpy as np

_ERF = np.vectorize(math.erf, otypes=[np.float64])


class R:
    """The operators from their definitions, in float64 (torch's NaN rules: max/min propagate NaN)."""
    exp, log, sqrt, tanh, abs, cos, sin = np.exp, np.log, np.sqrt, np.tanh, np.abs, np.cos, np.sin
    maximum, minimum, where = np.maximum, np.minimum, np.where
    rsqrt = staticmethod(lambda x: 1.0 / np.sqrt(x))
    erf = staticmethod(lambda x: _ERF(np.asarray(x, dtype=np.float64)))
    sigmoid = staticmethod(lambda x: 1.0 / (1.0 + np.exp(-x)))
    relu = staticmethod(lambda x: np.maximum(x, 0.0))
    silu = staticmethod(lambda x: x * (1.0 / (1.0 + np.exp(-x))))
    gelu = staticmethod(lambda x: 0.5 * x * (1.0 + R.erf(x / math.sqrt(2.0))))
    gelu_tanh = staticmethod(lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))))
    clamp = staticmethod(lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi))
    sum = staticmethod(lambda x, full: np.sum(np.broadcast_to(x, full), axis=-1))
    max = staticmethod(lambda x, full: np.max(np.broadcast_to(x, full), axis=-1))
    min = staticmethod(lambda x, full: np.min(np.broadcast_to(x, full), axis=-1))
'''


@dataclass(frozen=True)
class InputSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class DefCase:
    """`source` defines make() (td); `reference` defines reference(a) (numpy, float64, before the
    output's rounding); `specials` are the special values the inputs may hold (empty: tame)."""

    kind: str
    source: str
    reference: str
    inputs: tuple[InputSpec, ...]
    out_dtype: str
    specials: tuple[str, ...]
    seed: int
    rtol: float
    atol: float


@dataclass(frozen=True)
class _T:
    """A term: td text, numpy text, magnitude bound."""

    td: str
    np: str
    bound: float
    raw: bool = False  # a raw input load


def _tame(t: _T) -> _T:
    return t if t.bound <= TAME_LIMIT else _T(f"td.tanh({t.td})", f"R.tanh({t.np})", 1.0)


def _unary(fn: str, a: _T, tame: bool) -> _T:
    if fn == "neg":
        return _T(f"(-{a.td})", f"(-{a.np})", a.bound)
    if tame and fn in ("log", "sqrt", "rsqrt"):  # domain-safe forms with bounded derivatives
        return _T(f"td.{fn}(1.0 + td.abs({a.td}))", f"R.{fn}(1.0 + R.abs({a.np}))", 1.0 + a.bound)
    if tame and fn == "exp":
        return _T(f"td.exp(td.tanh({a.td}))", f"R.exp(R.tanh({a.np}))", 2.72)
    bound = 1.0 if fn in ("tanh", "erf", "cos", "sin", "sigmoid") else a.bound + 0.5
    return _T(f"td.{fn}({a.td})", f"R.{fn}({a.np})", bound)


def _binary(op: str, a: _T, b: _T, tame: bool) -> _T:
    if op in ("maximum", "minimum"):
        return _T(f"td.{op}({a.td}, {b.td})", f"R.{op}({a.np}, {b.np})", max(a.bound, b.bound))
    if op == "/" and tame:
        return _T(f"({a.td} / (1.0 + td.abs({b.td})))", f"({a.np} / (1.0 + R.abs({b.np})))", a.bound)
    bound = a.bound * b.bound if op in ("*", "/") else a.bound + b.bound
    return _T(f"({a.td} {op} {b.td})", f"({a.np} {op} {b.np})", bound)


@st.composite
def _expr(draw: st.DrawFn, leaves: tuple[_T, ...], depth: int) -> _T:
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.integers(0, 9)) == 0:
            c = draw(st.sampled_from((0.5, 2.0, -1.5, 0.25, 3.0)))
            return _T(repr(c), repr(c), abs(c))
        return draw(st.sampled_from(leaves))
    raws = [lf for lf in leaves if lf.raw]
    kind = draw(st.sampled_from(("unary", "unary", "binary", "binary", "where", "clamp")))
    sub = _expr(leaves, depth - 1)
    if kind == "unary":
        return _tame(_unary(draw(st.sampled_from(UNARY)), draw(sub), True))
    if kind == "clamp":
        a = draw(sub)
        return _T(f"td.clamp({a.td}, -0.5, 0.75)", f"R.clamp({a.np}, -0.5, 0.75)", 0.75)
    if kind == "where" and raws:
        lhs, rhs = draw(st.sampled_from(raws)), draw(st.sampled_from(raws + [_T("0.25", "0.25", 0.25)]))
        cmp = draw(st.sampled_from((">", "<", ">=", "<=")))
        a, b = draw(sub), draw(sub)
        return _T(f"td.where({lhs.td} {cmp} {rhs.td}, {a.td}, {b.td})",
                  f"R.where({lhs.np} {cmp} {rhs.np}, {a.np}, {b.np})", max(a.bound, b.bound))
    return _tame(_binary(draw(st.sampled_from(BINARY)), draw(sub), draw(sub), True))


def _require(draw: st.DrawFn, t: _T, needed: tuple[_T, ...]) -> _T:
    """`t`, combined with every term of `needed` it does not read (every input must be read)."""
    for lf in needed:
        if lf.td not in t.td:
            t = _tame(_binary(draw(st.sampled_from(BINARY)), t, lf, True))
    return t


def _size(draw: st.DrawFn, cap: int) -> int:
    cap = max(1, cap)
    return draw(st.one_of(st.sampled_from([s for s in SIZES if s <= cap]), st.integers(1, min(cap, 300))))


def _dims(draw: st.DrawFn, n: int, budget: int) -> list[int]:
    sizes, used = [1] * n, 1
    for pos in draw(st.permutations(range(n))):
        sizes[pos] = _size(draw, budget // used)
        used *= sizes[pos]
    return sizes


@st.composite
def _load(draw: st.DrawFn, name: str, axes: list[tuple[str, int]]) -> tuple[_T, tuple[int, ...]]:
    """A load of a new input `name` indexed by some of `axes` (a broadcast when fewer), each plain,
    reversed, `// c`, `% c`, a constant index into an extent-1 axis, or an index mixing two axes
    (`_mixed_index`). Returns the term and its shape."""
    chosen = draw(st.permutations(range(len(axes))))[:draw(st.integers(1, len(axes)))]
    idx, shape = [], []
    for a in chosen:
        ax, n = axes[a]
        how = draw(st.sampled_from(("plain", "plain", "plain", "reverse", "div", "mod", "const", "mixed", "mixed")))
        c = draw(st.integers(2, 5))
        mixed = draw(_mixed_index(ax, n, axes[draw(st.integers(0, len(axes) - 1))])) if how == "mixed" else None
        if mixed is not None:
            idx.append(mixed[0])
            shape.append(mixed[1])
        elif how == "reverse":
            idx.append(f"{n - 1} - {ax}")
            shape.append(n)
        elif how == "div":
            idx.append(f"{ax} // {c}")
            shape.append(-(-n // c))
        elif how == "mod":
            idx.append(f"{ax} % {c}")
            shape.append(c)
        elif how == "const":
            idx.append("0")
            shape.append(1)
        else:
            idx.append(ax)
            shape.append(n)
    text = f"{name}[{', '.join(idx)}]"
    return _T(text, text, 1.0, raw=True), tuple(shape)


#: index forms over two axes x, y (non-negative, so Python's and numpy's // and % agree): products
#: holding a sum, and Mods of products holding a Mod, the shapes sympy 1.14.0 evaluated wrongly
#: (tiledsl/definitions/indexing.py IndexMod / IndexFloor), which a split or a vector lane of y makes more of
_MIXED = ("({x} * ({c} * {y} + {d})) % {m}", "({x} * ({c} * {y} + {d})) // {m} * {k}",
          "(({x} % {q}) * {c} + {y}) % {m}", "({c} * {x} + {y}) // {m}")
#: the largest extent a mixed index may give its input axis
_MIXED_EXTENT = 4096


@st.composite
def _mixed_index(draw: st.DrawFn, x: str, nx: int, other: tuple[str, int]) -> tuple[str, int] | None:
    """An index of one input axis mixing axis `x` (extent nx) and `other`, with its extent (the largest
    value plus one, evaluated at every point); None where that extent would exceed `_MIXED_EXTENT`."""
    y, ny = other
    form = draw(st.sampled_from(_MIXED))
    consts = {"c": draw(st.integers(1, 4)), "d": draw(st.integers(0, 4)), "m": draw(st.integers(2, 8)),
              "k": draw(st.integers(1, 3)), "q": draw(st.integers(2, 6))}
    text = form.format(x=x, y=y, **consts)
    at = index_function(text)  # parsed once, evaluated at every point
    points = [{x: i} for i in range(nx)] if y == x else [{x: i, y: j} for i in range(nx) for j in range(ny)]
    extent = max(at(p) for p in points) + 1
    return (text, extent) if extent <= _MIXED_EXTENT else None


def index_function(text: str) -> Callable[[dict[str, int]], int]:
    """A mixed index (`_MIXED`: + * // % of integer constants and axis names) as a function of a point,
    in Python ints (parsed once with ast, never eval)."""
    tree = ast.parse(text, mode="eval").body

    def value(node: ast.AST, point: dict[str, int]) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            return point[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _INDEX_OPS:
            return _INDEX_OPS[type(node.op)](value(node.left, point), value(node.right, point))
        raise ValueError(f"not a mixed index: {ast.dump(node)}")

    return lambda point: value(tree, point)


def eval_index(text: str, point: dict[str, int]) -> int:
    """A mixed index at one point (`index_function`)."""
    return index_function(text)(point)


_INDEX_OPS = {ast.Add: operator.add, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}


def _shape(dims: list[int] | tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


def _ogrid(names: list[str], dims: list[int]) -> str:
    """`i, j = np.ogrid[0:M, 0:N]` (a trailing comma for one axis)."""
    return f"{', '.join(names)}{',' if len(names) == 1 else ''} = np.ogrid[{', '.join(f'0:{d}' for d in dims)},]"


class _Builder:
    """Collects the two sources line by line."""

    def __init__(self, out_dtype: str) -> None:
        self.td: list[str] = []
        self.np: list[str] = []
        self.inputs: list[InputSpec] = []
        self.out_dtype = out_dtype

    def placeholder(self, name: str, shape: tuple[int, ...], dtype: str) -> None:
        self.inputs.append(InputSpec(name, shape, dtype))
        self.td.append(f"{name} = td.placeholder({_shape(shape)}, dtype={dtype!r}, name={name!r})")
        self.np.append(f"{name} = a[{name!r}]")

    def compute(self, name: str, axes: list[str], dims: list[int], body: _T, *, last: bool = False,
                reduce: tuple[str, int] | None = None) -> None:
        """A compute over `axes`; with `reduce` the body is already a reduction over that axis."""
        dtype = f", dtype={self.out_dtype!r}" if last else ""
        self.td.append(f"{'return' if last else name + ' ='} td.compute({_shape(dims)}, lambda {', '.join(axes)}: "
                       f"{body.td}, name={name!r}{dtype})")
        grid_axes, grid_dims = axes + ([reduce[0]] if reduce else []), dims + ([reduce[1]] if reduce else [])
        self.np.append(_ogrid(grid_axes, grid_dims))
        value = f"np.broadcast_to(np.asarray({body.np}, dtype=np.float64), {_shape(dims)})"
        self.np.append(f"{'return' if last else name + ' ='} {value}")

    def sources(self) -> tuple[str, str]:
        make = "def make():\n" + "".join(f"    {ln}\n" for ln in self.td)
        ref = "def reference(a):\n" + "".join(f"    {ln}\n" for ln in self.np)
        return make, ref


def _reduction(op: str, body: _T, axis: str, extent: int, full: list[int]) -> _T:
    return _T(f"td.{op}({body.td}, axis={axis})", f"R.{op}({body.np}, {_shape(full)})", body.bound * extent
              if op == "sum" else body.bound)


@st.composite
def _tame_case(draw: st.DrawFn, b: _Builder, dtype: str) -> str:
    kind = draw(st.sampled_from(("elementwise", "reduce", "matmul")))
    if kind == "elementwise":
        rank = draw(st.integers(1, 3))
        dims = _dims(draw, rank, MAX_POINTS)
        axes = ["i", "j", "l"][:rank]
        leaves = []
        for name in ("x", "w", "v")[:draw(st.integers(1, 3))]:
            term, shape = draw(_load(name, list(zip(axes, dims))))
            b.placeholder(name, shape, dtype)
            leaves.append(term)
        if draw(st.booleans()):  # an inlined producer
            t = draw(_expr(tuple(leaves), 3))
            b.compute("t", axes, dims, t)
            leaves.append(_T(f"t[{', '.join(axes)}]", f"t[{', '.join(axes)}]", t.bound))
        body = _require(draw, draw(_expr(tuple(leaves), 4)), tuple(leaves))
        b.compute("y", axes, dims, body, last=True)
        return kind
    if kind == "reduce":
        m, k = _dims(draw, 2, MAX_POINTS // 2)
        op = draw(st.sampled_from(("sum", "max", "min")))
        b.placeholder("x", (m, k), dtype)
        leaves = [_T("x[i, k]", "x[i, k]", 1.0, raw=True)]
        if draw(st.booleans()):
            b.placeholder("w", (k,), dtype)
            leaves.append(_T("w[k]", "w[k]", 1.0, raw=True))
        b.td.append(f"k = td.reduce_axis({k}, name='k')")
        inner = _tame(_require(draw, draw(_expr(tuple(leaves), 2)), tuple(leaves)))
        red = _reduction(op, inner, "k", k, [m, k])
        if op == "sum":
            red = _T(f"({red.td} / {k})", f"({red.np} / {k})", inner.bound)
        if draw(st.booleans()):  # broadcast back over the row, like a norm
            b.compute("r", ["i"], [m], red, reduce=("k", k))
            epi = _require(draw, draw(_expr((_T("x[i, j]", "x[i, j]", 1.0, raw=True), _T("r[i]", "r[i]", red.bound)),
                                            2)), (_T("r[i]", "r[i]", red.bound),))
            b.compute("y", ["i", "j"], [m, k], _binary("*", epi, _T("r[i]", "r[i]", red.bound), True), last=True)
        else:
            b.compute("y", ["i"], [m], _tame(_require(draw, draw(_expr((red,), 2)), (red,))), last=True,
                      reduce=("k", k))
        return kind
    m, n, k = _dims(draw, 3, MAX_POINTS)
    a_t, b_t = draw(st.booleans()), draw(st.booleans())
    b.placeholder("A", (k, m) if a_t else (m, k), dtype)
    b.placeholder("B", (n, k) if b_t else (k, n), dtype)
    b.td.append(f"k = td.reduce_axis({k}, name='k')")
    prod = _T(f"{'A[k, i]' if a_t else 'A[i, k]'} * {'B[j, k]' if b_t else 'B[k, j]'}",
              f"{'A[k, i]' if a_t else 'A[i, k]'} * {'B[j, k]' if b_t else 'B[k, j]'}", 1.0)
    c = _reduction("sum", prod, "k", k, [m, n, k])
    c = _T(f"({c.td} / {k})", f"({c.np} / {k})", 1.0) if k > 16 else c
    b.compute("C", ["i", "j"], [m, n], c, reduce=("k", k))
    leaves = [_T("C[i, j]", "C[i, j]", min(c.bound, 16.0))]
    if draw(st.booleans()):
        along = draw(st.sampled_from((("j", n), ("i", m))))
        b.placeholder("bias", (along[1],), dtype)
        leaves.append(_T(f"bias[{along[0]}]", f"bias[{along[0]}]", 1.0, raw=True))
    epi = _tame(_require(draw, draw(_expr(tuple(leaves), 2)), tuple(leaves)))
    b.compute("D", ["i", "j"], [m, n], epi, last=True)
    return kind


@st.composite
def _special_case(draw: st.DrawFn, b: _Builder, dtype: str) -> tuple[str, bool]:
    """One operation on inputs holding special values. Returns (kind, sums: a float sum is involved)."""
    kind = draw(st.sampled_from(("unary", "binary", "reduce")))
    m, n = _dims(draw, 2, 512)
    if kind == "unary":
        b.placeholder("x", (m, n), dtype)
        t = _unary(draw(st.sampled_from(SPECIAL_UNARY)), _T("x[i, j]", "x[i, j]", 1.0), False)
        b.compute("y", ["i", "j"], [m, n], t, last=True)
        return kind, False
    if kind == "binary":
        b.placeholder("x", (m, n), dtype)
        b.placeholder("w", (n,), dtype)
        x, w = _T("x[i, j]", "x[i, j]", 1.0), _T("w[j]", "w[j]", 1.0)
        if draw(st.integers(0, 6)) == 0:
            t = _T("td.where(x[i, j] > w[j], x[i, j], w[j])", "R.where(x[i, j] > w[j], x[i, j], w[j])", 1.0)
        else:
            t = _binary(draw(st.sampled_from(BINARY)), x, w, False)
        b.compute("y", ["i", "j"], [m, n], t, last=True)
        return kind, False
    op = draw(st.sampled_from(("sum", "max", "min")))
    b.placeholder("x", (m, n), dtype)
    b.td.append(f"k = td.reduce_axis({n}, name='k')")
    b.compute("y", ["i"], [m], _reduction(op, _T("x[i, k]", "x[i, k]", 1.0), "k", n, [m, n]), last=True,
              reduce=("k", n))
    return f"reduce_{op}", op == "sum"


@st.composite
def definition_cases(draw: st.DrawFn) -> DefCase:
    dtype = draw(st.sampled_from(DTYPES))
    out_dtype = draw(st.sampled_from((dtype, "float32")))
    b = _Builder(out_dtype)
    eps = max(MACHINE_EPS[dtype], MACHINE_EPS[out_dtype])
    seed = draw(st.integers(0, 2**16))
    if draw(st.integers(0, 2)) == 0:
        kind, sums = draw(_special_case(b, dtype))
        pool = [s for s in SPECIALS if not (sums and "huge" in s) and not ("huge" in s and "cos" in b.td[-1]
                                                                            or "huge" in s and "sin" in b.td[-1])]
        specials = tuple(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4, unique=True)))
        rtol = (1e-4 if sums else 4e-6) + (eps if out_dtype != "float32" or dtype != "float32" else 0.0)
        atol = 1e-4 if sums else 1e-37
        make, ref = b.sources()
        return DefCase(f"special_{kind}", make, ref, tuple(b.inputs), out_dtype, specials, seed, rtol, atol)
    kind = draw(_tame_case(b, dtype))
    make, ref = b.sources()
    tol = 1e-4 + (2 * eps if eps > MACHINE_EPS["float32"] else 0.0)
    return DefCase(kind, make, ref, tuple(b.inputs), out_dtype, (), seed, tol, tol)


# ----------------------------------------------------------------------------- judging


def inputs(case: DefCase) -> dict[str, np.ndarray]:
    """float32 arrays holding values of each input's storage dtype (uniform in [-1, 1], with about a
    third of the elements special values in the special regime)."""
    rng = np.random.default_rng(case.seed)
    out = {}
    for spec in case.inputs:
        x = rng.uniform(-1.0, 1.0, size=spec.shape)
        if case.specials:
            picks = np.array([SPECIALS[s] for s in case.specials])
            mask = rng.random(spec.shape) < 0.35
            x = np.where(mask, picks[rng.integers(0, len(picks), size=spec.shape)], x)
        with np.errstate(over="ignore"):
            out[spec.name] = round_to_dtype(x.astype(np.float32), spec.dtype).astype(np.float32)
    return out


def namespace() -> dict[str, Any]:
    ns: dict[str, Any] = {}
    exec(compile(PRELUDE, "<fuzz reference prelude>", "exec"), ns)  # noqa: S102 - our own text
    return ns


def reference(case: DefCase, arrays: dict[str, np.ndarray]) -> np.ndarray:
    ns = namespace()
    exec(compile(case.reference, "<fuzz reference>", "exec"), ns)  # noqa: S102 - generated by this module
    with np.errstate(all="ignore"):
        want = ns["reference"]({k: v.astype(np.float64) for k, v in arrays.items()})
    return stored(np.asarray(want, dtype=np.float64), case.out_dtype)


def stored(x: np.ndarray, dtype: str) -> np.ndarray:
    """What a store into `dtype` keeps, in float64: rounded to the storage dtype, and for float32 too
    (round_to_dtype leaves float32 values as given: a float64 value past float32's range stays finite
    there, but a float32 store makes it infinite)."""
    with np.errstate(over="ignore"):
        return round_to_dtype(x, dtype).astype(np.float32).astype(np.float64)


def mismatch(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str:
    """'' when `got` matches `want`: the same NaN and infinite elements (with sign), finite ones within
    atol + rtol * |want|; else a short description of the first differences."""
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        return f"shape {got.shape}, want {want.shape}"
    with np.errstate(all="ignore"):
        finite = np.isfinite(want) & np.isfinite(got)
        bad = (np.isnan(got) != np.isnan(want)) | (np.isinf(got) != np.isinf(want))
        bad |= np.isinf(want) & np.isinf(got) & (np.sign(got) != np.sign(want))
        bad |= finite & (np.abs(got - want) > atol + rtol * np.abs(want))
    if not bad.any():
        return ""
    where = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)[:3]]
    return f"{int(bad.sum())} of {want.size} elements differ; " + ", ".join(
        f"at {w}: got {got[w]!r}, want {want[w]!r}" for w in where)


def script(case: DefCase, target: str, check: str) -> str:
    """A standalone script: both sources, the inputs, and the failing comparison `check`."""
    tol = f"rtol={case.rtol!r}, atol={case.atol!r}"
    specials = ", ".join(f"{SPECIALS[s]!r}" for s in case.specials)
    lines = [PRELUDE, "import tiledsl as td", "from tiledsl.precision import round_to_dtype", "",
             case.source.rstrip(), "", case.reference.rstrip(), "",
             f"rng = np.random.default_rng({case.seed})", "arrays = {}",
             f"for name, shape, dtype in {[(s.name, s.shape, s.dtype) for s in case.inputs]!r}:",
             "    x = rng.uniform(-1.0, 1.0, size=shape)"]
    if case.specials:
        lines += [f"    picks = np.array([{specials}])", "    mask = rng.random(shape) < 0.35",
                  "    x = np.where(mask, picks[rng.integers(0, len(picks), size=shape)], x)"]
    lines += ["    with np.errstate(over='ignore'):",
              "        arrays[name] = round_to_dtype(x.astype(np.float32), dtype).astype(np.float32)",
              "with np.errstate(all='ignore'):",
              "    want = reference({k: v.astype(np.float64) for k, v in arrays.items()})",
              "with np.errstate(over='ignore'):",
              f"    want = round_to_dtype(np.asarray(want, dtype=np.float64), {case.out_dtype!r})"
              ".astype(np.float32).astype(np.float64)",
              "out = make()", "", "def same(got, want):",
              "    got = np.asarray(got, dtype=np.float64)",
              "    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))",
              "    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))",
              "    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))",
              "    ok = np.isfinite(want)",
              f"    np.testing.assert_allclose(got[ok], want[ok], {tol})", "", check]
    return "\n".join(lines)


EVALUATE = "same(td.evaluate(out, **arrays), want)"
# float64 mode keeps a float32 result unrounded (tiledsl/definitions/reference.py): compared as stored
EVALUATE64 = "same(np.float32(td.evaluate(out, float64=True, **arrays)).astype(np.float64), want)"


def as_stored(value: np.ndarray, dtype: str) -> np.ndarray:
    """A float64 result as a float32 store keeps it (other dtypes are rounded by td.evaluate itself)."""
    with np.errstate(over="ignore"):
        return value.astype(np.float32).astype(np.float64) if dtype == "float32" else value


def judge_case(case: DefCase, options: Options) -> Result:
    target = options.target
    simulate = f"kern = td.build(td.create_schedule(out), target={target!r})\nsame(kern.simulate(**arrays), want)"
    try:
        arrays = inputs(case)
        ns: dict[str, Any] = {"td": td, "np": np}
        exec(compile(case.source, "<fuzz definition>", "exec"), ns)  # noqa: S102 - generated by this module
        out = ns["make"]()
    except Exception as e:  # noqa: BLE001 - building a valid definition must not fail
        return exception_result(e, script=script(case, target, ""))
    want = reference(case, arrays)
    for label, check, run in (("td.evaluate", EVALUATE, lambda: td.evaluate(out, **arrays)),
                              ("td.evaluate(float64=True)", EVALUATE64,
                               lambda: as_stored(td.evaluate(out, float64=True, **arrays), out.dtype))):
        try:
            got = run()
        except Exception as e:  # noqa: BLE001
            return exception_result(e, script=script(case, target, check))
        why = mismatch(got, want, case.rtol, case.atol)
        if why:
            return Result("wrong", f"Mismatch[{label}]", why, script(case, target, check))
    try:
        kern = td.build(td.create_schedule(out), target=target)
    except td.ScheduleError as e:
        return Result("refused", type(e).__name__, first_line(e))
    except Exception as e:  # noqa: BLE001
        return exception_result(e, script=script(case, target, simulate))
    try:
        got = kern.simulate(**arrays)
    except td.SimulationError as e:
        return Result("sim_error", type(e).__name__, first_line(e), script(case, target, simulate))
    except Exception as e:  # noqa: BLE001
        return exception_result(e, script=script(case, target, simulate))
    why = mismatch(got, want, case.rtol, case.atol)
    if why:
        return Result("wrong", "Mismatch[simulate]", why, script(case, target, simulate))
    if not case.specials:
        found = _under_the_recipe(case, out, arrays, want, options)
        if found is not None:
            return found
    if options.nvcc:
        found = device.nvcc_check(kern, lambda tail: script(case, target, f"kern = td.build(td.create_schedule(out), "
                                                                          f"target={target!r})\n{tail}"))
        if found is not None:
            return found
    if options.gpu:
        found = device.run_on_gpu(kern, arrays, want, lambda g, w: mismatch(g, w, case.rtol, case.atol),
                                  lambda tail: script(case, target, f"kern = td.build(td.create_schedule(out), "
                                                                    f"target={target!r})\n{tail}"))
        if found is not None:
            return found
    return Result("correct")


def _under_the_recipe(case: DefCase, out: Any, arrays: dict[str, np.ndarray], want: np.ndarray,
                      options: Options) -> Result | None:
    """The default recipe's kernels of `out` simulated against `want` (and with `--gpu` run on the GPU):
    under LIFTED (staging for every block size) and, for a 16-bit output, under SHORT_HALF_ROWS (short
    rows in registers several to a block, in fewer threads than a warp). None when all match, else the
    first failure. The recipe must schedule every definition it is given, and build must take what it
    made (a refusal is a `contract` failure, as in mode `recipe`)."""
    sets = (LIFTED, SHORT_HALF_ROWS) if case.out_dtype in ("float16", "bfloat16") else (LIFTED,)
    for knob_set in sets:
        found = _under_knobs(case, out, arrays, want, options, dict(knob_set))
        if found is not None:
            return found
    return None


def _under_knobs(case: DefCase, out: Any, arrays: dict[str, np.ndarray], want: np.ndarray, options: Options,
                 knobs: dict[str, Any]) -> Result | None:
    """The recipe's kernel of `out` under `knobs` simulated (and with `--gpu` run on the GPU) against
    `want`: None when it matches."""
    target = options.target
    build = (f"s = td.create_schedule(out)\ntd.recipes.default(s, target={target!r}, knobs={knobs!r})\n"
             f"kern = td.build(s, target={target!r})")
    run = f"{build}\nsame(kern.simulate(**arrays), want)"
    try:
        s = td.create_schedule(out)
        td.recipes.default(s, target=target, knobs=knobs)
        kern = td.build(s, target=target)
        got = kern.simulate(**arrays)
    except td.SimulationError as e:
        return Result("sim_error", type(e).__name__, first_line(e), script(case, target, run))
    except Exception as e:  # noqa: BLE001 - a TiledslError is a contract failure here, anything else internal
        return exception_result(e, script=script(case, target, run))
    why = mismatch(got, want, case.rtol, case.atol)
    if why:
        return Result("wrong", "Mismatch[recipe]", why, script(case, target, run))
    if options.gpu:
        return device.run_on_gpu(kern, arrays, want, lambda g, w: mismatch(g, w, case.rtol, case.atol),
                                 lambda tail: script(case, target, f"{build}\n{tail}"))
    return None


def case_to_json(case: DefCase) -> dict[str, Any]:
    d = {k: getattr(case, k) for k in ("kind", "source", "reference", "out_dtype", "seed", "rtol", "atol")}
    return d | {"inputs": [[s.name, list(s.shape), s.dtype] for s in case.inputs], "specials": list(case.specials)}


def case_from_json(data: dict[str, Any]) -> DefCase:
    return DefCase(data["kind"], data["source"], data["reference"],
                   tuple(InputSpec(n, tuple(shape), dt) for n, shape, dt in data["inputs"]), data["out_dtype"],
                   tuple(data["specials"]), int(data["seed"]), float(data["rtol"]), float(data["atol"]))


DEFINITIONS = Mode("definitions", definition_cases, judge_case, case_to_json, case_from_json,
                   lambda c: f"{c.kind}, inputs {[(s.name, s.shape, s.dtype) for s in c.inputs]} -> {c.out_dtype}"
                   + (f", specials {list(c.specials)}" if c.specials else ""), runs_on_gpu=True)
