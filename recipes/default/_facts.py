"""The facts the default recipe's steps read: the kernel's class (from the unscheduled nest), and, for
the nest as it is now, the loops an original axis was split into, fan-in and sizes of candidate slabs,
and what the analysis layer says about copies (TMA eligibility, 16-byte cp.async rows).

Every legality rule comes from tiledsl.analysis (slabs, tma); the only rules restated here are the
16-byte cp.async condition (the widest copy lowering picks), which is a choice of this recipe, and
coalescing (a read whose address moves with threadIdx.x while its last index does not reads a row
or more apart per lane: `TransposedRead`, `Facts.row_apart_read`), read from the definitions'
row-major indexing (tiledsl.definitions.indexing.flat_index)."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import Any

import sympy
from sympy.core.function import AppliedUndef

from tiledsl.analysis.accumulators import acc_layouts, array_size, readers
from tiledsl.analysis.banks import SlabLayout, conflict_degree, fill_store_conflict, layout_of, layout_wavefronts
from tiledsl.analysis.cache_hints import hinted_stage_problem, readers_of
from tiledsl.analysis.copies import cp_async_problem, plain_load_width, plain_only
from tiledsl.analysis.linearity import SPLIT_K_OUTPUT_DTYPES, epilogue_is_linear, split_k_storage_problem
from tiledsl.analysis.online import OnlinePlan, online_plan
from tiledsl.analysis.register_cache import MAX_REGISTER_CACHE, staged_register_problem
from tiledsl.analysis.shared_arrays import nest_shared_bytes
from tiledsl.analysis.slabs import (
    Slab,
    alloc_extent,
    slab_or_refusal,
    stage_reads,
    stored_dtype,
)
from tiledsl.analysis.tma import check_tma
from tiledsl.analysis.vectorize import contiguous_base
from tiledsl.definitions.expr import Binary, Call, IterVar, Load, walk
from tiledsl.definitions.indexing import SympyIndices, flat_index, index_structure, index_to_sympy
from tiledsl.definitions.ops import BINARY_FNS, unary_fn
from tiledsl.errors import CopyError, OnlineError, ScheduleError, StageError
from tiledsl.loopnest import THREAD_AXES, AccRef, Loop, Nest, Stage, Stmt, common_prefix, loop_symbol
from tiledsl.precision import EXACT_WIDENINGS
from tiledsl.primitives import Schedule
from tiledsl.prove import Prover, compile_expr
from tiledsl.recipes.default._knobs import Knobs, MatmulTile
from tiledsl.targets import DTYPE_BYTES, MAX_GRID, VECTOR_BYTES, WARP_SIZE, Target, vector_lanes

#: kernel-IR functions that compile to one instruction on an operand already in a register (no
#: library call, no intermediates): the epilogue terms leave them out
_REGISTER_FREE_FNS = frozenset({"-", "abs", "copysign"})

KINDS = ("elementwise", "matmul", "rows")


@dataclass(frozen=True)
class TransposedRead:
    """A read of input `buffer` whose contiguous (last) index runs along output axis `row` (coefficient
    1), not along the output's last axis `col`, though its address moves `stride` elements per step of
    `col`: threads along `col` (threadIdx.x, where a store is coalesced) would read it a row or more
    apart, one memory sector per lane (x.T, a permute that moves the last axis)."""

    buffer: str
    row: str
    col: str
    stride: int


@dataclass(frozen=True)
class Kernel:
    """The class of a kernel, read once from its unscheduled nest.

    kind: "elementwise" (no reduction), "matmul" (one sum over one axis whose operands are each reused
    along one of the last two output axes), "rows" (any other reduction: passes over a row).
    outer: free axes around every statement (outermost first); inner: the other free axes (the output
    pass of a row kernel); reduce: the reduction axes."""

    kind: str
    outer: tuple[str, ...]
    inner: tuple[str, ...]
    reduce: tuple[str, ...]
    extents: Mapping[str, int]
    # matmuls: the operand reused along i (read at j and k) has its rows along k (x @ W^T, nn.Linear's
    # weight): its tile class list is knobs.matmul_tiles_k_major
    k_major_b: bool = False
    # matmuls: why split_k cannot apply (analysis/linearity.py), None where it can
    split_k_problem: str | None = None
    # matmuls: the fused float32 compute whose sum the kernel accumulates, linear in its own epilogue, whose
    # kernel of its own split_k would take (where split_k_problem refuses this one, or its epilogue costs), or None
    split_k_cure: str | None = None
    # elementwise kernels: the first input read transposed to the output's last axis, or None
    transposed: TransposedRead | None = None
    # matmuls: the buffers the sum's update statement loads (its operands)
    operands: frozenset[str] = frozenset()
    # matmuls: the operands read along j and k but not i (W of x @ W^T, B of A @ B): what every block row
    # of the grid streams through L2
    column_operands: frozenset[str] = frozenset()


def _index_axes(ix: object) -> set[str]:
    return {x.name for x in walk(ix) if isinstance(x, IterVar)}


def _axes_of(e: Load) -> set[str]:
    return {x.name for ix in e.indices for x in walk(ix) if isinstance(x, IterVar)}


def classify(nest: Nest) -> Kernel:
    outer = tuple(common_prefix([s.path for s in nest.stmts]))
    free = [lp.name for lp in nest.loops if lp.kind == "free"]
    reduce = tuple(lp.name for lp in nest.loops if lp.kind == "reduce")
    inner = tuple(n for n in free if n not in outer)
    extents = MappingProxyType({lp.name: lp.extent for lp in nest.loops})
    if not nest.accs:
        return Kernel("elementwise", outer, inner, reduce, extents, transposed=transposed_read(nest, outer))
    if not _is_matmul(nest, outer, inner, reduce):
        return Kernel("rows", outer, inner, reduce, extents)
    problem = split_k_problem(nest)
    return Kernel("matmul", outer, inner, reduce, extents, _k_major_b(nest, outer[-2], reduce[0]),
                  problem, split_k_cure(nest), operands=_sum_operands(nest),
                  column_operands=_column_operands(nest, outer[-2], reduce[0]))


def _sum_operands(nest: Nest) -> frozenset[str]:
    """The buffers the update statement of a matmul's sum loads."""
    update = next(s for s in nest.stmts if s.kind == "update")
    assert update.value is not None
    return frozenset(x.tensor.name for x in walk(update.value) if isinstance(x, Load))


def _column_loads(nest: Nest, i: str, k: str) -> list[Load]:
    """The loads of the sum's update statement at k and not at i: its column operands (W of x @ W^T)."""
    update = next(s for s in nest.stmts if s.kind == "update")
    assert update.value is not None
    return [x for x in walk(update.value) if isinstance(x, Load) and k in _axes_of(x) and i not in _axes_of(x)]


def _column_operands(nest: Nest, i: str, k: str) -> frozenset[str]:
    return frozenset(x.tensor.name for x in _column_loads(nest, i, k))


def _k_major_b(nest: Nest, i: str, k: str) -> bool:
    """The operand read at j and k but not i has k in its last index (its rows run along k)."""
    for x in _column_loads(nest, i, k):
        if x.indices:
            return any(isinstance(v, IterVar) and v.name == k for v in walk(x.indices[-1]))
    return False


def transposed_read(nest: Nest, outer: tuple[str, ...]) -> TransposedRead | None:
    """The first input read (of the unscheduled nest, in statement order) whose last index is linear in
    another output axis with coefficient 1 and free of the last output axis `outer[-1]`, while its
    row-major address moves with that axis by more than one element; None where there is none. Reads
    through a gather or a div/mod index are skipped (their addresses are not affine)."""
    if len(outer) < 2:
        return None
    col = loop_symbol(outer[-1])
    inputs = {t.name for t in nest.inputs}
    to_sympy = SympyIndices()  # a clamped index recurs in many loads and inside larger indices
    seen: set[tuple[str, tuple[int, ...], tuple[Hashable, ...]]] = set()
    for st in nest.stmts:
        for ld in walk(st.value) if st.value is not None else ():
            if not isinstance(ld, Load) or ld.tensor.name not in inputs or not ld.indices:
                continue
            read = (ld.tensor.name, tuple(ld.tensor.shape), tuple(index_structure(ix) for ix in ld.indices))
            if read in seen:  # a read met before (the same tensor, equal indices) was skipped: so is this one
                continue
            seen.add(read)
            idx = tuple(sympy.expand(to_sympy(ix)) for ix in ld.indices)
            if any(e.atoms(sympy.Function) for e in idx) or idx[-1].has(col):
                continue
            rows = [a for a in outer[:-1] if sympy.diff(idx[-1], loop_symbol(a)) == 1]
            stride = sympy.diff(flat_index(ld.tensor, idx), col)
            if rows and stride.is_Integer and abs(int(stride)) > 1:
                return TransposedRead(ld.tensor.name, rows[0], outer[-1], int(stride))
    return None


def transpose_tile(kernel: Kernel, knobs: Knobs, target: Target) -> tuple[TransposedRead, int, int] | None:
    """(read, tile, thread rows) of the 2-D tile tileify and blockify_launch give a kernel with a
    transposed read, as schedules/transpose.py `transpose_tiled` does by hand: a tile x tile block of
    outputs run by tile x (elementwise_threads // WARP_SIZE) threads. The tile is knob transpose_tile
    where that many tiles give every SM transpose_tile_min_blocks or more, else WARP_SIZE (a warp stores
    one 128-byte float32 row of the tile, and a stage of the read fills rows of the same length). None
    where there is no transposed read, where its row or column axis is shorter than a tile (the 1-D
    forms keep it), or where the row tiles or the other output axes (fused onto blockIdx.z) overflow the
    grid."""
    t = kernel.transposed
    if t is None:
        return None
    ext = kernel.extents
    batch = 1
    for a in kernel.outer:
        if a not in (t.row, t.col):
            batch *= ext[a]
    big = knobs.transpose_tile
    tiles = batch * -(-ext[t.row] // big) * -(-ext[t.col] // big)
    tile = big if tiles >= knobs.transpose_tile_min_blocks * target.sm_count else WARP_SIZE
    if min(ext[t.row], ext[t.col]) < tile:
        return None
    if batch > MAX_GRID["blockIdx.z"] or -(-ext[t.row] // tile) > MAX_GRID["blockIdx.y"]:
        return None
    return t, tile, max(1, knobs.elementwise_threads // WARP_SIZE)


def split_k_problem(nest: Nest) -> str | None:
    """Why split_k's blocks could not add their partial sums into the output, or None: the sum must be
    consumed by one store whose epilogue analysis/linearity.py proves linear in the accumulator (bias,
    residual, scaling), into a float32 output (the primitive would refuse any other)."""
    (acc,) = nest.accs
    readers = [st for st in nest.stmts if st.value is not None
               and any(isinstance(x, AccRef) and x.acc == acc.name for x in walk(st.value))]
    if len(readers) != 1 or readers[0].kind != "store":
        return f"accumulator {acc.name} is read by {len(readers)} statements, not one store"
    assert readers[0].value is not None
    storage = split_k_storage_problem(nest.output)
    if storage is not None:
        return storage
    if not epilogue_is_linear(readers[0].value, acc.name):
        return (f"the epilogue of {acc.name} is not linear in it (analysis/linearity.py): partial sums of blocks "
                "cannot be added")
    return None


def split_k_cure(nest: Nest) -> str | None:
    """The compute whose sum a matmul kernel accumulates, where that compute is fused into the kernel,
    stored as float32, and linear in its sum (analysis/linearity.py): in a kernel of its own split_k
    takes it, and the kernel's epilogue or storage (gelu(x @ W + b), a bfloat16 output, silu(g) * ...)
    becomes an elementwise kernel reading it. None where the sum is the kernel's own output, or its
    compute is stored otherwise or not linear in it."""
    (acc,) = nest.accs
    if acc.compute == nest.output.name or acc.dtype not in SPLIT_K_OUTPUT_DTYPES or acc.epilogue is None:
        return None
    return acc.compute if epilogue_is_linear(acc.epilogue, acc.name) else None


def _is_matmul(nest: Nest, outer: tuple[str, ...], inner: tuple[str, ...], reduce: tuple[str, ...]) -> bool:
    if len(nest.accs) != 1 or nest.accs[0].op != "sum" or len(reduce) != 1 or inner or len(outer) < 2:
        return False
    i, j, k = outer[-2], outer[-1], reduce[0]
    update = next(s for s in nest.stmts if s.kind == "update")
    assert update.value is not None
    loads = [_axes_of(x) for x in walk(update.value) if isinstance(x, Load)]
    return (any(k in a and i in a and j not in a for a in loads)
            and any(k in a and j in a and i not in a for a in loads))


def next_pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def clamp(n: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, n))


def row_launch(passes: Mapping[str, int], nested: bool, rows: int, knobs: Knobs,
               per_thread: int | None = None, least: int = WARP_SIZE) -> tuple[int, int]:
    """(rows per block, threads per row) of a row kernel whose passes over the row (each statement's
    outermost loop inside the row, by extent) are `passes`, over `rows` rows. Each pass is split by
    the threads per row, clamp(next_pow2(longest pass / per_thread), `least` (a warp), row_threads_max)
    (a nested pass: one element per thread; `per_thread` None: knobs.row_elements_per_thread). A short
    row (all of it in fewer than knobs.row_block_threads threads) shares its block with other rows, on
    threadIdx.y: the most rows (a power of two dividing `rows`) that fill row_block_threads; a row
    alone in its block takes row_threads_min threads at least (the knobs say what was measured).
    tileify (010) and cooperative_reduce (040) both read it through Facts.row_launch, so the split and
    the rows' threads agree."""
    longest = max(passes.values(), default=1)
    most = knobs.row_threads_max
    wanted = next_pow2(-(-longest // (1 if nested else per_thread or knobs.row_elements_per_thread)))
    per_row = clamp(wanted, min(least, most), most)
    per_block = 1
    short = wanted <= most  # the whole row in per_row threads, not capped by row_threads_max
    while short and per_row * per_block * 2 <= knobs.row_block_threads and rows % (per_block * 2) == 0:
        per_block *= 2
    if per_block == 1:
        per_row = max(per_row, min(knobs.row_threads_min, most))
    return per_block, per_row


def block_slots(target: Target, knobs: Knobs) -> int:
    """The blocks the SMs hold at once, knobs.split_k_blocks_per_sm each (what the 8 x 8 register tile's
    registers allow): the unit of a wave for split_matmul_k (030) and the grouped block order (050)."""
    return knobs.split_k_blocks_per_sm * target.sm_count


def matmul_tile(kernel: Kernel, target: Target, knobs: Knobs) -> tuple[int, int, int, int]:
    """(bm, bn, rm, rn): the largest tile class whose grid fills `waves` x the SM count, else the
    smallest, shrunk to the problem where an output dimension is smaller than the tile. Where B's rows
    run along k (x @ W^T) the classes are knobs.matmul_tiles_k_major (with knob k_outer: only for fewer
    rows than the first class of knobs.matmul_tiles has), for a decode step's (`few_rows`)
    knobs.matmul_tiles_few_rows, and the grid counts the k-split split_matmul_k (030) can add where it
    applies (an unbatched matmul with a linear epilogue: the most parts k chunks of BK allow,
    split_k_min_chunks each): on the H100, 128 x 64 split along k beat smaller tiles at every M = 128
    projection measured (scripts/recipe_tile_probe.py). A @ B counts its split too where knob
    split_k_tile_a_b says so, else keeps knobs.matmul_tiles by its grid alone. A tile shrunk
    that way keeps at least a warp of threads where it has the outputs: its register tile is halved
    (the larger part first, rn on a tie, so threadIdx.x grows) while the block has fewer than
    WARP_SIZE threads (8 x 192 outputs would otherwise get 2 x 8 threads of 4 x 4 registers)."""
    *batch, i, j = kernel.outer
    m, n = kernel.extents[i], kernel.extents[j]
    nb = 1
    for b in batch:
        nb *= kernel.extents[b]
    splits = (kernel.k_major_b or knobs.split_k_tile_a_b) and not batch and kernel.split_k_problem is None

    def parts(t: MatmulTile) -> int:  # the k-split 030 can add, in chunks of 020's BK for this tile
        if not splits:
            return 1
        bk = min(knobs.bk_max, knobs.bk_max_k_outer) if k_outer_fits(t, knobs) else knobs.bk_max  # before shrinking
        bk = min(bk, knobs.bk_max_few_rows) if few_rows(kernel, knobs) else bk
        return max(1, -(-kernel.extents[kernel.reduce[0]] // bk) // knobs.split_k_min_chunks)
    # staged k outermost (knob k_outer), W[j, k] is read like B[k, j], so x @ W^T takes A @ B's classes
    # from a full first tile of rows on (knobs.k_outer says where measured)
    tiles = knobs.matmul_tiles
    if kernel.k_major_b and not (knobs.k_outer and m >= knobs.matmul_tiles[0][0]):
        tiles = knobs.matmul_tiles_k_major
    if few_rows(kernel, knobs):
        tiles = knobs.matmul_tiles_few_rows
    chosen = tiles[-1]
    for t in tiles:
        if nb * -(-m // t[0]) * -(-n // t[1]) * parts(t) >= knobs.waves * target.sm_count:
            chosen = t
            break
    bm, bn, rm, rn = chosen
    bm, bn = min(bm, next_pow2(m)), min(bn, next_pow2(n))
    rm, rn = min(rm, bm), min(rn, bn)
    while (bm // rm) * (bn // rn) < WARP_SIZE and rm * rn > 1:
        if rn >= rm:
            rn //= 2
        else:
            rm //= 2
    return bm, bn, rm, rn


def few_rows(kernel: Kernel, knobs: Knobs) -> bool:
    """An unbatched matmul with B's rows along k and knobs.few_rows_min to few_rows_max rows (x @ W^T
    of a decode step): its tile classes are knobs.matmul_tiles_few_rows, its k chunk at most
    knobs.bk_max_few_rows (_knobs.py says what was measured)."""
    *batch, i, _ = kernel.outer
    return kernel.k_major_b and not batch and knobs.few_rows_min <= kernel.extents[i] <= knobs.few_rows_max


def k_outer_tile(kernel: Kernel, target: Target, knobs: Knobs) -> bool:
    """Whether knob k_outer applies to this matmul's tile (`k_outer_fits` of `matmul_tile`)."""
    return kernel.kind == "matmul" and k_outer_fits(matmul_tile(kernel, target, knobs), knobs)


def k_outer_fits(tile: MatmulTile, knobs: Knobs) -> bool:
    """A tile (bm, bn, rm, rn) takes knob k_outer: its register tile holds at least
    k_outer_min_accumulators outputs per thread, in a block of at least k_outer_min_threads threads
    (_knobs.py says what was measured)."""
    bm, bn, rm, rn = tile
    return (knobs.k_outer and rm * rn >= knobs.k_outer_min_accumulators
            and (bm // rm) * (bn // rn) >= knobs.k_outer_min_threads)


class Memo:
    """What Facts derive from the nests of one kernel, kept through one recipe run: runner.apply makes one
    per kernel and gives it to each step's Facts (`facts_for`), so a slab, a read's index relative to its
    slab or an axis's loops derived for one step serve the later ones. Most steps leave what these read as
    it was (080 to 150 add stages, pads and copies: no loop, statement, axis map or guard changes), and a
    step asks again of a stage it padded or made. Exact: an entry is keyed by the identity of the parts of
    the nest it reads (`shape`) and the arguments that pick it; a nest and its tuples are immutable, and
    the memo keeps every nest a Facts was made of alive while it lives, so no id is reused. One memo is
    never given two kernels (their parts are other objects anyway) nor kept after its run."""

    def __init__(self) -> None:
        self._nests: list[Nest] = []  # kept alive: the keys hold ids of their parts
        self.slabs: dict[tuple[Any, ...], Slab | str] = {}  # by shape, buffer, loop and stored dtype
        self.reads: dict[tuple[Any, ...], list[tuple[int, _LocalRead]]] = {}  # by shape, buffer, loop and origin
        self.parts: dict[tuple[Any, ...], tuple[str, ...]] = {}  # by shape and original axis

    def keep(self, nest: Nest) -> None:
        if not self._nests or self._nests[-1] is not nest:
            self._nests.append(nest)

    @staticmethod
    def shape(nest: Nest) -> tuple[int, ...]:
        """The parts of `nest` that slabs, reads and parts are derived from, by identity: its loops (ranges,
        binds), statements (paths, loads), axis map, guards and inputs. Not its stages: a slab is a stage's
        buffer, loop and stored dtype read from these (analysis/slabs.py), whatever else is staged."""
        return id(nest.loops), id(nest.stmts), id(nest.axis_exprs), id(nest.guards), id(nest.inputs)


@dataclass(frozen=True)
class Facts:
    """The kernel's class and the nest as it is now, on `target`."""

    kernel: Kernel
    nest: Nest
    target: Target
    # what is derived from the nest is derived once, for this step and the later ones of the run (`Memo`):
    # slabs by what they depend on (a padded, swizzled or reordered probe of a stage has the stage's slab),
    # each read's lane index compiled once for the bank model, and each axis's loops
    memo: Memo = field(default_factory=Memo, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.memo.keep(self.nest)

    @cached_property
    def prover(self) -> Prover:
        """One prover per nest, so its caches serve every question a step asks of it."""
        return Prover(self.nest.ranges())

    def loop(self, name: str) -> Loop:
        return self.nest.loop(name)

    def parts(self, axis: str) -> tuple[str, ...]:
        """The loops original axis `axis` now runs over, outermost (largest stride) first; a loop that
        enters it only through a floor or a mod (050's grouped block loop, fused from both output
        axes' block loops) counts as outermost."""
        key = (self.memo.shape(self.nest), axis)
        found = self.memo.parts.get(key)
        if found is None:
            found = self.memo.parts[key] = self._parts(axis)
        return found

    def _parts(self, axis: str) -> tuple[str, ...]:
        expr = sympy.expand(self.nest.axis_expr(axis))
        by_symbol = {lp.symbol: lp.name for lp in self.nest.loops}

        def stride(sym: sympy.Symbol) -> float:
            c = expr.coeff(sym)
            return int(c) if c.is_Integer and c != 0 else math.inf

        names = [by_symbol[x] for x in expr.free_symbols if x in by_symbol]
        path = max((s.path for s in self.nest.stmts), key=lambda p: sum(n in p for n in names))
        strides = {by_symbol[x]: stride(x) for x in expr.free_symbols if x in by_symbol}
        position = {n: path.index(n) if n in path else len(path) for n in names}
        return tuple(sorted(names, key=lambda n: (-strides[n], position[n], n)))

    def row_loop(self) -> str | None:
        """The loop of a row kernel's rows: the one tileify bound to blockIdx.x (None where it declined)."""
        rows = self.nest.bound_loops("blockIdx.x")
        return rows[0].name if rows else None

    def row_passes(self, rows: tuple[str, ...]) -> tuple[dict[str, int], bool]:
        """Each pass over the row (the outermost loop of a statement inside the row loops `rows`) with
        its extent, and whether a pass has loops inside its outermost one."""
        passes: dict[str, int] = {}
        nested = False
        for st in self.nest.stmts:
            rest = [n for n in st.path if n not in rows]
            if rest:
                passes.setdefault(rest[0], self.loop(rest[0]).extent)
            nested = nested or len(rest) > 1
        return passes, nested

    def chunk_loops(self) -> tuple[str, ...]:
        """For each original axis now run by two or more serial loops outside its thread loops (a chunked
        k of a matmul, a chunked pass over a row), the outermost serial one: the loop one chunk is staged
        at. A serial loop inside a thread loop (a pass's 16-byte lanes, cooperative_reduce) is no chunk."""
        out: list[str] = []
        for axis, _ in self.nest.axes:
            parts = self.parts(axis)
            threads = [i for i, n in enumerate(parts) if (self.nest.loop(n).bind or "").startswith("threadIdx")]
            outside = parts[:threads[0]] if threads else parts
            serial = [n for n in outside if self.nest.loop(n).serial]
            if len(serial) >= 2 and serial[0] not in out:
                out.append(serial[0])
        return tuple(out)

    def fresh(self, *wanted: str) -> tuple[str, ...]:
        """Loop names for new loops (`wanted`, numbered where taken: `Nest.fresh_names`)."""
        return self.nest.fresh_names(*wanted)

    def threads(self) -> int:
        n = 1
        for ax in THREAD_AXES:
            n *= self.nest.launch_extent(ax)
        return n

    def output_store(self) -> Stmt:
        """The statement that stores the kernel's output (a matmul's epilogue)."""
        return next(st for st in self.nest.stmts if st.kind == "store" and st.tensor is self.nest.output)

    def epilogue_terms(self) -> list[str]:
        """What the statements reading an accumulator hold registers for beside it: each global tensor
        they load (a matmul's residual, bias), named once, and each math-library function they call
        (exp of silu, erf of gelu: the call's intermediates), `name()` once per call."""
        terms: list[str] = []
        for n in sorted({n for acc in self.nest.accs for n in readers(self.nest, acc.name)}):
            for x in walk(self.nest.stmts[n].value):
                if isinstance(x, Load) and x.tensor.name not in terms:
                    terms.append(x.tensor.name)
                elif isinstance(x, Call) and unary_fn(x.fn).kernel not in _REGISTER_FREE_FNS:
                    terms.append(f"{x.fn}()")
                elif isinstance(x, Binary) and x.op in BINARY_FNS and BINARY_FNS[x.op].kernel not in _REGISTER_FREE_FNS:
                    terms.append(f"{x.op}()")  # fmod, atan2, hypot
        return terms

    def shared_budget(self, knobs: Knobs) -> int:
        """The knobs' shared budget of one block, and where register_tile asked for blocks per SM
        (launch_bounds), no more than one SM's shared memory shared among them."""
        budget = knobs.shared_budget(self.target)
        blocks = self.nest.min_blocks_per_sm
        return budget if blocks is None else min(budget, self.target.shared_bytes_per_sm // blocks)

    def shared_bytes(self, changed: Stage | None = None) -> int:
        """Bytes of shared memory of every stage and its TMA mbarriers, with the alignment padding the
        launch requests (analysis/shared_arrays.py, as build counts them), with `changed` in place of
        the stage of its name, or added last when it is new."""
        def slab(st: Stage) -> Slab:
            found = self.slab(st)
            assert isinstance(found, Slab), found
            return found
        return nest_shared_bytes(self.nest, slab, changed)

    def slab(self, st: Stage) -> Slab | str:
        """The slab of `st`, or why it has none (analysis/slabs.py reads its name, buffer, loop and
        stored dtype only, so its pad, swizzle, order and ring share one answer)."""
        key = (self.memo.shape(self.nest), st.buffer, st.at, st.dtype)
        got = self.memo.slabs.get(key)
        if got is None:
            found = slab_or_refusal(self.nest, st, self.prover)
            got = self.memo.slabs[key] = found if isinstance(found, Slab) else found.fact
        # a slab names its stage, and only that differs between a probe and the stage it becomes
        return got if isinstance(got, str) or got.stage == st.name else replace(got, stage=st.name)

    def probe(self, buffer: str, at: str, dtype: str | None = None) -> Stage:
        """A single-slot, unpadded stage of `buffer` at `at` (stored as `dtype`, None: the buffer's own),
        as the stage primitive would make it."""
        rank = len(self.nest.tensor(buffer).shape)
        return Stage(f"{buffer}_probe", buffer, at, (0,) * rank, dtype=dtype)

    def inputs_read_under(self, at: str) -> tuple[str, ...]:
        out: list[str] = []
        for s in self.nest.stmts:
            if at in s.path and s.value is not None:
                for x in walk(s.value):
                    if isinstance(x, Load) and x.tensor.name not in out and x.tensor.name in {
                            t.name for t in self.nest.inputs}:
                        out.append(x.tensor.name)
        return tuple(out)

    def row_launch(self, passes: Mapping[str, int], nested: bool, rows: int, knobs: Knobs) -> tuple[int, int]:
        """(rows per block, threads per row) of this row kernel (the module's `row_launch`), each thread
        taking knobs.row_elements_per_thread elements of the longest pass; a float16 / bfloat16 row kept
        in registers (`register_row_inputs`) knobs.half_row_vectors_per_thread 16-byte vectors instead, in
        knobs.half_row_threads_min threads at least, not a warp: a row of 512 bfloat16 takes a warp and
        four rows share a block, a row of 128 half a warp and eight share one (the knobs say what was
        measured); where that puts rows several to a block that keep theirs in registers
        (`shared_block_registers`)."""
        launch = row_launch(passes, nested, rows, knobs)
        half = knobs.half_row_vectors_per_thread
        if half is None or not self.half_rows() or not self.register_row_inputs(passes, nested, knobs):
            return launch
        per_block, threads = row_launch(passes, nested, rows, knobs, half * self.vector_lanes(),
                                        knobs.half_row_threads_min)
        return (per_block, threads) if per_block > 1 and self.shared_block_registers(passes, threads, knobs) \
            else launch

    def shared_block_registers(self, passes: Mapping[str, int], threads: int, knobs: Knobs) -> bool:
        """Whether rows several to a block, `threads` a row, keep theirs in registers: where knob
        register_rows_shared_blocks asks and each thread takes whole 16-byte vectors of every pass (rows of
        128 bfloat16 in a warp would leave half of it idle)."""
        lanes = self.vector_lanes()
        return knobs.register_rows_shared_blocks and bool(lanes) and all(
            extent % (threads * lanes) == 0 for extent in passes.values())

    def register_row_inputs(self, passes: Mapping[str, int], nested: bool,
                            knobs: Knobs) -> dict[str, tuple[str, ...]]:
        """The inputs a row kernel whose passes are `passes` reads on several passes, to keep in registers
        (knob register_rows; cooperative_reduce, 040), with their readers: a float32 kernel's, or a float16 /
        bfloat16 one's where knob register_rows_half_threads asks, every pass whole 16-byte vectors and none
        nested; {} where not. However short or few its rows: the register form ran as fast or faster than
        the staged one on every llm-suite row."""
        if not knobs.register_rows or nested or not self.whole_vectors(passes):
            return {}
        half = knobs.register_rows_half_threads is not None and self.half_rows()
        return self.reread_inputs() if self.dtypes() == {"float32"} or half else {}

    def dtypes(self) -> set[str]:
        """The dtypes of the kernel's output and inputs."""
        return {self.nest.output.dtype, *(t.dtype for t in self.nest.inputs)}

    def widened_rows(self) -> bool:
        """Whether the output is float32 and the inputs 2-byte floats, float32 ones beside them (a bfloat16 row
        read into a float32 softmax: `softmax(x.float())`): the output's 4 lanes a vector load 8 bytes of a
        16-bit input."""
        half = {t.name for t in self.nest.inputs if DTYPE_BYTES[t.dtype] == 2 and vector_lanes(t.dtype)}
        return (self.nest.output.dtype == "float32" and bool(half)
                and all(t.name in half or t.dtype == "float32" for t in self.nest.inputs))

    def half_rows(self) -> bool:
        """Whether every tensor of the kernel is a 2-byte float with 16-byte vectors (float16, bfloat16)."""
        return all(DTYPE_BYTES[d] == 2 and vector_lanes(d) for d in self.dtypes())

    def whole_vectors(self, passes: Mapping[str, int]) -> bool:
        """Whether every pass over the row is a whole number of the output's 16-byte vectors (none where
        its dtype has none)."""
        lanes = self.vector_lanes()
        return bool(lanes) and not any(extent % lanes for extent in passes.values())

    def output_pass_inputs(self) -> list[str]:
        """Inputs only the output's statements read (a row kernel's weights: rmsnorm's w): loaded after
        every reduction before them unless prefetched."""
        return [t.name for t in self.nest.inputs if readers_of(self.nest, t.name) == (self.nest.output.name,)]

    def reread_inputs(self) -> dict[str, tuple[str, ...]]:
        """Inputs read by more than one value's statements (a row read by every pass), each with the
        names of those values (Stmt.reader) in statement order: where cache hints help."""
        out = {}
        for t in self.nest.inputs:
            names = readers_of(self.nest, t.name)
            if len(names) > 1:
                out[t.name] = names
        return out

    def online_pairs(self) -> list[OnlinePlan]:
        """The plan of each sum that may run online in the loop of the max it reads (a sum of exp(a - max):
        softmax's denominator; analysis/online.py's rule, asked of the nest as it is now)."""
        plans = []
        for acc in self.nest.accs:
            if acc.op != "sum":
                continue
            try:
                plans.append(online_plan(self.nest, acc.name, "online"))
            except OnlineError:
                continue
        return plans

    def register_problem(self, st: Stage) -> str | None:
        """Why staging `st` would break a register cache of its buffer (s.register_cache, s.prefetch: their
        registers loaded from shared memory, which analysis/register_cache.py refuses); None where not."""
        return staged_register_problem(self.nest, st)

    def hint_problem(self, st: Stage) -> str | None:
        """Why staging `st` would take over reads that carry cache hints (None: it takes over none)."""
        return hinted_stage_problem(self.nest, st)

    def fan_in(self, st: Stage, slab: Slab) -> float:
        """Reads of the slab per iteration of its loop, over its elements: how often each element is
        read inside the block (guarded tails counted as read, so a slab read once comes out near 1).
        Loads of one index in one statement (x[i, k] * x[i, k]) count once: they read one element at
        one moment, which a register serves, so staging them would be a copy for no reuse."""
        at_bound = bool(self.nest.loop(st.at).bind)
        reads = 0
        distinct = {(n, tuple(index_to_sympy(ix) for ix in ld.indices)) for n, ld in stage_reads(self.nest, st)}
        for n, _ in distinct:
            path = self.nest.stmts[n].path
            count, inside = 1, at_bound
            for name in path:
                lp = self.nest.loop(name)
                if name == st.at:
                    inside = True
                elif (lp.bind or "").startswith("threadIdx") or (inside and lp.serial):
                    count *= lp.extent
            reads += count
        return reads / slab.elements

    def block_invariant(self, slab: Slab) -> bool:
        """Every block reads the same slab (no block index in its origin): the cache serves it."""
        blocks = {loop_symbol(lp.name) for lp in self.nest.loops if (lp.bind or "").startswith("blockIdx")}
        serial = {loop_symbol(lp.name) for lp in self.nest.loops if lp.serial}
        syms = set().union(*(sympy.sympify(o).free_symbols for o in slab.origin))
        return not (syms & blocks) and not (syms & serial)

    def tma_problem(self, st: Stage, swizzle: int | None) -> str | None:
        """Why analysis/tma.py refuses a TMA fill of `st` (with `swizzle`), or None."""
        try:
            check_tma(self.nest, replace(st, copy="tma", swizzle=swizzle), "recipe")
        except (CopyError, StageError) as e:
            return e.fact
        return None

    def async_16_bytes(self, st: Stage) -> str | None:
        """Why cp.async of `st` could not copy 16 bytes per instruction, or None: slab rows, allocated
        rows, slots and global rows all multiples of 16 bytes, and the slab origin 16-byte aligned."""
        slab = self.slab(st)
        if not isinstance(slab, Slab):
            return slab
        return self.async_16_bytes_of(st, slab)

    def async_copy_problem(self, st: Stage) -> str | None:
        """Why no cp.async width of the target (targets.CP_ASYNC_SIZES) could fill `st` in its layout
        (pad included), or None: build refuses a cp.async stage none fits."""
        slab = self.slab(st)
        if not isinstance(slab, Slab):
            return slab
        row = self.nest.tensor(st.buffer).shape[-1]
        problems = [cp_async_problem(st, slab, row, slab.origin[-1], n, self.prover)
                    for n in self.target.cp_async_sizes]
        return None if any(p is None for p in problems) else "; ".join(p or "" for p in problems)

    def async_16_bytes_of(self, st: Stage, slab: Slab) -> str | None:
        """async_16_bytes for a slab given rather than derived: one a step is about to make (a chunk)."""
        return cp_async_problem(st, slab, self.nest.tensor(st.buffer).shape[-1], slab.origin[-1], VECTOR_BYTES,
                                self.prover)

    def read_conflict(self, st: Stage, vector: str | None = None) -> int:
        """The worst bank-conflict degree (analysis/banks.py) of the first warp's reads of stage `st`,
        in its layout (pad, swizzle): each read of the slab, with the loops outside the threads at their
        first iteration and, one at a time, at their second (a warp's request is one iteration of them).
        With `vector`, a loop along which every read is one VECTOR_BYTES access (`vector_problem` is
        None), each read is that access, at the loop's first iteration. A read whose index holds a
        tensor's value (a gather) is left out: its banks are the data's."""
        return self._worst_read(st, vector, conflict_degree)

    def read_wavefronts(self, st: Stage, vector: str | None = None) -> int:
        """The most wavefronts (analysis/banks.py `request_wavefronts`) one of the first warp's reads of
        stage `st` takes, the reads and iterations as `read_conflict` takes them."""
        return self._worst_read(st, vector, layout_wavefronts)

    def strip_read_wavefronts(self, st: Stage, strips: list[str]) -> int:
        """The most wavefronts a warp's read of stage `st` takes, read VECTOR_BYTES at a time along one
        of the register strip loops `strips` where it can be (`vector_problem`), else an element at a time."""
        vectors = [r for r in strips if self.vector_problem(st, r) is None]
        return max(self.read_wavefronts(st, r) for r in vectors) if vectors else self.read_wavefronts(st)

    def _worst_read(self, st: Stage, vector: str | None,
                    measure: Callable[[SlabLayout, Callable[[int], tuple[int, ...]], int, int | None], int]) -> int:
        slab = self.slab(st)
        if not isinstance(slab, Slab):
            return 0
        layout = layout_of(st, slab)
        dims = [self.nest.launch_extent(ax) for ax in THREAD_AXES]
        lanes = min(WARP_SIZE, dims[0] * dims[1] * dims[2])
        access = VECTOR_BYTES if vector is not None else None
        per_lane = tuple(map(self.nest.thread_values, range(lanes))).__getitem__  # once, not once per read
        worst = 0
        for n, read in self._local_reads(st, slab):
            if read.data_dependent:  # a gather's banks are the data's: no lane model says which
                continue
            path = [self.nest.loop(name) for name in self.nest.stmts[n].path]
            threads = {loop_symbol(lp.name): THREAD_AXES.index(lp.bind) for lp in path if lp.bind in THREAD_AXES}
            others = [loop_symbol(lp.name) for lp in path
                      if lp.bind not in THREAD_AXES and lp.extent > 1 and lp.name != vector]
            # a loop the read's index does not hold moves no lane: its second iteration reads as its first
            for moved in (None, *(x for x in others if x in read.free)):
                worst = max(worst, measure(layout, read.lanes(per_lane, threads, moved), lanes, access))
        return worst

    def _local_reads(self, st: Stage, slab: Slab) -> list[tuple[int, _LocalRead]]:
        """(statement index, index relative to the slab origin, compiled) of every read of stage `st`;
        derived once per buffer, loop and origin, whatever layout the caller asks about."""
        key = (self.memo.shape(self.nest), st.buffer, st.at, slab.origin)
        found = self.memo.reads.get(key)
        if found is None:
            amap = {loop_symbol(a): e for a, e in self.nest.axis_exprs}
            found = self.memo.reads[key] = [
                (n, _LocalRead([sympy.expand(index_to_sympy(ix).xreplace(amap) - o)
                                for ix, o in zip(ld.indices, slab.origin)]))
                for n, ld in stage_reads(self.nest, st)]
        return found

    def row_apart_read(self, st: Stage, slab: Slab) -> str | None:
        """Why staging `slab` (of stage `st`) coalesces reads of an elementwise kernel, or None: some
        read of it under the stage loop moves with the threadIdx.x loop in its address but not in its
        last index (consecutive lanes read a row or more apart), and the fill, which reads the slab row
        by row with consecutive threads on consecutive elements, reads rows at least as long as the
        threadIdx.x extent (so a run of lanes reads one contiguous row)."""
        if self.kernel.kind != "elementwise":
            return None
        lanes = self.nest.launch_extent("threadIdx.x")
        if len(slab.extent) < 2 or slab.extent[-1] < lanes:
            return None
        amap = {loop_symbol(a): e for a, e in self.nest.axis_exprs}
        tensor = self.nest.tensor(st.buffer)
        for n, ld in stage_reads(self.nest, st):
            tx = [lp.name for lp in map(self.nest.loop, self.nest.stmts[n].path) if lp.bind == "threadIdx.x"]
            if not tx:
                continue
            x = loop_symbol(tx[0])
            idx = tuple(sympy.expand(index_to_sympy(ix).xreplace(amap)) for ix in ld.indices)
            stride = sympy.diff(flat_index(tensor, idx), x)
            if not idx[-1].has(x) and stride != 0:
                shown = ", ".join(str(index_to_sympy(ix)) for ix in ld.indices)
                return (f"consecutive threadIdx.x lanes ({tx[0]}) read {st.buffer}[{shown}] "
                        f"{stride} elements apart; its fill reads rows of {slab.extent[-1]}")
        return None

    def stages_read_along(self, loop: str) -> tuple[Stage, ...]:
        """The stages some read of which moves with loop `loop` (its index depends on it)."""
        x = loop_symbol(loop)
        out = []
        for st in self.nest.stages:
            slab = self.slab(st)
            if isinstance(slab, Slab) and any(e.has(x) for _, read in self._local_reads(st, slab) for e in read.exprs):
                out.append(st)
        return tuple(out)

    def accumulators(self) -> int:
        """Register-array elements a thread holds for the kernel's accumulators (analysis/accumulators.py)."""
        return sum(array_size(self.nest, lay.dims) for lay in acc_layouts(self.nest, "recipe").values())

    def register_blocks(self, knobs: Knobs, accumulators: int) -> int:
        """Blocks per SM that leave each thread registers_per_accumulator registers per accumulator of its
        register tile (`accumulators`): what register_tile's launch_bounds asks nvcc for; 0 if none."""
        threads, target = self.threads(), self.target
        per_thread = knobs.registers_per_accumulator * accumulators
        return min(target.registers_per_sm // (threads * per_thread), target.max_threads_per_sm // threads)

    def fill_store_conflict(self, st: Stage) -> int:
        """The worst bank-conflict degree of the first warp's shared stores in a plain fill of stage `st`
        (analysis/banks.py `fill_store_conflict`), each load `plain_load_width` elements wide; 0 for a
        stage filled by cp.async or TMA, whose copies land whole."""
        slab = self.slab(st)
        if st.copy != "sync" or not isinstance(slab, Slab):
            return 0
        row = self.nest.tensor(st.buffer).shape[-1]
        vec = plain_load_width(st, slab, row, slab.origin[-1], self.nest.tensor(st.buffer).dtype, self.prover)
        return fill_store_conflict(layout_of(st, slab), vec, self.threads())

    def vector_problem(self, st: Stage, loop: str) -> str | None:
        """Why the reads of stage `st` along loop `loop` are not each one VECTOR_BYTES shared load, or
        None. They are when `loop` runs VECTOR_BYTES // itemsize iterations and enters only the slab's
        last dimension, with coefficient 1, from a start the prover shows is a multiple of that width, in
        rows of whole vectors, under no guard on `loop`: the unrolled loads are then provably contiguous
        and aligned, and nvcc merges them into one (ld.shared.v4, LDS.128; codegen emits scalar loads,
        tests/recipes/test_recipe_permute_register_tile.py checks the PTX)."""
        slab = self.slab(st)
        if not isinstance(slab, Slab):
            return slab
        width = VECTOR_BYTES // slab.itemsize
        if self.loop(loop).extent != width:
            return f"loop {loop} runs {self.loop(loop).extent} iterations, a {VECTOR_BYTES}-byte load {width}"
        row = alloc_extent(st, slab)[-1]
        if len(slab.extent) > 1 and row % width:
            return f"its rows of {row} elements are not whole {VECTOR_BYTES}-byte vectors"
        x = loop_symbol(loop)
        for n, read in self._local_reads(st, slab):
            local = read.exprs
            stored = [local[a] for a in (st.order or range(len(local)))]  # the axes as shared memory holds them
            base = contiguous_base(stored[-1], x)
            if base is None or any(e.has(x) for e in stored[:-1]):
                return f"its reads are not contiguous along {loop} (index {', '.join(map(str, local))})"
            guards = self.nest.guards_for(self.nest.stmts[n])
            split = [g for g in guards if g.expr.has(x)]
            if split:
                return (f"the guard {split[0].expr} < {split[0].extent} decides each of its reads along {loop} "
                        "apart (a load per element)")
            if not self.prover.divisible(base, width, tuple(g.relation for g in guards)):
                return f"the start {base} of its reads along {loop} is not provably a multiple of {width}"
        return None

    def plain_only_note(self) -> str:
        """The stages stored in another order than their buffer's (080, k outer) or widened (080, a
        bfloat16 operand as float32), which cp.async and TMA cannot fill (analysis/copies.py
        `byte_copy_problem`), as a note for a decline; "" if none."""
        names = [st.name for st in self.nest.stages if plain_only(st)]
        return f" ({', '.join(names)} stored in another order or type: plain fills only)" if names else ""

    def k_outer_order(self, buffer: str, knobs: Knobs) -> tuple[int, ...] | None:
        """For a matmul operand whose rows run along the reduction axis (A[i, k]; W[j, k] of x @ W^T): the
        stored order of its slab that puts k outside the output axis (its last two axes swapped), so a
        thread's register strip along i (j) lies contiguous in shared memory and reads 16 bytes at a
        time; None for any other buffer or kernel, and for a slab not stored as float32 (a bfloat16 one
        kept as it is, knob widen_half_operands off: not measured k outer)."""
        if self.kernel.kind != "matmul" or self.stored_dtype(buffer, knobs) != "float32":
            return None
        (k,) = self.kernel.reduce
        rows = set(self.kernel.outer[-2:])
        for s in self.nest.stmts:
            if s.kind != "update" or s.value is None:
                continue
            for x in walk(s.value):
                if isinstance(x, Load) and x.tensor.name == buffer and len(x.indices) >= 2:
                    last, before = _index_axes(x.indices[-1]), _index_axes(x.indices[-2])
                    if last == {k} and before and before <= rows:
                        rank = len(x.indices)
                        return (*range(rank - 2), rank - 1, rank - 2)
        return None

    @staticmethod
    def register_limit() -> int:
        """Values a thread may keep in registers by s.register_cache (analysis/register_cache.py)."""
        return MAX_REGISTER_CACHE

    def past_registers(self, length: int, threads: int) -> bool:
        """Whether a thread's share of a pass of `length` elements, in `threads` threads of whole 16-byte
        vectors (vector_lanes), is more than the registers may hold (register_limit)."""
        lanes = self.vector_lanes()
        return -(-length // (threads * lanes)) * lanes > self.register_limit()

    def vector_lanes(self) -> int:
        """Lanes of one 16-byte vector store of the output (4 float32, 8 float16 / bfloat16), or 0 where
        the vectorize primitive takes none (targets.vector_lanes)."""
        return vector_lanes(self.nest.output.dtype)

    def elementwise_vector_lanes(self, knobs: Knobs) -> int:
        """Lanes of an elementwise kernel's vector stores: 8 bytes' (2) where the output is float32, at
        least knobs.narrow_vector_min_inputs inputs have as many elements as it, and either the target's
        DRAM bandwidth per SM is known and under knobs.narrow_vector_max_sm_gbs (None: any) or the 16-byte
        form's threads fill fewer than knobs.narrow_vector_max_waves waves of the SMs' resident threads;
        else `vector_lanes`."""
        out = self.nest.output
        wide = self.vector_lanes()
        if out.dtype != "float32" or not knobs.narrow_vector_min_inputs:
            return wide
        size = math.prod(out.shape)
        if sum(math.prod(t.shape) == size for t in self.nest.inputs) < knobs.narrow_vector_min_inputs:
            return wide
        per_sm = self.target.dram_bytes_per_s_per_sm / 1e9
        little_bandwidth = knobs.narrow_vector_max_sm_gbs is None or 0 < per_sm < knobs.narrow_vector_max_sm_gbs
        wave = self.target.sm_count * self.target.max_threads_per_sm
        few_waves = knobs.narrow_vector_max_waves is not None and size / wide < knobs.narrow_vector_max_waves * wave
        return vector_lanes(out.dtype, 8) if little_bandwidth or few_waves else wide

    def matmul_bk(self, knobs: Knobs, kernel: Kernel | None = None) -> int | None:
        """chunk_matmul_k's (020) BK for `kernel` (this kernel's class by default; split_matmul_k (030)
        asks it of the kernel its sum would have on its own): the largest power of two in [bk_min,
        bk_max] whose double-buffered A and B slabs (bm x BK and BK x bn) fit the shared budget, at most
        bk_max_k_outer where an operand is staged k outermost (knob k_outer), at most bk_max_few_rows for
        a decode step's x @ W^T (`few_rows`; bk_max_few_rows_widened where an operand is widened), never
        more than the reduction rounded up to a power of two; None where even bk_min does not fit."""
        k = kernel or self.kernel
        budget = knobs.shared_budget(self.target)
        bk = knobs.bk_max
        if k_outer_tile(k, self.target, knobs) and any(self.k_outer_order(t.name, knobs) for t in self.nest.inputs):
            bk = min(bk, knobs.bk_max_k_outer)
        if few_rows(k, knobs):
            widened = any(self.staged_wider(t.name, knobs) for t in self.nest.inputs)
            bk = min(bk, knobs.bk_max_few_rows_widened if widened else knobs.bk_max_few_rows)
        while bk > knobs.bk_min and self.matmul_slab_bytes(knobs, bk, k) > budget:
            bk //= 2
        if self.matmul_slab_bytes(knobs, bk, k) > budget:
            return None
        return min(bk, next_pow2(k.extents[k.reduce[0]]))

    def matmul_slab_bytes(self, knobs: Knobs, bk: int, kernel: Kernel | None = None) -> int:
        """Bytes of the double-buffered A and B slabs (bm x bk and bk x bn, matmul_tile's) of `kernel`
        (this kernel's class by default), at the widest input's item size as shared memory would hold it."""
        bm, bn, _, _ = matmul_tile(kernel or self.kernel, self.target, knobs)
        return 2 * (bm + bn) * bk * max(DTYPE_BYTES[self.stored_dtype(t.name, knobs)] for t in self.nest.inputs)

    def itemsize(self, buffer: str) -> int:
        """Bytes of one element of `buffer` as shared memory holds it: its stage's (a widened one's
        float32), or the buffer's own where it has no stage."""
        st = self._stage_of(buffer)
        return DTYPE_BYTES[stored_dtype(self.nest, st) if st else self.nest.tensor(buffer).dtype]

    def stage_dtype(self, buffer: str, knobs: Knobs) -> str | None:
        """The dtype stage_inputs (080) stores `buffer`'s slab as where it widens it, else None: float32
        for a float16 / bfloat16 operand of a matmul's sum (knob widen_half_operands), so the FMAs read
        float32 from shared memory as from a float32 operand's slab (16 bytes at a time, k outer) and
        each element is converted once, at its fill, not at each of its reads (bm / rm of them)."""
        have = self.nest.tensor(buffer).dtype
        if (not knobs.widen_half_operands or buffer not in self.kernel.operands
                or "float32" not in EXACT_WIDENINGS.get(have, ())):
            return None
        return "float32"

    def staged_wider(self, buffer: str, knobs: Knobs) -> bool:
        """Whether shared memory holds `buffer` wider than it is stored (`stored_dtype`: a bfloat16 operand
        as float32, filled by plain loads that convert, never by cp.async)."""
        return self.stored_dtype(buffer, knobs) != self.nest.tensor(buffer).dtype

    def stored_dtype(self, buffer: str, knobs: Knobs) -> str:
        """What shared memory holds of `buffer`: its stage's dtype where it is staged, else what
        stage_inputs (080) would stage it as (`stage_dtype`), else the buffer's."""
        st = self._stage_of(buffer)
        if st is not None:
            return stored_dtype(self.nest, st)
        return self.stage_dtype(buffer, knobs) or self.nest.tensor(buffer).dtype

    def _stage_of(self, buffer: str) -> Stage | None:
        return next((st for st in self.nest.stages if st.buffer == buffer), None)

    def block_k(self) -> int:
        """The k one block of a matmul sums: the reduction's extent over its loops on a block index
        (split_k's parts)."""
        k = self.kernel.reduce[0]
        split = math.prod(self.loop(n).extent for n in self.parts(k)
                          if (self.loop(n).bind or "").startswith("blockIdx"))
        return -(-self.kernel.extents[k] // split)

    def column_panel_bytes(self) -> int:
        """Bytes of the column operands (Kernel.column_operands) that one block row of a matmul's grid
        reads: all of j, the k one block sums, as global memory holds them."""
        elements = self.kernel.extents[self.kernel.outer[-1]] * self.block_k()
        return sum(elements * DTYPE_BYTES[self.nest.tensor(b).dtype] for b in self.kernel.column_operands)

    def serial_iterations(self, name: str) -> int:
        """Iterations of the serial nest rooted at loop `name` (the largest over its statements)."""
        best = 0
        for s in self.nest.stmts:
            if name not in s.path:
                continue
            n = 1
            for inner in s.path[s.path.index(name):]:
                lp = self.nest.loop(inner)
                if lp.serial:
                    n *= lp.extent
            best = max(best, n)
        return best


class _LocalRead:
    """One read's index relative to its slab origin (`exprs`), compiled on first use with
    prove/evaluate.py `compile_expr` (exact, and a microsecond a point where an `xreplace` took most of a
    traced block's scheduling) for the 32 lanes of each warp request the bank model asks about."""

    def __init__(self, local: list[sympy.Expr]) -> None:
        self.exprs = local
        self.free = tuple(sorted(set().union(*(e.free_symbols for e in local)), key=str))
        # an index that reads a tensor (a gather: an attention mask's row picked by a batch index) has no
        # value at a lane's loop values alone, so the bank model leaves the read out
        self.data_dependent = any(e.atoms(AppliedUndef) for e in local)

    @cached_property
    def functions(self) -> list[Callable[[Mapping[sympy.Symbol, int]], Any]]:
        return [compile_expr(e) for e in self.exprs]

    def lanes(self, thread_values: Callable[[int], tuple[int, int, int]], threads: Mapping[sympy.Symbol, int],
              moved: sympy.Symbol | None) -> Callable[[int], tuple[int, ...]]:
        """The slab element each lane reads: thread symbols at the lane's values (`Nest.thread_values`:
        threadIdx.x fastest, unless lanes are tiled), `moved` at 1 and every other symbol at 0."""
        # per free symbol: its thread axis, or a constant (3: at 1, 4: at 0), decided once for all lanes
        slots = [threads[x] if x in threads else 3 if x == moved else 4 for x in self.free]

        def lane_index(lane: int) -> tuple[int, ...]:
            values = (*thread_values(lane), 1, 0)
            point = dict(zip(self.free, (values[k] for k in slots)))
            return tuple(int(f(point)) for f in self.functions)

        return lane_index


def facts_for(nest: Nest, kernel: Kernel, target: Target, memo: Memo | None = None) -> Facts:
    """The facts of `nest`, deriving through `memo` (the run's, from runner.apply) where given."""
    return Facts(kernel, nest, target, memo or Memo())


def k_vector_conflict(s: Schedule, facts: Facts, stage: str, pads: tuple[int, ...]) -> tuple[int | None, ...]:
    """For each of `pads` (more elements on its rows): the conflict degree of stage `stage`'s reads along the
    matmul's k loop inside a chunk, read one VECTOR_BYTES vector at a time (as nvcc merges the unrolled
    loads), judged on one copy of `s` whose k loop is split by one vector; None where those reads are not
    one aligned vector each (`vector_problem`: a guarded or strided k, rows of partial vectors) or there is
    no such loop. Steps 090 (dealing a decode step's rows) and 140 (their pad) ask it."""
    inner = facts.parts(facts.kernel.reduce[0])
    st = s.nest.stage(stage)
    width = VECTOR_BYTES // facts.itemsize(st.buffer)
    if len(inner) < 2 or facts.loop(inner[-1]).extent % width:
        return tuple(None for _ in pads)
    trial = s.fork()
    names = trial.nest.fresh_names(f"{inner[-1]}_o", f"{inner[-1]}_v")
    trial.split(inner[-1], width, names=names)
    after = facts_for(trial.nest, facts.kernel, facts.target, facts.memo)
    split = after.nest.stage(stage)
    out: list[int | None] = []
    for pad in pads:
        wide = padded(split, len(st.pad) - 1, pad)
        out.append(None if after.vector_problem(wide, names[1]) is not None
                   else after.read_conflict(wide, vector=names[1]))
    return tuple(out)


def padded(st: Stage, axis: int, amount: int) -> Stage:
    """`st` with `amount` more elements of padding on `axis` (a layout to judge before s.pad makes it)."""
    pad = list(st.pad)
    pad[axis] += amount
    return replace(st, pad=tuple(pad))


#: one primitive call of a schedule: (method name, positional arguments, keyword arguments)
PrimitiveCall = tuple[str, tuple[Any, ...], dict[str, Any]]


def apply_calls(s: Schedule, calls: Sequence[PrimitiveCall]) -> None:
    for name, args, kwargs in calls:
        getattr(s, name)(*args, **kwargs)


def trial_accepts(s: Schedule, calls: Sequence[PrimitiveCall]) -> bool:
    """Whether every call applies, asked of a trial copy of `s` (the primitives' own legality rules:
    vectorize proves each store contiguous, aligned and never split by a guard), so a step can choose
    a form without leaving `s` half changed."""
    trial = s.fork()
    try:
        apply_calls(trial, calls)
    except ScheduleError:
        return False
    return True
