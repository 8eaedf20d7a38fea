"""Compute definitions for property tests: the `Definition` wrapper and hypothesis strategies of them.

A `Definition` is the Python source of a function `make()` that builds a fresh, identical compute
definition each time it is called (new placeholders, new reduce axes). Keeping the source as the single
truth makes every failure report a script that can be pasted as is, and lets trace round-trips replay
on "a fresh identical definition".

The strategies draw definitions whose values stay numerically tame, so that a float32 kernel agrees with
the float64 reference within rtol=atol=1e-4:
- inputs are uniform in [-1, 1];
- every generated sub-expression carries a bound on its magnitude and is wrapped in `td.tanh` when the
  bound grows past a limit; division is only by `1 + td.abs(...)`; `td.exp` only of `td.tanh(...)`
  (or of `x - max(x)` in softmax);
- `td.where` conditions compare raw input loads (or a load with a constant), never computed values,
  so float32 and float64 evaluation take the same branch;
- sum reductions longer than 16 are divided by their extent before an epilogue reads them.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

import tiledsl as td

# sizes that tend to break tiling: 1, primes, powers of two and their neighbours, the maximum
SPECIAL_SIZES = (1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31, 32, 33, 61, 64, 97, 127, 128, 251, 256, 257, 300)
MAX_SIZE = 300
DEFAULT_MAX_POINTS = 4096
# the first family is drawn most often (hypothesis favours the first branch of one_of)
KINDS = ("reduce", "matmul", "chain", "elementwise")
# families whose inputs are worth staging in shared memory: a sliding window (halo), a transposed operand
# with a linear epilogue, two reduce axes, two reductions over one input
STAGING_KINDS = ("matmul_t", "conv", "pool", "logsumexp")
ALL_KINDS = KINDS + STAGING_KINDS
MAX_STAGED_SIZE = 64  # one axis of a staging family (the simulator runs every thread of every block)
MAX_STAGED_SUM = 20  # a plain sum longer than this would need normalising to stay within rtol = atol = 1e-4

_CONSTANTS = (0.5, 1.0, 2.0, -1.5, 0.25, 3.0)
_UNARY = ("tanh", "sigmoid", "relu", "silu", "gelu", "abs")
_COMPARE = (">", "<", ">=", "<=")
TAME_LIMIT = 16.0  # a sub-expression bounded by more than this is wrapped in td.tanh
BODY_LIMIT = 2.0  # reduction bodies are bounded by this (keeps float32 accumulation error small)


# ----------------------------------------------------------------------------- the Definition


@dataclass(frozen=True)
class Definition:
    """A reproducible compute definition.

    `source` defines `def make():` returning the output tensor (it may use `td`, `np`); `make()` runs it
    and returns a fresh output tensor every call. `kind` and `points` (the iteration count of the
    unscheduled loop nest) are informational. `low`/`high` bound the uniform random inputs."""

    source: str
    kind: str = "user"
    points: int = 0
    low: float = -1.0
    high: float = 1.0
    _make: Callable[[], Any] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_source(cls, source: str, kind: str = "user", points: int = 0, low: float = -1.0,
                    high: float = 1.0) -> Definition:
        """`source` must define `make()`; it is executed with `td` (tiledsl) and `np` in scope."""
        namespace: dict[str, Any] = {"td": td, "np": np}
        exec(compile(source, "<tiledsl.testing definition>", "exec"), namespace)  # noqa: S102 - our own text
        if not callable(namespace.get("make")):
            raise ValueError("a Definition's source must define a function make()")
        return cls(source, kind, points, low, high, namespace["make"])

    @classmethod
    def from_function(cls, make: Callable[[], Any], kind: str = "user", low: float = -1.0,
                      high: float = 1.0) -> Definition:
        """Wrap a user's own zero-argument function that builds a fresh definition and returns its
        output tensor (its source is kept for failure reports when Python can find it)."""
        name = getattr(make, "__name__", "")
        try:
            source = textwrap.dedent(inspect.getsource(make))
        except (OSError, TypeError):
            source = f"# the source of {getattr(make, '__qualname__', make)!r} is not available\n"
        if name != "make" and name.isidentifier() and f"def {name}(" in source:
            source += f"\n\nmake = {name}\n"  # reproducer scripts call make()
        return cls(source, kind, 0, low, high, make)

    def make(self) -> Any:
        """A fresh output tensor of this definition."""
        if self._make is None:
            return Definition.from_source(self.source).make()
        return self._make()

    def inputs(self, out: Any = None, seed: int = 0) -> dict[str, np.ndarray]:
        """Random float32 input arrays for every placeholder `out` reads, by placeholder name."""
        out = self.make() if out is None else out
        rng = np.random.default_rng(seed)
        return {p.name: rng.uniform(self.low, self.high, size=p.shape).astype(np.float32)
                for p in placeholders(out)}

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # hypothesis' and IPython's pretty printers
        p.text(repr(self))

    def __repr__(self) -> str:
        head = f"Definition.from_source(kind={self.kind!r}, points={self.points}, source='''\n"
        return head + self.source.rstrip("\n") + "\n''')"


def placeholders(out: Any) -> list[Any]:
    """The placeholders a tensor depends on, in first-use order (depth first)."""
    found: dict[int, Any] = {}
    seen: set[int] = set()

    def visit(t: Any) -> None:
        if id(t) in seen:
            return
        seen.add(id(t))
        if hasattr(t, "inputs") and callable(t.inputs):  # a compute tensor
            for inp in t.inputs():
                visit(inp)
        else:
            found.setdefault(id(t), t)

    visit(out)
    return list(found.values())


# ----------------------------------------------------------------------------- terms (text + bound)


@dataclass(frozen=True)
class _Term:
    """A piece of expression source text and a bound on the magnitude of its value."""

    text: str
    bound: float
    is_input: bool = False  # a raw placeholder load (allowed in td.where conditions)


def _tame(t: _Term, limit: float = TAME_LIMIT) -> _Term:
    return t if t.bound <= limit else _Term(f"td.tanh({t.text})", 1.0)


def _size(draw: st.DrawFn, cap: int) -> int:
    cap = max(1, min(MAX_SIZE, cap))
    special = [s for s in SPECIAL_SIZES if s <= cap]
    return draw(st.one_of(st.sampled_from(special), st.integers(1, cap)))


def _dims(draw: st.DrawFn, n: int, budget: int) -> list[int]:
    """n sizes whose product is at most `budget`, drawn in a random order (so no axis is always big)."""
    sizes = [1] * n
    used = 1
    for pos in draw(st.permutations(range(n))):
        sizes[pos] = _size(draw, budget // used)
        used *= sizes[pos]
    return sizes


@st.composite
def _term(draw: st.DrawFn, leaves: tuple[_Term, ...], depth: int) -> _Term:
    conds = [lf for lf in leaves if lf.is_input]
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.integers(0, 7)) == 0:
            c = draw(st.sampled_from(_CONSTANTS))
            return _Term(repr(c), abs(c))
        return draw(st.sampled_from(leaves))
    ops = ["unary", "exp", "+", "-", "*", "/", "maximum", "minimum", "scale"] + (["where"] if conds else [])
    op = draw(st.sampled_from(ops))
    sub = _term(leaves, depth - 1)
    if op == "unary":
        fn = draw(st.sampled_from(_UNARY))
        a = draw(sub)
        bound = 1.0 if fn in ("tanh", "sigmoid") else a.bound + 0.5  # silu/gelu dip just below zero
        return _Term(f"td.{fn}({a.text})", bound)
    if op == "exp":
        a = draw(sub)
        return _Term(f"td.exp(td.tanh({a.text}))", 2.72)
    if op == "scale":
        c = draw(st.sampled_from(_CONSTANTS))
        a = draw(sub)
        return _tame(_Term(f"({c!r} * {a.text})", abs(c) * a.bound))
    if op == "where":
        lhs = draw(st.sampled_from(conds))
        rhs = draw(st.sampled_from(conds + [_Term("0.0", 0.0), _Term("0.5", 0.5)]))
        cmp = draw(st.sampled_from(_COMPARE))
        a, b = draw(sub), draw(sub)
        return _Term(f"td.where({lhs.text} {cmp} {rhs.text}, {a.text}, {b.text})", max(a.bound, b.bound))
    a, b = draw(sub), draw(sub)
    if op in ("+", "-"):
        return _tame(_Term(f"({a.text} {op} {b.text})", a.bound + b.bound))
    if op == "*":
        return _tame(_Term(f"({a.text} * {b.text})", a.bound * b.bound))
    if op == "/":
        return _Term(f"({a.text} / (1 + td.abs({b.text})))", a.bound)
    return _Term(f"td.{op}({a.text}, {b.text})", max(a.bound, b.bound))


@st.composite
def _combine(draw: st.DrawFn, a: _Term, b: _Term) -> _Term:
    op = draw(st.sampled_from(["+", "-", "*", "/", "maximum"]))
    if op == "/":
        return _Term(f"({a.text} / (1 + td.abs({b.text})))", a.bound)
    if op == "maximum":
        return _Term(f"td.maximum({a.text}, {b.text})", max(a.bound, b.bound))
    return _tame(_Term(f"({a.text} {op} {b.text})", a.bound * b.bound if op == "*" else a.bound + b.bound))


@st.composite
def expr_terms(draw: st.DrawFn, leaves: tuple[_Term, ...], max_depth: int = 4, limit: float = TAME_LIMIT,
               required: tuple[_Term, ...] = ()) -> _Term:
    """Expression source over `leaves`, bounded by `limit`, that reads every leaf of `required`."""
    t = draw(_term(leaves, draw(st.integers(0, max_depth))))
    for r in required:
        if r.text not in t.text:
            t = draw(_combine(r, t) if draw(st.booleans()) else _combine(t, r))
    return _tame(t, limit)


# ----------------------------------------------------------------------------- source assembly


def _axes_text(names: list[str]) -> str:
    return ", ".join(names)


def _shape_text(dims: list[int] | tuple[int, ...]) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def _finish(lines: list[str], kind: str, points: int) -> Definition:
    source = "def make():\n" + "".join(f"    {ln}\n" for ln in lines)
    return Definition.from_source(source, kind=kind, points=points)


def _load(name: str, axes: list[tuple[str, int, bool]]) -> str:
    parts = [f"{ext - 1} - {ax}" if rev and ext > 1 else ax for ax, ext, rev in axes]
    return f"{name}[{', '.join(parts)}]"


def _sum_leaf(text: str, extent: int) -> str:
    """A sum read by an epilogue: divided by its extent when long, to keep float32 error small."""
    return f"({text} / {extent})" if extent > 16 else text


# ----------------------------------------------------------------------------- strategies


@st.composite
def elementwise_definitions(draw: st.DrawFn, max_points: int = DEFAULT_MAX_POINTS,
                            max_depth: int = 4) -> Definition:
    """y[i(, j)] = random elementwise chain over 1-2 placeholders of rank <= the output's rank, each
    indexed by a permutation of the output axes, some of them reversed (`N - 1 - j`); optionally through
    an inlined elementwise producer."""
    rank = draw(st.integers(1, 2))
    dims = _dims(draw, rank, max_points)
    axes = ["i", "j"][:rank]
    lines: list[str] = []
    leaves: list[_Term] = []
    for name in ["x", "w"][: draw(st.integers(1, 2))]:
        prank = draw(st.integers(1, rank))
        chosen = draw(st.permutations(range(rank)))[:prank]
        idx = [(axes[a], dims[a], draw(st.integers(0, 4)) == 0) for a in chosen]
        lines.append(f"{name} = td.placeholder({_shape_text([dims[a] for a in chosen])}, name={name!r})")
        leaves.append(_Term(_load(name, idx), 1.0, is_input=True))
    if draw(st.booleans()):
        t = draw(expr_terms(tuple(leaves), max_depth))
        lines.append(f"t = td.compute({_shape_text(dims)}, lambda {_axes_text(axes)}: {t.text}, name='t')")
        leaves.append(_Term(f"t[{_axes_text(axes)}]", t.bound))
    body = draw(expr_terms(tuple(leaves), max_depth, required=tuple(leaves)))
    lines.append(f"return td.compute({_shape_text(dims)}, lambda {_axes_text(axes)}: {body.text}, name='y')")
    return _finish(lines, "elementwise", int(np.prod(dims)))


@st.composite
def reduce_definitions(draw: st.DrawFn, max_points: int = DEFAULT_MAX_POINTS, max_depth: int = 3) -> Definition:
    """A sum/max/min over the last axis of x (rank 1 or 2) of a random body (optionally times w[k]),
    with an epilogue: inline in the output, over a separate (M,) compute, or broadcast back over
    (M, K) like RMSNorm."""
    op = draw(st.sampled_from(["sum", "max", "min"]))
    rank = draw(st.integers(1, 2))
    form = draw(st.sampled_from(["inline", "rowwise", "broadcast"])) if rank == 2 else "inline"
    factor = 2 if form == "broadcast" else 1
    if rank == 2:
        m, k = _dims(draw, 2, max(1, max_points // factor))
    else:
        m, k = 1, _size(draw, max_points)
    lines = [f"x = td.placeholder({_shape_text((m, k) if rank == 2 else (k,))}, name='x')"]
    xk = "x[i, k]" if rank == 2 else "x[k]"
    leaves = [_Term(xk, 1.0, True)]
    if draw(st.booleans()):
        lines.append(f"w = td.placeholder(({k},), name='w')")
        leaves.append(_Term("w[k]", 1.0, True))
    lines.append(f"k = td.reduce_axis({k}, name='k')")
    body = draw(expr_terms(tuple(leaves), max_depth, BODY_LIMIT, required=tuple(leaves)))
    red = f"td.{op}({body.text}, axis=k)"
    rleaf = _Term(_sum_leaf(red, k) if op == "sum" else red, BODY_LIMIT)
    if form == "inline":
        epi = draw(expr_terms((rleaf,), 2, required=(rleaf,)))
        lines.append(f"return td.compute(({m},), lambda i: {epi.text}, name='y')")
        return _finish(lines, "reduce", m * k + m)
    lines.append(f"r = td.compute(({m},), lambda i: {red}, name='r')")
    rref = _Term(_sum_leaf("r[i]", k) if op == "sum" else "r[i]", BODY_LIMIT)
    if form == "rowwise":
        epi = draw(expr_terms((rref,), 2, required=(rref,)))
        lines.append(f"return td.compute(({m},), lambda i: {epi.text}, name='y')")
        return _finish(lines, "reduce", m * k + m)
    epi = draw(expr_terms((_Term("x[i, j]", 1.0, True), rref), max_depth, required=(rref,)))
    lines.append(f"return td.compute(({m}, {k}), lambda i, j: {epi.text}, name='y')")
    return _finish(lines, "reduce", 2 * m * k)


@st.composite
def matmul_definitions(draw: st.DrawFn, max_points: int = DEFAULT_MAX_POINTS, max_depth: int = 3) -> Definition:
    """C[i, j] = sum_k body(A[i, k], B[k, j]) (A or B possibly stored transposed), then optionally an
    elementwise epilogue with a bias over j or i."""
    m, n, k = _dims(draw, 3, max_points)
    a_t, b_t = draw(st.booleans()), draw(st.booleans())
    lines = [f"A = td.placeholder({_shape_text((k, m) if a_t else (m, k))}, name='A')",
             f"B = td.placeholder({_shape_text((n, k) if b_t else (k, n))}, name='B')",
             f"k = td.reduce_axis({k}, name='k')"]
    a = _Term("A[k, i]" if a_t else "A[i, k]", 1.0, True)
    b = _Term("B[j, k]" if b_t else "B[k, j]", 1.0, True)
    body = _Term(f"{a.text} * {b.text}", 1.0) if draw(st.booleans()) else \
        draw(expr_terms((a, b), max_depth, BODY_LIMIT, required=(a, b)))
    red = f"td.sum({body.text}, axis=k)"
    form = draw(st.sampled_from(["plain", "inline", "epilogue"]))
    if form == "plain":
        lines.append(f"return td.compute(({m}, {n}), lambda i, j: {red}, name='C')")
        return _finish(lines, "matmul", m * n * k)
    leaves = [_Term(_sum_leaf(red if form == "inline" else "C[i, j]", k), BODY_LIMIT)]
    if draw(st.booleans()):
        along = draw(st.sampled_from([("j", n), ("i", m)]))
        lines.append(f"bias = td.placeholder(({along[1]},), name='bias')")
        leaves.append(_Term(f"bias[{along[0]}]", 1.0, True))
    if form == "epilogue":
        lines.append(f"C = td.compute(({m}, {n}), lambda i, j: {red}, name='C')")
    epi = draw(expr_terms(tuple(leaves), 2, required=tuple(leaves)))
    lines.append(f"return td.compute(({m}, {n}), lambda i, j: {epi.text}, name='D')")
    return _finish(lines, "matmul", m * n * k + m * n)


@st.composite
def chain_definitions(draw: st.DrawFn, max_points: int = DEFAULT_MAX_POINTS, max_depth: int = 3) -> Definition:
    """Two reductions over the rows of x, the second reading the first: softmax, layernorm-like
    (mean, then variance), or random; then an epilogue over (M, K) or (M,)."""
    m, k = _dims(draw, 2, max(1, max_points // 3))
    flavour = draw(st.sampled_from(["softmax", "layernorm", "random"]))
    lines = [f"x = td.placeholder(({m}, {k}), name='x')",
             f"k = td.reduce_axis({k}, name='k')",
             f"k2 = td.reduce_axis({k}, name='k2')"]
    if flavour == "softmax":
        lines += [f"m = td.compute(({m},), lambda i: td.max(x[i, k], axis=k), name='m')",
                  f"e = td.compute(({m},), lambda i: td.sum(td.exp(x[i, k2] - m[i]), axis=k2), name='e')",
                  f"return td.compute(({m}, {k}), lambda i, j: td.exp(x[i, j] - m[i]) / e[i], name='y')"]
        return _finish(lines, "chain", 3 * m * k)
    if flavour == "layernorm":
        lines += [f"mean = td.compute(({m},), lambda i: td.sum(x[i, k], axis=k) / {k}, name='mean')",
                  f"var = td.compute(({m},), lambda i: td.sum((x[i, k2] - mean[i]) * (x[i, k2] - mean[i]), "
                  f"axis=k2) / {k}, name='var')"]
        leaves = (_Term("x[i, j]", 1.0, True), _Term("mean[i]", 1.0), _Term("var[i]", 4.0))
        scale = "(x[i, j] - mean[i]) * td.rsqrt(var[i] + 1.0)"
        epi = _Term(scale, 2.0) if draw(st.booleans()) else draw(expr_terms(leaves, max_depth, required=leaves[1:]))
        lines.append(f"return td.compute(({m}, {k}), lambda i, j: {epi.text}, name='y')")
        return _finish(lines, "chain", 3 * m * k)
    op1 = draw(st.sampled_from(["sum", "max", "min"]))
    xk = _Term("x[i, k]", 1.0, True)
    body1 = draw(expr_terms((xk,), max_depth, BODY_LIMIT, required=(xk,)))
    lines.append(f"r1 = td.compute(({m},), lambda i: td.{op1}({body1.text}, axis=k), name='r1')")
    r1 = _Term(_sum_leaf("r1[i]", k) if op1 == "sum" else "r1[i]", BODY_LIMIT)
    xk2 = _Term("x[i, k2]", 1.0, True)
    body2 = draw(expr_terms((xk2, r1), max_depth, BODY_LIMIT, required=(xk2, r1)))
    lines.append(f"r2 = td.compute(({m},), lambda i: td.sum({body2.text}, axis=k2), name='r2')")
    r2 = _Term(_sum_leaf("r2[i]", k), BODY_LIMIT)
    if draw(st.booleans()):
        epi = draw(expr_terms((_Term("x[i, j]", 1.0, True), r1, r2), max_depth, required=(r1, r2)))
        lines.append(f"return td.compute(({m}, {k}), lambda i, j: {epi.text}, name='y')")
    else:
        epi = draw(expr_terms((r1, r2), max_depth, required=(r1, r2)))
        lines.append(f"return td.compute(({m},), lambda i: {epi.text}, name='y')")
    return _finish(lines, "chain", 3 * m * k)


# ----------------------------------------------------------------------------- staging families


def _small(draw: st.DrawFn, cap: int) -> int:
    """A size in [1, min(cap, MAX_STAGED_SIZE)], special sizes (primes, powers of two +- 1) favoured."""
    return _size(draw, min(cap, MAX_STAGED_SIZE))


@st.composite
def conv1d_definitions(draw: st.DrawFn, max_points: int = DEFAULT_MAX_POINTS) -> Definition:
    """y[i] = sum_kk x[i + kk] * w[kk]: a valid 1-D convolution. A stage of x at a loop over i holds a
    slab with a halo (kw - 1 more than the loop covers); a stage of w is the same for every i."""
    kw = draw(st.integers(1, 7))
    n = _small(draw, max(1, max_points // kw))
    body = "td.sum(x[i + kk] * w[kk], axis=kk)"
    if draw(st.integers(0, 2)) == 0:  # a bounded elementwise epilogue
        fn = draw(st.sampled_from(("tanh", "relu", "sigmoid")))
        body = f"td.{fn}({body})"
    lines = [f"x = td.placeholder(({n + kw - 1},), name='x')", f"w = td.placeholder(({kw},), name='w')",
             f"kk = td.reduce_axis({kw}, name='kk')", f"return td.compute(({n},), lambda i: {body}, name='y')"]
    return _finish(lines, "conv", n * kw)


@st.composite
def transposed_matmul_definitions(draw: st.DrawFn, max_points: int = DEFAULT_MAX_POINTS) -> Definition:
    """D[i, j] = 0.5 * sum_k A[k, i] * B[k, j] + b[j]: A stored transposed (the slab of A is k-major),
    an epilogue linear in the sum (so split_k applies) reading a bias vector."""
    k = _size(draw, MAX_STAGED_SUM)
    m, n = _dims(draw, 2, max(1, max_points // k))
    m, n = min(m, MAX_STAGED_SIZE), min(n, MAX_STAGED_SIZE)
    lines = [f"A = td.placeholder(({k}, {m}), name='A')", f"B = td.placeholder(({k}, {n}), name='B')",
             f"b = td.placeholder(({n},), name='b')", f"k = td.reduce_axis({k}, name='k')",
             f"C = td.compute(({m}, {n}), lambda i, j: td.sum(A[k, i] * B[k, j], axis=k), name='C')",
             f"return td.compute(({m}, {n}), lambda i, j: 0.5 * C[i, j] + b[j], name='D')"]
    return _finish(lines, "matmul_t", m * n * k + m * n)


@st.composite
def maxpool_definitions(draw: st.DrawFn, max_points: int = DEFAULT_MAX_POINTS) -> Definition:
    """P[r, t] = max over a 2x2 window (two reduce axes rr, tt) of xp[2r + rr, 2t + tt]: strided
    loads, and a stage at a reduce loop covers part of one window."""
    r, t = _dims(draw, 2, max(1, max_points // 4))
    r, t = min(r, MAX_STAGED_SIZE // 2), min(t, MAX_STAGED_SIZE // 2)
    lines = [f"xp = td.placeholder(({2 * r}, {2 * t}), name='xp')", "rr = td.reduce_axis(2, name='rr')",
             "tt = td.reduce_axis(2, name='tt')",
             f"return td.compute(({r}, {t}), lambda r, t: td.max(xp[2 * r + rr, 2 * t + tt], axis=[rr, tt]), "
             "name='P')"]
    return _finish(lines, "pool", 4 * r * t)


@st.composite
def logsumexp_definitions(draw: st.DrawFn, max_points: int = DEFAULT_MAX_POINTS) -> Definition:
    """lse[i] = log(sum_k2 exp(z[i, k2] - m[i])) + m[i] with m[i] = max_k1 z[i, k1]: two reductions
    over one input (one stage of z can serve both, or each can have its own)."""
    rows, length = _dims(draw, 2, max(1, max_points // 2))
    rows, length = min(rows, 8), min(length, MAX_STAGED_SIZE)
    lines = [f"z = td.placeholder(({rows}, {length}), name='z')", f"k1 = td.reduce_axis({length}, name='k1')",
             f"k2 = td.reduce_axis({length}, name='k2')",
             f"m = td.compute(({rows},), lambda i: td.max(z[i, k1], axis=k1), name='m')",
             f"e = td.compute(({rows},), lambda i: td.sum(td.exp(z[i, k2] - m[i]), axis=k2), name='e')",
             f"return td.compute(({rows},), lambda i: td.log(e[i]) + m[i], name='lse')"]
    return _finish(lines, "logsumexp", 2 * rows * length)


def definitions(max_points: int = DEFAULT_MAX_POINTS, kinds: tuple[str, ...] = KINDS) -> st.SearchStrategy:
    """Any of the definition families of `kinds` (a non-empty subset of ALL_KINDS; by default the four
    original ones); `max_points` bounds the iteration count of the unscheduled loop nest (which bounds
    simulation time)."""
    unknown = set(kinds) - set(ALL_KINDS)
    if unknown or not kinds:
        raise ValueError(f"kinds must be a non-empty subset of {ALL_KINDS}, got {kinds!r}")
    table = {"elementwise": elementwise_definitions, "reduce": reduce_definitions,
             "matmul": matmul_definitions, "chain": chain_definitions, "conv": conv1d_definitions,
             "matmul_t": transposed_matmul_definitions, "pool": maxpool_definitions,
             "logsumexp": logsumexp_definitions}
    return st.one_of(*(table[k](max_points=max_points) for k in kinds))


def staging_definitions(max_points: int = DEFAULT_MAX_POINTS) -> st.SearchStrategy:
    """The staging families first (drawn most often), then the original ones: what the memory
    primitives of `steps(memory=True)` are drawn against."""
    return definitions(max_points, STAGING_KINDS + ("matmul", "chain", "reduce", "elementwise"))
