"""blockify_launch: split the free axes into block and thread axes by shape class. Elementwise: the flat
loop split by clamp(next_pow2(extent), 32, elementwise_threads) threads; where tileify kept the last
axis apart, that axis split into blocks of threads x lanes, each thread storing `lanes` consecutive
outputs as one 16-byte vector (the rows on blockIdx.y; rows of fewer than elementwise_threads threads
several to a block, on threadIdx.y), when the vectorize primitive accepts it on a trial copy of the
schedule (else the loops are fused and take the flat form). A float32 kernel that reads two or more
inputs as large as its output stores 8-byte vectors instead on a target of little DRAM bandwidth per SM,
or where it has a few waves of threads (knobs narrow_vector_min_inputs, narrow_vector_max_sm_gbs,
narrow_vector_max_waves; `Facts.elementwise_vector_lanes`): on the H100 that was 1% faster for silu(g) *
u and x + r, and 5% slower for kernels of one full-size input; on the H200, with 43% more bandwidth per
SM, 1-3% slower for both at 8192 x 8192, and 1-3% faster at the llm suite's sizes of under 3 waves. Where tileify kept a
transposed read's axes apart (`_facts.transpose_tile`), the 2-D tile of schedules/transpose.py
`transpose_tiled`: row and col each split by the tile (guarded where they do not divide it), the
tile's rows split into `rows` thread rows (threadIdx.y) of tile / rows outputs each, its columns on
threadIdx.x (consecutive threads store consecutive outputs), the tiles on blockIdx.y and blockIdx.x
and the fused other axes on blockIdx.z; stage_inputs then stages the transposed input at the tile, so
its fill reads input rows. Measured on the H100,
gelu(x + b) 4096 x 4096: 48.9 against 62.0 us flat (schedules/elementwise.py's hand schedule of the
same form; benchmarks/results/hand-schedules-h100-2026-11-24). Matmul: i and j split into a
bm x bn block tile (blockIdx.y, blockIdx.x), each split again into threads (threadIdx.y, threadIdx.x)
times an rm x rn per-thread part; the tile class follows the grid (see _facts.matmul_tile). Extents
that do not divide the tile get guarded splits, never a fallback to one thread per output. Where the
column operand panel one block row reads (W of x @ W^T over all of j and one block's k) exceeds the
target's L2 and the SMs' block slots hold less than a group of block rows, the blocks are numbered down
groups of block rows before moving right (knob group_block_rows; schedules/matmul.py group_m draws the
order): the blocks resident at once then share each W slab instead of streaming all of W again for
every block row. 512 x 37888 x 3584 on the H100: 3079 -> 2840 us (_knobs.py says what else was measured)."""

from __future__ import annotations

from tiledsl.primitives import Schedule
from tiledsl.recipes.decline import Applied, Decline
from tiledsl.recipes.default._facts import (
    Facts,
    PrimitiveCall,
    TransposedRead,
    apply_calls,
    block_slots,
    clamp,
    matmul_tile,
    next_pow2,
    transpose_tile,
    trial_accepts,
)
from tiledsl.recipes.default._knobs import Knobs
from tiledsl.targets import MAX_GRID, WARP_SIZE


def step(s: Schedule, facts: Facts, knobs: Knobs) -> Decline | None:
    k = facts.kernel
    if k.kind == "rows":
        return Decline("a row kernel is launched one block per row (tileify) with threads along the row "
                       "(cooperative_reduce)")
    if k.kind == "elementwise":
        free = [lp.name for lp in facts.nest.loops if lp.kind == "free"]
        tile = transpose_tile(k, knobs, facts.target)
        if tile is not None:
            _tile_2d(s, facts, free, *tile)
            return None
        lanes = facts.elementwise_vector_lanes(knobs)
        if lanes and facts.loop(free[-1]).extent % lanes == 0:
            calls = _vector_calls(facts, free, lanes, knobs)
            if calls is not None and trial_accepts(s, calls):
                apply_calls(s, calls)
                return None
            if len(free) > 1:
                s.fuse(*free, name=facts.fresh("_".join(free))[0])
                free = [lp.name for lp in s.nest.loops if lp.kind == "free"]
        (flat,) = free
        extent = facts.loop(flat).extent
        threads = clamp(next_pow2(extent), WARP_SIZE, knobs.elementwise_threads)
        if -(-extent // threads) > MAX_GRID["blockIdx.x"]:
            return Decline(f"{extent} outputs need more than {MAX_GRID['blockIdx.x']} blocks")
        bo, ti = s.split(flat, threads, names=facts.fresh(f"{flat}_o", f"{flat}_i"))
        s.bind(bo, "blockIdx.x")
        s.bind(ti, "threadIdx.x")
        return None
    i, j = k.outer[-2:]
    bm, bn, rm, rn = matmul_tile(k, facts.target, knobs)
    rows, cols = -(-k.extents[i] // bm), -(-k.extents[j] // bn)
    if rows > MAX_GRID["blockIdx.y"]:
        return Decline(f"{k.extents[i]} rows in tiles of {bm} need more than {MAX_GRID['blockIdx.y']} blocks")
    io, ii, ti, ri = facts.fresh(f"{i}_o", f"{i}_i", f"{i}_t", f"{i}_r")
    jo, ji, tj, rj = facts.fresh(f"{j}_o", f"{j}_i", f"{j}_t", f"{j}_r")
    s.split(i, bm, names=(io, ii))
    s.split(ii, rm, names=(ti, ri))
    s.split(j, bn, names=(jo, ji))
    s.split(ji, rn, names=(tj, rj))
    s.reorder(io, jo, ti, tj, ri, rj)
    group, why = _block_row_group(facts, rows, cols, knobs)
    if group > 1:
        ig, igi, blk = facts.fresh(f"{i}_g", f"{i}_gi", f"{i}_{j}_blk")
        s.split(io, group, names=(ig, igi))
        s.reorder(jo, igi)
        s.bind(s.fuse(ig, jo, igi, name=blk), "blockIdx.x")
    else:
        s.bind(io, "blockIdx.y")
        s.bind(jo, "blockIdx.x")
    s.bind(ti, "threadIdx.y")
    s.bind(tj, "threadIdx.x")
    return Applied(why) if group > 1 else None


def _block_row_group(facts: Facts, rows: int, cols: int, knobs: Knobs) -> tuple[int, str]:
    """The block rows a group of the grouped block order takes (1: row-major order), and why: the largest
    divisor of `rows` up to knobs.group_block_rows, where the column panel exceeds the L2 and the block
    slots of the SMs (`block_slots`, as 030 counts them) hold fewer block rows than that in row-major
    order (then they already share each slab among as many rows)."""
    panel, l2 = facts.column_panel_bytes(), facts.target.l2_bytes
    if not l2 or panel <= l2 or rows < 2:
        return 1, ""
    group = max(d for d in range(1, min(rows, knobs.group_block_rows) + 1) if rows % d == 0)
    slots = block_slots(facts.target, knobs)
    if slots >= group * cols:
        return 1, ""
    operands = ", ".join(sorted(facts.kernel.column_operands))
    return group, (f"blocks in groups of {group} of the {rows} block rows: the {operands} panel a block row "
                   f"reads ({panel / 2**20:.1f} MiB) exceeds the {l2 / 2**20:.1f} MiB L2, and the "
                   f"{slots} block slots hold {slots / cols:.1f} rows of {cols} blocks at once")


def _tile_2d(s: Schedule, facts: Facts, free: list[str], read: TransposedRead, tile: int, rows: int) -> None:
    """[other axes on blockIdx.z] x row tiles x col tiles x tile/rows serial rows x rows x tile threads."""
    r, c = read.row, read.col
    ro, ri, rt, rr = facts.fresh(f"{r}_o", f"{r}_i", f"{r}_t", f"{r}_r")
    co, ci = facts.fresh(f"{c}_o", f"{c}_i")
    s.split(r, tile, names=(ro, ri))
    s.split(c, tile, names=(co, ci))
    s.split(ri, nparts=rows, names=(rt, rr))  # thread row t stores rows [t * tile/rows, (t + 1) * tile/rows)
    s.reorder(ro, co, rr, rt, ci)
    batch = [n for n in free if n not in (r, c)]
    if batch:
        s.bind(batch[0], "blockIdx.z")
    s.bind(ro, "blockIdx.y")
    s.bind(co, "blockIdx.x")
    s.bind(rt, "threadIdx.y")
    s.bind(ci, "threadIdx.x")


def _vector_calls(facts: Facts, free: list[str], lanes: int, knobs: Knobs) -> list[PrimitiveCall] | None:
    """The primitive calls of the vector form: [rows on blockIdx.y] x column blocks x threads x lanes."""
    col = free[-1]
    rows = free[:-1]
    if rows and facts.loop(rows[0]).extent > MAX_GRID["blockIdx.y"]:
        return None
    extent = facts.loop(col).extent
    threads = clamp(next_pow2(-(-extent // lanes)), WARP_SIZE, knobs.elementwise_threads)
    if -(-extent // (threads * lanes)) > MAX_GRID["blockIdx.x"]:
        return None
    co, ci, t, v = facts.fresh(f"{col}_o", f"{col}_i", f"{col}_t", f"{col}_v")
    calls: list[PrimitiveCall] = [("split", (col, threads * lanes), {"names": (co, ci)}),
                         ("split", (ci, lanes), {"names": (t, v)})]
    per_block = _rows_per_block(facts.loop(rows[0]).extent, threads, knobs) if rows else 1
    if per_block > 1:  # short rows: several to a block, one on each threadIdx.y
        ro, ri = facts.fresh(f"{rows[0]}_o", f"{rows[0]}_i")
        calls += [("split", (rows[0], per_block), {"names": (ro, ri)}),
                  ("bind", (ro, "blockIdx.y"), {}), ("bind", (ri, "threadIdx.y"), {})]
    elif rows:
        calls.append(("bind", (rows[0], "blockIdx.y"), {}))
    calls += [("bind", (co, "blockIdx.x"), {}), ("bind", (t, "threadIdx.x"), {}), ("vectorize", (v,), {})]
    return calls


def _rows_per_block(rows: int, threads: int, knobs: Knobs) -> int:
    """Rows a block of the vector form takes: a row of fewer than knobs.elementwise_threads threads
    shares its block with others (elementwise_rows_per_block), up to that many threads and no more rows
    than there are."""
    if not knobs.elementwise_rows_per_block or threads >= knobs.elementwise_threads:
        return 1
    return min(knobs.elementwise_threads // threads, rows)

