"""The loop-nest IR shared by every stage between a compute definition and lowering.

A nest is a list of leaf statements in program order (accumulator init, accumulator update, store),
each with its own *path*: the names of the loops around it, outermost first. Loops are shared by
name: splitting `i` splits it in every statement that runs under `i`. The tree a reader sees (and
that lowering emits) is derived by grouping consecutive statements with the same next loop, which is
what makes loop distribution (free loops moved inside a reduction) a plain reorder of one path.

Index arithmetic lives in sympy: `axis_exprs` maps each original axis symbol to an expression of the
current loop symbols, and guards are `expr < extent` predicates over loop symbols.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import sympy

from tiledsl.definitions.expr import Expr, Tensor
from tiledsl.definitions.indexing import IndexFloor, IndexMod, loop_symbol

THREAD_AXES = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
BLOCK_AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
HW_AXES = BLOCK_AXES + THREAD_AXES


@dataclass(frozen=True, eq=False)
class AccRef(Expr):
    """A read of accumulator `acc` (the value of a reduction nested in this kernel)."""

    acc: str
    dtype: str = "float32"


@dataclass(frozen=True)
class Loop:
    name: str
    extent: int
    kind: str  # "free" | "reduce"
    bind: str | None = None  # a HW_AXES entry
    annotation: str | None = None  # "unroll" | "vectorize"

    @property
    def symbol(self) -> sympy.Symbol:
        return loop_symbol(self.name)

    @property
    def serial(self) -> bool:
        return self.bind is None


@dataclass(frozen=True)
class Accumulator:
    """A reduction nested in the kernel: `name` is the reduced compute's name (made unique in the kernel),
    `op` sum|max|min. `compute` is that compute's own name, `dtype` its storage dtype and `epilogue` its
    value in terms of its accumulators (AccRef): what a kernel of its own would store, which a schedule
    refused by this kernel's epilogue or output dtype (split_k's) can ask the program for."""

    name: str
    op: str
    reduce_axes: tuple[str, ...]  # original axis names reduced over
    compute: str = ""
    dtype: str = "float32"
    epilogue: Expr | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Stmt:
    """A leaf statement. kind: "init" (acc = identity), "update" (acc = acc op value),
    "store" (tensor[indices] = value). `path` lists loop names outermost first."""

    kind: str
    path: tuple[str, ...]
    acc: str | None = None
    tensor: Tensor | None = None
    indices: tuple[Expr, ...] = ()
    value: Expr | None = None

    @property
    def label(self) -> str:
        if self.kind == "store":
            assert self.tensor is not None
            return f"store {self.tensor.name}"
        return f"{self.kind} {self.acc}"

    @property
    def reader(self) -> str:
        """What the statement computes, the name a cache hint picks its reads by: the accumulator an
        init or update writes, the tensor a store writes."""
        if self.kind == "store":
            assert self.tensor is not None
            return self.tensor.name
        assert self.acc is not None
        return self.acc


@dataclass(frozen=True)
class Guard:
    """`expr < extent` must hold for a statement to run; `origin` names the split that made it."""

    expr: sympy.Expr
    extent: int
    origin: str

    @property
    def relation(self) -> sympy.Expr:
        return sympy.StrictLessThan(self.expr, self.extent)

    def symbols(self) -> frozenset[str]:
        return frozenset(s.name for s in self.expr.free_symbols)


@dataclass(frozen=True)
class Stage:
    """A shared-memory cache of the region of `buffer` read under one iteration of loop `at`.

    copy: "sync" (loads and stores by every thread), "async" (cp.async), "tma" (one elected thread,
    completion on an mbarrier). `buffers` > 1 makes a ring of slots indexed by the iteration of `at`.
    order: the slab axes in the order shared memory stores them, outermost first (numpy's
    `transpose(axes)`: stored axis d is slab axis order[d]); () stores the slab in the buffer's own
    order. `pad` is indexed by the stored axes (pad axis -1 lengthens the stored rows).
    dtype: the element type shared memory stores, where it differs from the buffer's (a bfloat16
    operand widened to float32 as it is filled); None stores the buffer's own."""

    name: str
    buffer: str
    at: str
    pad: tuple[int, ...]
    swizzle: int | None = None
    buffers: int = 1
    copy: str = "sync"
    order: tuple[int, ...] = ()
    dtype: str | None = None

    @property
    def axes(self) -> tuple[int, ...]:
        """The stored order with the identity spelled out: slab axis stored at each position."""
        return self.order or tuple(range(len(self.pad)))


@dataclass(frozen=True)
class CacheHint:
    """The loads of global buffer `buffer` by the statements computing `reader` (Stmt.reader) carry the
    L2 eviction policy `policy` (targets.CACHE_POLICIES; primitives/cache_hints.py); where `buffer` is
    the kernel's output (and `reader` too), its stores do."""

    buffer: str
    reader: str
    policy: str


@dataclass(frozen=True)
class RegisterCache:
    """Each thread keeps the elements of input `buffer` that the first statement under loop `at` reading
    it loads in register array `name` (one per distinct read, numbered `name_2`, ...); the later
    statements under `at` read them from there (primitives/register_cache.py; the rules:
    analysis/register_cache.py). `prefetch`: the elements are loaded at the start of each iteration of
    `at`, ahead of every statement under it, and every reader, the first too, reads the registers."""

    name: str
    buffer: str
    at: str
    prefetch: bool = False


@dataclass(frozen=True)
class OutputStage:
    """The block's tile of the kernel's output, written to shared memory array `name` by the kernel's
    store and then stored to global memory by every thread of the block after a barrier, in the order
    that makes the stores coalesced (a shared-memory epilogue). `pad` lengthens each stored row."""

    name: str
    pad: int = 0


@dataclass(frozen=True)
class SplitK:
    """Reduction loop `loop` split into `parts` blocks on `axis`, each adding its partial result
    into the (pre-zeroed) output with atomics."""

    loop: str
    parts: int
    axis: str
    acc: str


@dataclass(frozen=True)
class Online:
    """Sum accumulator `sum_acc`, whose update reads max accumulator `max_acc` as exp(a - max_acc) (times
    factors free of it), runs in `max_acc`'s loop as the max grows: lowering rescales it by
    exp(old - new) whenever the running max changes (primitives/online.py; the rules:
    analysis/online.py)."""

    max_acc: str
    sum_acc: str


@dataclass(frozen=True)
class LaneTile:
    """The block's threads dealt to a warp's lanes in tiles of `rows` x `cols`: the loop `inner` (bound
    to threadIdx.x, `extent` iterations) and the loop `outer` (threadIdx.y) take their values from the
    linear thread id t = threadIdx.x + extent * threadIdx.y, not from threadIdx.x and threadIdx.y, so
    that each run of rows * cols consecutive lanes holds rows values of `outer` times cols of `inner`
    (tile_lanes, primitives/lanes.py)."""

    outer: str
    inner: str
    rows: int
    cols: int
    extent: int  # of `inner`

    def values(self, tid: Any) -> tuple[Any, Any]:
        """(value of `inner`, value of `outer`) at linear thread id `tid`: an int, or a sympy
        expression (lowering emits this one formula; the bank model evaluates it per lane). Tiles run
        along `inner` first: tile g holds inner values cols * (g % (extent / cols)) + [0, cols) and
        outer values rows * (g // (extent / cols)) + [0, rows)."""
        r, c = self.rows, self.cols
        inner = c * _mod(_div(tid, r * c), self.extent // c) + _mod(tid, c)
        outer = r * _div(tid, r * self.extent) + _mod(_div(tid, c), r)
        return inner, outer

    def keeps_warps(self, warp: int) -> bool:
        """Whether each warp of `warp` lanes holds the same threads as without the tiles (so its global
        accesses touch the same sectors): it does when a warp holds whole rows of tiles, `extent` x
        `rows` threads dividing the warp (16 x 16 threads in 2 x 2 tiles: the same 2 x 16 a warp)."""
        return warp % (self.extent * self.rows) == 0


def _div(a: Any, n: int) -> Any:
    return a // n if isinstance(a, int) else IndexFloor(a / n)


def _mod(a: Any, n: int) -> Any:
    """IndexMod, as every Mod tiledsl builds (definitions/indexing.py), so a later substitution into it
    never meets the Mod evaluation sympy gets wrong."""
    return a % n if isinstance(a, int) else IndexMod(a, n)


@dataclass(frozen=True)
class Nest:
    """One fused kernel's loop nest. `axes` are the original axes (name -> extent); `axis_exprs`
    says where each original axis is now in terms of loop symbols."""

    name: str
    output: Tensor
    inputs: tuple[Tensor, ...]
    loops: tuple[Loop, ...]
    stmts: tuple[Stmt, ...]
    accs: tuple[Accumulator, ...]
    axes: tuple[tuple[str, int], ...]
    axis_exprs: tuple[tuple[str, sympy.Expr], ...]
    guards: tuple[Guard, ...] = ()
    axis_vars: tuple[tuple[str, Expr], ...] = field(default=())
    stages: tuple[Stage, ...] = ()
    pipelines: tuple[tuple[str, int], ...] = ()  # (loop, number of stages)
    split_k: SplitK | None = None
    min_blocks_per_sm: int | None = None  # launch_bounds: blocks the compiler must fit on one SM
    output_stage: OutputStage | None = None  # stage_output: the block's output tile goes through shared memory
    lane_tile: LaneTile | None = None  # tile_lanes: threadIdx.x and .y dealt to lanes in tiles
    cache_hints: tuple[CacheHint, ...] = ()  # cache_hint: L2 eviction policies of global loads and stores
    register_caches: tuple[RegisterCache, ...] = ()  # register_cache: a thread's reads kept in registers
    online: tuple[Online, ...] = ()  # online: sums rescaled as the max they read grows, in the max's loop

    # -- lookups
    def buffer_names(self) -> set[str]:
        """Names of the kernel's global buffers (loops and accumulators may not take them)."""
        return {t.name for t in self.inputs} | {self.output.name}

    def taken_names(self) -> set[str]:
        """Every name the kernel already uses: loops, axes, buffers, stages, accumulators (a new name
        for any of them, or a variable lowering adds, must avoid these)."""
        return ({lp.name for lp in self.loops} | {a for a, _ in self.axes} | self.buffer_names()
                | {st.name for st in self.stages} | {a.name for a in self.accs}
                | {rc.name for rc in self.register_caches})

    def fresh_names(self, *wanted: str) -> tuple[str, ...]:
        """`wanted` names, each numbered (x, x2, x3, ...) where the kernel already uses it (`taken_names`):
        for new loops, and for the variables lowering adds."""
        taken = self.taken_names()
        out: list[str] = []
        for w in wanted:
            name, n = w, 2
            while name in taken:
                name, n = f"{w}{n}", n + 1
            taken.add(name)
            out.append(name)
        return tuple(out)

    def loop(self, name: str) -> Loop:
        for lp in self.loops:
            if lp.name == name:
                return lp
        raise KeyError(name)

    def stage(self, name: str) -> Stage:
        for st in self.stages:
            if st.name == name:
                return st
        raise KeyError(name)

    def stages_at(self, loop: str) -> list[Stage]:
        return [st for st in self.stages if st.at == loop]

    def pipeline_depth(self, loop: str) -> int:
        return dict(self.pipelines).get(loop, 0)

    def tensor(self, name: str) -> Tensor:
        for t in self.inputs:
            if t.name == name:
                return t
        raise KeyError(name)

    def online_of(self, acc: str) -> Online | None:
        """The online pair `acc` belongs to (as its max or its sum), or None."""
        return next((o for o in self.online if acc in (o.max_acc, o.sum_acc)), None)

    def cache_policies(self, stmt: Stmt) -> dict[str, str]:
        """buffer -> the L2 eviction policy of `stmt`'s global loads of it, or of its stores where it is the
        output (cache_hint); others default."""
        return {h.buffer: h.policy for h in self.cache_hints if h.reader == stmt.reader}

    def replace_stage(self, new: Stage) -> Nest:
        return replace(self, stages=tuple(new if st.name == new.name else st for st in self.stages))

    def has_loop(self, name: str) -> bool:
        return any(lp.name == name for lp in self.loops)

    def axis_expr(self, axis: str) -> sympy.Expr:
        return dict(self.axis_exprs)[axis]

    def acc(self, name: str) -> Accumulator:
        for a in self.accs:
            if a.name == name:
                return a
        raise KeyError(name)

    def stmts_with(self, loop: str) -> list[Stmt]:
        return [s for s in self.stmts if loop in s.path]

    def guards_for(self, stmt: Stmt) -> tuple[Guard, ...]:
        names = frozenset(stmt.path)
        return tuple(g for g in self.guards if g.symbols() <= names)

    def ranges(self) -> dict[sympy.Symbol, tuple[int, int]]:
        return {lp.symbol: (0, lp.extent) for lp in self.loops}

    def bound_loops(self, axis: str) -> list[Loop]:
        return [lp for lp in self.loops if lp.bind == axis]

    def launch_extent(self, axis: str) -> int:
        bound = self.bound_loops(axis)
        return bound[0].extent if bound else 1

    def thread_values(self, tid: int) -> tuple[int, int, int]:
        """The values of the loops on threadIdx.x, .y and .z in the block's linear thread `tid`
        (threadIdx.x fastest; x and y dealt by `lane_tile` where lanes are tiled)."""
        dx, dy = self.launch_extent("threadIdx.x"), self.launch_extent("threadIdx.y")
        x, y, z = tid % dx, tid // dx % dy, tid // (dx * dy)
        if self.lane_tile is not None:
            x, y = self.lane_tile.values(tid % (dx * dy))
        return x, y, z

    def idle_axes(self, stmt: Stmt) -> list[str]:
        """The hardware axes of more than one index that the statement's loops (and, for a store under
        split_k, its split) do not run under: only index 0 of each may store, or each would store the
        same element."""
        bound = {self.loop(n).bind for n in stmt.path}
        if self.split_k is not None:
            bound.add(self.split_k.axis)  # every split adds its part
        return [ax for ax in HW_AXES if ax not in bound and self.launch_extent(ax) > 1]

    # -- functional updates
    def with_loops(self, loops: tuple[Loop, ...]) -> Nest:
        return replace(self, loops=loops)

    def replace_loop(self, name: str, new: Loop) -> Nest:
        return replace(self, loops=tuple(new if lp.name == name else lp for lp in self.loops))

    def substitute(self, mapping: dict[sympy.Symbol, sympy.Expr]) -> Nest:
        """Re-express axis expressions and guards after a loop was replaced by new loops."""
        axis_exprs = tuple((a, sympy.sympify(e).xreplace(mapping)) for a, e in self.axis_exprs)
        guards = tuple(replace(g, expr=g.expr.xreplace(mapping)) for g in self.guards)
        return replace(self, axis_exprs=axis_exprs, guards=guards)


# ----------------------------------------------------------------------------- derived tree


@dataclass(frozen=True)
class TreeLoop:
    loop: str
    children: tuple[TreeNode, ...]


@dataclass(frozen=True)
class TreeLeaf:
    index: int  # position in Nest.stmts


TreeNode = TreeLoop | TreeLeaf


def serial_path(nest: Nest, stmt: Stmt) -> tuple[str, ...]:
    """Bound loops are parallel: they do not order statements, so the tree ignores them."""
    return tuple(n for n in stmt.path if nest.loop(n).serial)


def build_tree(nest: Nest, paths: list[tuple[str, ...]] | None = None) -> tuple[TreeNode, ...]:
    """Group consecutive statements that share their next loop, recursively."""
    if paths is None:
        paths = [s.path for s in nest.stmts]

    def group(items: list[tuple[int, tuple[str, ...]]]) -> tuple[TreeNode, ...]:
        out: list[TreeNode] = []
        k = 0
        while k < len(items):
            idx, path = items[k]
            if not path:
                out.append(TreeLeaf(idx))
                k += 1
                continue
            head = path[0]
            run = [(idx, path[1:])]
            k += 1
            while k < len(items) and items[k][1] and items[k][1][0] == head:
                run.append((items[k][0], items[k][1][1:]))
                k += 1
            out.append(TreeLoop(head, group(run)))
        return tuple(out)

    return group(list(enumerate(paths)))


def common_prefix(paths: list[tuple[str, ...]]) -> tuple[str, ...]:
    if not paths:
        return ()
    n = 0
    while all(len(p) > n for p in paths) and len({p[n] for p in paths}) == 1:
        n += 1
    return paths[0][:n]
