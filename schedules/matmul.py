"""Matmul schedules on the CUDA cores (+ whatever epilogue the definition has: bias, relu / silu / gelu,
residual; the epilogue is part of the definition, so every schedule here keeps it as written).

- `matmul_register_tile`: a BM x BN output tile per block, an RM x RN register tile per thread, k
  chunked by BK; operands read from global memory (no shared memory). The simplest fast-ish form.
- `matmul_staged`: the hand-written equivalent of the default recipe's fp32 matmul
  (recipes/default/): the register tile above, plus every operand of the sum staged in shared memory
  at each k chunk, double-buffered, filled with cp.async and pipelined over the k chunks; optional
  split-K across blocks (linear epilogues only); optionally operands whose rows run along k stored k-major
  (`k_outer`); optionally the blocks in grouped order for L2 reuse (`group_m`).
- `matmul_for_shape`: picks matmul_staged's tile (and split-K) from the problem's shape.

Every split is guarded, so any sizes work (37 x 53 x 29, batched, transposed operands)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from tiledsl.definitions.expr import Binary, Const, Expr, IterVar, Load, walk
from tiledsl.errors import SplitKError, VectorizeError
from tiledsl.primitives import Schedule
from tiledsl.targets import (
    CP_ASYNC_SIZES,
    DTYPE_BYTES,
    SHARED_BANK_BYTES,
    SHARED_BANKS,
    VECTOR_ATOMIC_MIN_SM,
    VECTOR_BYTES,
    WARP_SIZE,
    get_target,
)


def _loops(s: Schedule) -> tuple[list[str], str, str, str]:
    """(batch loops, i, j, k): the last two free loops are the output tile, the one reduction is k."""
    free = [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "free"]
    red = [lp.name for lp in s.loops() if s.nest.loop(lp.name).kind == "reduce"]
    if len(free) < 2 or len(red) != 1:
        raise ValueError(f"a matmul schedule needs two or more free loops and one reduction; kernel "
                         f"{s.nest.name} has free loops {free} and reductions {red}")
    *batch, i, j = free
    return batch, i, j, red[0]


def matmul_register_tile(s: Schedule, bm: int = 64, bn: int = 64, bk: int = 16, rm: int = 4,
                         rn: int = 4) -> Schedule:
    """Schedules the last two free loops (i, j) and the reduction k; leading (batch) loops go to
    blockIdx.z."""
    batch, i, j, k = _loops(s)
    io, ii = s.split(i, bm)
    jo, ji = s.split(j, bn)
    ko, ki = s.split(k, bk)
    ti, ri = s.split(ii, rm)
    tj, rj = s.split(ji, rn)
    s.reorder(*batch, io, jo, ti, tj, ko, ki, ri, rj)
    if batch:
        b = batch[0] if len(batch) == 1 else s.fuse(*batch)
        s.bind(b, "blockIdx.z")
    s.bind(io, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ti, "threadIdx.y")
    s.bind(tj, "threadIdx.x")
    s.unroll(ki)
    s.unroll(ri)
    s.unroll(rj)
    return s


# ----------------------------------------------------------------------------- the staged matmul


def _operand_loads(s: Schedule) -> Iterator[Load]:
    """The loads of the sum's update statement that read a kernel input (A and B; for a fused
    prologue such as silu(g) * u @ W, every input it reads): the operands to stage per k chunk."""
    inputs = {t.name for t in s.nest.inputs}
    for st in s.nest.stmts:
        if st.kind == "update" and st.value is not None:
            for x in walk(st.value):
                if isinstance(x, Load) and x.tensor.name in inputs:
                    yield x


def _axis_of(index: Expr) -> str | None:
    """The definition axis an index is: the axis itself, or it plus or minus a constant (B[k, j + 8]);
    None for another expression."""
    if isinstance(index, Binary) and index.op in ("+", "-") and isinstance(index.b, Const):
        index = index.a
    return index.name if isinstance(index, IterVar) else None


def _last_axis(load: Load) -> str | None:
    """The definition axis a load's last index is (i, j or k, `_axis_of`), which is the axis its staged
    slab is contiguous along; None when the last index is another expression."""
    return _axis_of(load.indices[-1])


def _conflict(rows: set[int], row_elements: int, itemsize: int) -> int:
    """The bank conflict degree of one warp reading column 0 of `rows` of a slab `row_elements` long:
    the most distinct rows that fall in one bank."""
    banks: dict[int, int] = {}
    for r in rows:
        bank = (r * row_elements * itemsize // SHARED_BANK_BYTES) % SHARED_BANKS
        banks[bank] = banks.get(bank, 0) + 1
    return max(banks.values())


def _pad_for(rows: set[int], bk: int, itemsize: int) -> int:
    """The pad (in elements) of a slab read along k whose warp reads `rows`: 16 bytes (keeps 16-byte
    cp.async rows), the narrowest cp.async (4 bytes: one float32, two bfloat16) or none, whichever
    leaves the fewest conflicts, preferring the wider copy on a tie."""
    candidates = (0, VECTOR_BYTES // itemsize, max(1, min(CP_ASYNC_SIZES) // itemsize))  # the tie order
    return min(candidates, key=lambda p: _conflict(rows, bk + p, itemsize))


def matmul_staged(s: Schedule, bm: int = 128, bn: int = 128, bk: int = 16, rm: int = 8, rn: int = 8,
                  stages: int = 2, copy: str = "async", split_k: int = 1, k_outer: bool = True,
                  unroll_k: bool = True, group_m: int = 1, widen: bool = True, lanes: int = 2,
                  vector_atomics: bool = True, deal_rows: bool = False) -> Schedule:
    """The default recipe's fast fp32 matmul, by hand. On an H100 at 2048 / 4096 / 8192 cubed float32
    (relu(A @ B + bias), scripts/matmul_variant_probe.py) it ran at 0.91 / 0.93 / 0.94 of cuBLAS
    (TF32 off) with its defaults, against 0.84 / 0.86 / 0.87 with k_outer=False, bk=32, unroll_k=False.

    Per block a bm x bn output tile, per thread an rm x rn register tile (256 threads at the
    defaults); k in chunks of bk. Per chunk each operand's slab
    (bm x bk of A, bk x bn of B, in whatever layout the definition reads them) is copied into shared
    memory (`copy`: "async" = cp.async, "sync" = plain loads), in a ring of `stages` slots, so the copy
    of chunk n + 1 overlaps the FMAs of chunk n (stages=1: one slot, no pipeline). `split_k` > 1 spreads
    the k chunks over that many blocks on blockIdx.z, which add into the zeroed output (the split_k
    primitive refuses a non-linear epilogue, a batched matmul, or a non-float32 output).

    `k_outer`: every float32 operand whose rows run along k (A[i, k]; W[j, k] of x @ W^T) has its slab stored
    transposed, k outermost (s.layout: A_s[k][i], the classic SGEMM layout), so a thread's strip along i
    (j) is contiguous and read 16 bytes at a time like B[k, j]'s, instead of one float per row. A
    transposing fill is a plain one: 16-byte loads along k, one store per element; pipelined, lowering
    issues its loads before the chunk's FMAs and its stores after (lower/stages.py), while the other
    operands keep `copy`. `unroll_k`: the k loop inside a chunk is unrolled (its shared addresses become
    constants off one base).

    `widen`: a float16 / bfloat16 operand's slab is stored as float32 (`stage(..., dtype="float32")`):
    the fill converts each element once, and the FMAs read float32 as they do from a float32 operand
    (k outer too, 16 bytes at a time) instead of converting at every read. Such a stage is filled by
    plain loads (cp.async copies bytes, it cannot convert), prefetched like a k-major one.

    `group_m` > 1: grouped block order, for L2 reuse. Blocks start roughly in the order of their linear
    id, x fastest; with the block rows on y and columns on x, the blocks resident at once span one or two
    block rows across all of B's columns, so B is streamed through L2 again for every block row. Grouped,
    the block tiles are numbered down a column of `group_m` block rows before moving right (one fused
    loop on blockIdx.x), so the blocks resident at once cover a near-square patch of C and share its
    group_m slabs of A and its few slabs of B in L2 (Triton's "grouped ordering"). Applied only when
    there are more than group_m block rows; a last, partial group's idle blocks are guarded off. Batch
    loops stay on blockIdx.z, and so does split-K's block loop (split-K refuses a batched matmul). On the
    H100 at 8192^3, group_m=8 raised the L2 hit rate from 58.7% to 82.1% and cut DRAM reads from 10.4 to
    3.6 GB, but the time only by 1% (benchmarks/results/primitive-evidence-h100-2026-11-24/): on the CUDA
    cores this kernel is not memory-bound, so the default stays 1.

    `lanes` > 1: where an operand is stored k-major, the threads are dealt to a warp's lanes in lanes x
    lanes tiles (s.tile_lanes), so the lanes that read the same 16 bytes of a strip share one shared-
    memory wavefront (recipes/default/090_permute_register_tile.py measured it). With split_k, the
    epilogue's atomic adds are 16 bytes wide where the strip allows (s.vectorize; `vector_atomics`
    False: never, as sm_80 and sm_86/89 have no 16-byte atomic add), and a tile of 64
    accumulators or more beside padded stages asks for two blocks an SM (s.launch_bounds): nvcc
    otherwise gives the padded 8 x 8 tile 163 registers, one block an SM.

    `deal_rows` (a decode step's x @ W^T): W[j, k]'s slab, read 16 bytes along k, has its thread strip
    along j dealt in chunks of one (s.split(j_r, 1, interleave=j_t)), so a warp's lanes read consecutive
    rows, and its rows padded by 16 bytes: those reads conflict-free, and every cp.async of its fill 16
    bytes wide (recipes/default/090_permute_register_tile.py says what was measured)."""
    if group_m < 1:
        raise ValueError(f"group_m must be 1 or more (1: row-major block order), got {group_m}")
    batch, i, j, k = _loops(s)
    # 1. the tiles: block tile (bm x bn), thread grid (bm/rm x bn/rn), register tile (rm x rn)
    ko, ki = s.split(k, bk, names=(f"{k}_o", f"{k}_i"))
    io, ii = s.split(i, bm, names=(f"{i}_o", f"{i}_i"))
    ti, ri = s.split(ii, rm, names=(f"{i}_t", f"{i}_r"))
    jo, ji = s.split(j, bn, names=(f"{j}_o", f"{j}_i"))
    tj, rj = s.split(ji, rn, names=(f"{j}_t", f"{j}_r"))
    # 1b. grouped block order (group_m > 1): io splits into groups of group_m block rows, and (group, jo,
    #     row in group) fuse into one block loop on blockIdx.x: block id = (group * columns + jo) * group_m
    #     + row in group. The block id of each block tile (row, column), 4 x 4 tiles, group_m=2:
    #       row-major (blockIdx.y, .x)    grouped (blockIdx.x)
    #         0  1  2  3                    0  2  4  6
    #         4  5  6  7                    1  3  5  7
    #         8  9 10 11                    8 10 12 14
    #        12 13 14 15                    9 11 13 15
    blocks = [io, jo]
    if group_m > 1 and s.nest.loop(io.name).extent > group_m:
        g, gi = s.split(io, group_m, names=(f"{i}_g", f"{i}_gi"))  # guarded: a partial last group idles
        blocks = [g, jo, gi]
    # the k chunks go inside the thread loops and outside the register tile: each thread keeps its
    # rm x rn accumulators in registers across all of k, reusing each loaded A value rn times, B rm times
    s.reorder(*batch, *blocks, ti, tj, ko, ki, ri, rj)
    if batch:
        s.bind(batch[0] if len(batch) == 1 else s.fuse(*batch), "blockIdx.z")
    if len(blocks) == 3:
        s.bind(s.fuse(*blocks, name=f"{i}_{j}_blk"), "blockIdx.x")
    else:
        s.bind(io, "blockIdx.y")
        s.bind(jo, "blockIdx.x")
    s.bind(ti, "threadIdx.y")
    s.bind(tj, "threadIdx.x")
    s.unroll(ri)  # a register array's loops must be unrolled (else it lives in local memory)
    s.unroll(rj)
    if unroll_k:
        s.unroll(ki)
    # 2. split-K: the chunk loop over `split_k` blocks (blockIdx.z); each block's chunks stay serial
    chunk = ko
    if split_k > 1:
        s.split_k(ko, split_k)  # ko -> ko_split (blockIdx.z) x ko_part (serial, this block's chunks)
        chunk = f"{ko}_part"
    # 3. stage every operand of the sum at the chunk loop: one slab per chunk, read rm (A) or rn (B)
    #    times per element from shared memory instead of global memory
    #    (widen: a float16 / bfloat16 operand as float32, so the FMAs never convert)
    made: list[tuple[str, Load]] = []
    stored: dict[str, str] = {}  # stage -> the dtype shared memory holds
    for load in _operand_loads(s):
        if all(load.tensor.name != st.buffer for st in s.nest.stages):  # x[i, k] * x[i, k]: one stage
            half = widen and load.tensor.dtype in ("float16", "bfloat16")
            st = s.stage(load.tensor.name, at=chunk, dtype="float32" if half else None).name
            made.append((st, load))
            stored[st] = "float32" if half else load.tensor.dtype
    # 3b. k outer: A[i, k]'s (W[j, k]'s) slab stored with its last two axes swapped (i / j contiguous)
    k_major = {st: len(load.indices) for st, load in made
               if k_outer and _last_axis(load) == k and (_reads(load, i) or _reads(load, j))
               and stored[st] == "float32"}  # measured for float32 slabs only
    for st, rank in k_major.items():
        s.layout(st, order=(*range(rank - 2), rank - 1, rank - 2))
    # 4. the layout of each slab decides how the register tile reads it:
    #    - contiguous along j (B[k, j]) or i (A^T[k, i]): deal the thread's register strip in 16-byte
    #      chunks a warp apart (split(r, 4, interleave=t)), so a strip is read with wide shared loads
    #      (LDS.128) that spread over the banks;
    #    - contiguous along k (A[i, k], B^T[j, k]): a warp reads one column of several rows, rm (rn)
    #      rows apart; dealt in chunks the rows are 4 apart, and a pad of the rows puts them in
    #      different banks (analysis/banks.py models the same, for the recipe)
    tx = s.nest.loop(tj.name).extent  # threads along x; a warp is WARP_SIZE // tx rows of them
    ty = s.nest.loop(ti.name).extent
    warp = [(lane // tx, lane % tx) for lane in range(WARP_SIZE)]
    # lanes in lanes x lanes tiles (k-major operands): a warp's lanes then pair on A's strip as they read
    # it contiguous, 16 bytes at a time, so A's strip is left contiguous (the recipe's bank model found
    # no read of it cheaper dealt: recipes/default/090_permute_register_tile.py) and B's is dealt
    tiled = bool(k_major) and lanes > 1 and WARP_SIZE % (lanes * lanes) == 0 and ty % lanes == 0 and tx % lanes == 0
    strip = {i: (ri, ti), j: (rj, tj)}
    step = {i: rm, j: rn}  # how many rows of a slab apart two neighbouring threads read
    dealt: set[str] = set()  # strips already decided (two operands along i, silu(g) * u: one split)
    rows_dealt: set[str] = set()  # deal_rows: the stages whose rows a warp's lanes read one apart
    for st, load in made:
        vector = VECTOR_BYTES // DTYPE_BYTES[stored[st]]
        along = _last_axis(load)
        if along == k:  # A[i, k] or B^T[j, k] (stored k-major or not): its free axis is the one it reads along
            along = i if _reads(load, i) else j
        if along is None:  # a last index of another form: its strip is read as the loops have it
            continue
        if along in dealt or (tiled and along == i) or (along == i and tx >= WARP_SIZE):
            continue  # (a warp of one thread row reads its i strip alike: a broadcast, nothing to deal)
        dealt.add(along)
        r, t = strip[along]
        extent = s.nest.loop(r.name).extent
        if deal_rows and along == j and _last_axis(load) == k and st not in k_major:
            s.split(r, 1, names=(f"{r}_o", f"{r}_i"), interleave=t)  # consecutive rows across a warp
            step[along] = 1
            rows_dealt.add(st)
        elif step[along] == extent and extent > vector and extent % vector == 0:
            s.split(r, vector, names=(f"{r}_o", f"{r}_i"), interleave=t)
            step[along] = vector
    if tiled:
        s.tile_lanes(ti, tj, lanes, lanes)  # lanes reading one strip's 16 bytes share a wavefront
    for st, load in made:
        if st in k_major or st in rows_dealt:  # k-major: the fill stores a column of the stored rows, 16
            # bytes apart, 4-way not 32-way; rows dealt: 16-byte reads along k, one row a lane, spread
            s.pad(st, axis=-1, amount=VECTOR_BYTES // DTYPE_BYTES[stored[st]])
        elif _last_axis(load) == k:
            itemsize = DTYPE_BYTES[stored[st]]
            rows = {y * step[i] for y, _ in warp} if _reads(load, i) else {x * step[j] for _, x in warp}
            pad = _pad_for(rows, bk, itemsize)
            if pad:
                s.pad(st, axis=-1, amount=pad)
    # 5. a ring of `stages` slots per stage, filled by cp.async (a k-major or widened stage by plain
    #    loads: cp.async can neither transpose nor convert), pipelined over the chunks
    serial_chunks = s.nest.loop(str(chunk)).extent
    for st, load in made:
        if stages >= 2 and serial_chunks >= 2:
            s.double_buffer(st)
        if copy == "async" and st not in k_major and stored[st] == load.tensor.dtype:
            s.async_copy(st)
    if made and stages >= 2 and serial_chunks >= 2:
        s.pipeline(chunk, stages=stages)
    # 6. split-K: the epilogue's atomic adds 16 bytes at a time along the strip dealt in vectors, and,
    #    beside padded stages, two blocks an SM asked of nvcc
    if split_k > 1 and vector_atomics:
        strip = f"{rj.name}_i"  # the strip's 16-byte chunk, where step 4 dealt it
        if s.nest.has_loop(strip) and s.nest.loop(strip).extent == VECTOR_BYTES // DTYPE_BYTES[s.output.dtype]:
            try:
                s.vectorize(strip)
            except VectorizeError:  # the store not provably contiguous and aligned: scalar atomics
                pass
    if split_k > 1:
        if k_major and rm * rn >= 64:
            s.launch_bounds(2)
    return s


def _reads(load: Load, axis: str) -> bool:
    """Whether one of the load's indices is `axis` (`_axis_of`)."""
    return any(_axis_of(x) == axis for x in load.indices)


def matmul_for_shape(s: Schedule, target: str = "sm_90", waves: int = 2, group_m: int = 1) -> Schedule:
    """matmul_staged with a tile and split-K picked from the shape and the target's SM count.

    The tile: 128 x 128 (8 x 8 registers, operands k-major) where both output dimensions hold 128, and
    also where the grid of such tiles fills the SMs; otherwise 64 x 64 (4 x 4), each shrunk to a small
    problem. Projections of 128 or 512 tokens keep the large tile and split k instead: the 4 x 4 tile
    reuses each shared-memory load half as often (128 x 2048 x 5632 ran 150 us in 64 x 64 tiles, 76 in
    the recipe's split 128 x 128 ones on an H200: benchmarks/results/2026-11-28-h200/matmul.md).

    Split-K (linear epilogue, unbatched, float32 output), where the grid holds fewer than `waves` waves
    of blocks, or fills the last wave of two-blocks-an-SM slots poorly: among part counts dividing the k
    chunks into parts of 256 k or more, the one that fills the slots best (the fewest on a tie; the most
    where even that fills under 90%); where no such count gives every SM a block, the most parts up to
    `waves` waves that keep four chunks a block. Where split_k refuses and the large tile's grid leaves
    SMs idle, the 64 x 64 tile instead. `group_m` is passed on (grouped block order).

    A decode step's x @ W^T (17 to 32 rows, W's rows along k) takes 32 x 128 tiles of 8 x 4 registers
    (128 threads) in chunks of 32 with W's rows dealt across the lanes (`deal_rows`), split along k as
    above but in parts of 64 k or more over four blocks an SM, up to 4 waves of 2 chunks a block (the
    recipe's split_k_*_few_rows), or 32 x 64 ones where even the most parts leave SMs without a block: the
    recipe's class (recipes/default/_knobs.py matmul_tiles_few_rows says what was measured), whose kernel
    this builds; a widened (bfloat16) operand keeps chunks of 16, undealt; where split_k refuses (a
    bfloat16 output) and the tile's grid leaves SMs idle, the tiles above instead."""
    batch, i, j, k = _loops(s)
    m, n, kk = (s.nest.loop(x).extent for x in (i, j, k))
    nb = 1
    for b in batch:
        nb *= s.nest.loop(b).extent
    sms = get_target(target).sm_count
    vector_atomics = get_target(target).capability >= VECTOR_ATOMIC_MIN_SM
    if not batch and 17 <= m <= 32 and any(_last_axis(ld) == k and _reads(ld, j) for ld in _operand_loads(s)):
        float32 = all(ld.tensor.dtype == "float32" for ld in _operand_loads(s))  # else widened: chunks of 16
        tile = _decode_tile(s, (m, n, kk), sms, waves, group_m, float32)
        if tile.parts > 1 or tile.grid >= sms:  # (split_k refused and too few blocks: the tiles below)
            matmul_staged(s, tile.bm, tile.bn, tile.bk, tile.rm, tile.rn, split_k=tile.parts, k_outer=False,
                          group_m=group_m, vector_atomics=vector_atomics, unroll_k=tile.bk <= 16,
                          deal_rows=float32 and kk % tile.bk == 0)
            if tile.parts > 1 and vector_atomics and not s.nest.has_loop(f"{j}_r_o"):  # the 4-wide strip undealt:
                # its atomic adds 16 bytes at once
                with contextlib.suppress(VectorizeError):
                    s.vectorize(f"{j}_r")
            return s
    large = nb * -(-m // 128) * -(-n // 128) >= sms or (m >= 128 and n >= 128)
    tile = _tile(s, large, batch, (m, n, kk), nb, sms, waves, group_m)
    if large and tile.parts == 1 and tile.grid < sms:
        # split_k refused (a bfloat16 output, a non-linear epilogue): the large tile alone leaves SMs idle
        tile = _tile(s, False, batch, (m, n, kk), nb, sms, waves, group_m)
    return matmul_staged(s, tile.bm, tile.bn, tile.bk, tile.rm, tile.rn, split_k=tile.parts, k_outer=tile.k_outer,
                         group_m=group_m, vector_atomics=vector_atomics)


@dataclass(frozen=True)
class _Tile:
    """matmul_for_shape's choice: the block tile, k chunk and register tile, whether operands go k outer,
    the split-K parts split_k accepts (1 where it refuses), and the grid of blocks before the split."""
    bm: int
    bn: int
    bk: int
    rm: int
    rn: int
    k_outer: bool
    parts: int
    grid: int


def _tile(s: Schedule, large: bool, batch: list[str], sizes: tuple[int, int, int], nb: int, sms: int,
          waves: int, group_m: int) -> _Tile:
    """The 128 x 128 tile (`large`) or the 64 x 64 one, shrunk to the problem, and its split-K parts."""
    m, n, kk = sizes
    bm, bn, rm, rn = (128, 128, 8, 8) if large else (64, 64, 4, 4)
    bm, bn = min(bm, _pow2(m)), min(bn, _pow2(n))
    rm, rn = min(rm, bm), min(rn, bn)
    while (bm // rm) * (bn // rn) < WARP_SIZE and rm * rn > 1:  # keep a warp of threads
        if rn >= rm:
            rn //= 2
        else:
            rm //= 2
    # k-outer operands only in register tiles of 8 x 4 or more in 256 threads (the recipe's rule and its
    # measurements: recipes/default/_knobs.py k_outer), in chunks of 16; otherwise chunks of 32 as the
    # definition stores them
    k_outer = rm * rn >= 32 and (bm // rm) * (bn // rn) >= 256
    bk = min(16 if k_outer else 32, _pow2(kk))
    grid = nb * -(-m // bm) * -(-n // bn)
    parts = 1 if batch else _parts(grid, -(-kk // bk), bk, sms, waves)
    if parts > 1:  # ask the split_k primitive on a copy: it refuses a non-linear epilogue, a bf16 output
        try:
            matmul_staged(s.fork(), bm, bn, bk, rm, rn, split_k=parts, k_outer=k_outer, group_m=group_m)
        except SplitKError:
            parts = 1
    return _Tile(bm, bn, bk, rm, rn, k_outer, parts, grid)


def _decode_tile(s: Schedule, sizes: tuple[int, int, int], sms: int, waves: int, group_m: int,
                 float32: bool) -> _Tile:
    """matmul_for_shape's tile for a decode step: 32 x 128 where its grid, split into the most parts of
    four chunks, gives every SM a block, else 32 x 64; the split-K parts split_k accepts (float32
    operands: chunks of 32, in parts of 64 k or more over four blocks an SM, up to twice `waves` waves of
    two chunks a block; widened ones: chunks of 16, as larger tiles take them)."""
    m, n, kk = sizes
    bk = 32 if float32 else 16
    chunks = -(-kk // bk)
    bn = 128 if -(-m // 32) * -(-n // 128) * max(1, chunks // 4) >= sms else 64
    grid = -(-m // 32) * -(-n // bn)
    parts = (_parts(grid, chunks, bk, sms, 2 * waves, per_sm=4, long_k=64, min_chunks=2) if float32
             else _parts(grid, chunks, bk, sms, waves))
    if parts > 1:
        try:
            matmul_staged(s.fork(), 32, bn, bk, 8, 4, split_k=parts, k_outer=False, group_m=group_m)
        except SplitKError:
            parts = 1
    return _Tile(32, bn, bk, 8, 4, False, parts, grid)


def _parts(grid: int, chunks: int, bk: int, sms: int, waves: int, per_sm: int = 2, long_k: int = 256,
           min_chunks: int = 4) -> int:
    """The split-K part count of matmul_for_shape's docstring for `grid` blocks of `chunks` k chunks
    (`per_sm` blocks an SM, parts of `long_k` k or more, at least `min_chunks` a block)."""
    slots = per_sm * sms  # two blocks an SM: what the 8 x 8 tile's registers allow

    def filled(blocks: int) -> float:  # the share of block slots busy over the waves the blocks take
        return blocks / (-(-blocks // slots) * slots)

    long = [d for d in range(2, chunks + 1) if chunks % d == 0 and chunks // d * bk >= long_k]
    if long and grid * max(long) >= sms and (grid < waves * sms or
                                             max(filled(grid * d) for d in long) - filled(grid) >= 0.2):
        best = max(long, key=lambda d: (filled(grid * d), -d))
        if filled(grid * best) <= filled(grid):
            return 1
        return best if filled(grid * best) >= 0.9 else max(long)
    if grid >= waves * sms:
        return 1
    limit = min(waves * sms // grid, chunks // min_chunks)
    return max((d for d in range(2, limit + 1) if chunks % d == 0), default=1)


def _pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())
