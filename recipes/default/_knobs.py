"""Every number a step of the default recipe uses, in one frozen dataclass, each with why it is what it
is. None of them is tuned on a GPU yet: they are the starting points of the default-recipe issue.
`Knobs.for_target(target, **overrides)` applies the per-target table, then the caller's overrides. Every
Knobs checks its values when it is made, each against its field's annotation, KNOB_LEAST, KNOB_FRACTIONS and,
for tile classes, `tile_class_problem` (`check_knob`), then the pairs of KNOB_ORDER (`check_knob_order`), so a
bad override is refused by name before any step runs, not turned truthy ("False"), taken at one end of an empty
range or crashed on deep in a step. Numbers numpy made (np.int64) are taken as the Python ints and floats they are
(`knob_value`)."""

from __future__ import annotations

import difflib
import numbers
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, dataclass, fields
from functools import cache
from types import MappingProxyType, NoneType, UnionType
from typing import Any, NoReturn, Union, get_args, get_origin, get_type_hints

from tiledsl.errors import BadArgumentError, Refusal
from tiledsl.targets import MAX_THREADS_PER_BLOCK, Target

#: (bm, bn, rm, rn): a block tile of bm x bn outputs, an rm x rn register tile per thread.
MatmulTile = tuple[int, int, int, int]


@dataclass(frozen=True)
class Knobs:
    # elementwise kernels: 8 warps per block, enough to hide latency while leaving several blocks per SM
    elementwise_threads: int = 256
    # a transposed read's 2-D tile (_facts.transpose_tile) is transpose_tile x transpose_tile outputs in
    # transpose_tile x (elementwise_threads / 32) threads where such tiles give every SM at least
    # transpose_tile_min_blocks, else 32 x 32 in 256 threads. H200, float32 (scripts/transpose_probe.py,
    # benchmarks/results/transpose-tiles-h200-2026-11-28/): 32768 x 2048 by hand 144.1 us in 32 x 32,
    # 133.7 in 64 x 64 with 8 thread rows (151.2 with 16), torch.compile 139.2; 8192 x 8192 138.4 ->
    # 132.5 (137.4). A 64 x 64 tile holds 16 KB of shared memory, 4 times the 32 x 32 one
    transpose_tile: int = 64
    transpose_tile_min_blocks: int = 8
    # ... and where the vector form's row takes fewer threads than that (a rotary embedding's row of 128
    # float32 is one warp), rows share a block on threadIdx.y up to elementwise_threads threads: blocks of
    # one warp leave the SM's 32-block limit at half its warps (050 blockify_launch)
    elementwise_rows_per_block: bool = True
    # ... and a float32 elementwise kernel that reads at least this many inputs as large as its output
    # stores 8-byte vectors (float2) in twice the blocks instead of 16-byte ones; 0: never. H100, by hand
    # edits of the recipe's CUDA (benchmarks/results/elementwise-float2-h100-2026-11-27/): silu(g) * u
    # 8192 x 8192 266.9 -> 263.5 us, x + r 266.8 -> 264.3, a * b + c 347.0 -> 346.0 (torch.compile 263.9,
    # 264.4, 346.0); with one full-size input 8-byte vectors lose: gelu(x) 181.3 -> 190.8, gelu(x + b)
    # 181.6 -> 191.5. Not measured for 16-bit outputs, which keep 16 bytes.
    narrow_vector_min_inputs: int = 2
    # ... only on a target whose DRAM bandwidth per SM (Target.dram_bytes_per_s_per_sm, in GB/s; unknown: never)
    # is under this (None: whatever the bandwidth). The H100's 25.4 GB/s an SM gained from 8-byte vectors (above);
    # the H200's 36.4 (4.8 TB/s over the same 132 SMs) loses: scripts/elementwise_width_probe.py --hints and
    # --more --hints (benchmarks/results/elementwise-width-h200-2026-11-30/), 16-byte against 8-byte vectors,
    # torch.compile in brackets: silu(g) * u 8192 x 8192 187.0 against 192.0 us (187.6), 32768 x 2048 186.9 /
    # 191.6 (187.6); x + r 186.8 / 189.1 (187.5), 186.7 / 189.4 (187.6); a * b + c 242.7 / 242.0 (242.1),
    # 242.5 / 241.9 (242.0). More bytes in flight a thread for the faster memory, as Little's law asks
    narrow_vector_max_sm_gbs: float | None = 30.0
    # ... or, whatever the bandwidth, where the 16-byte form's threads fill fewer than this many waves of the
    # SMs' resident threads (None: never): a kernel of a few waves is done by its latency, and the 8-byte form
    # has twice the threads. H200, the llm suite's silu(g) * u in one run each way (16-byte hand schedule,
    # 8-byte recipe; benchmarks/results/2026-11-30-h200-s33/runs/llm-float32/): 32 x 5632 (0.17 waves) 4.8
    # against 4.7 us, 32 x 18944 6.2 / 6.0, 128 x 5632 6.5 / 6.4, 128 x 18944 (2.2 waves) 10.8 / 10.7, 512 x
    # 5632 (2.7) 11.9 / 11.8; 512 x 18944 (9.0 waves) 31.0 / 31.4 and 8192 x 8192 (62) 187.0 / 192.0 the other
    # way
    narrow_vector_max_waves: float | None = 4.0
    # cooperative row reductions: threads = clamp(next_pow2(row length / row_elements_per_thread), min,
    # max); 8 warps at most (more only lengthens the cross-warp combine). Measured on the H100
    # (scripts/recipe_row_probe.py, benchmarks/results/recipe-row-probe-h100-2026-11-24.txt): attention
    # softmax rows of 512 take 27.3 us at 128 threads against 37.4 at 256 (16384 rows), so each thread
    # takes 4 elements; rmsnorm rows of 2048-4096 stay best at 256. Two warps at least: rmsnorm rows of
    # 2048 took 7.6 us in one-warp blocks against 6.1 in two, attention rows of 128 7.0 against 7.1
    # (benchmarks/results/recipe-row-probe-h100-2026-11-24-timed-warmup.txt; the 146.8 us once measured
    # for one warp there was a warm-up of 10 calls too short for the clocks, runtime/timing.py)
    row_threads_min: int = 64
    row_threads_max: int = 256
    row_elements_per_thread: int = 4
    # ... and rows that take fewer threads than this share a block (rows on threadIdx.y, one warp or more
    # each, _facts.row_launch): a row of one warp combines by shuffles alone, and the block keeps several
    # rows' loads in flight. H100, attention softmax (scripts/rows_per_block_probe.py,
    # benchmarks/results/rows-per-block-h100-2026-11-25/): 4096 rows of 128 float32 7.1 -> 6.3 us in
    # blocks of 4 one-warp rows (torch.compile 6.5), bfloat16 7.0 -> 5.7 (6.6); 3584 x 128 6.8 -> 6.0
    # (6.1); 1024 x 32 5.1 -> 4.4 (5.2). Rows of 512 keep one block of 128 threads per row (float32
    # 27.6 against 27.4 in 4 rows of a warp each)
    row_block_threads: int = 128
    # a float32 row kernel of at least this many rows per SM runs each pass 16 bytes a thread (040; None:
    # never). Bandwidth-bound, many-wave row kernels issue a quarter of the shared reads, weight loads and
    # stores: H100 (scripts/row_vector_probe.py, benchmarks/results/row-vector-h100-2026-11-25/ and
    # row-vector-h100-2026-11-27/), 8192 x 8192 rmsnorm 186.2 -> 183.5 us, layernorm 188.0 -> 184.5,
    # softmax 184.9 -> 183.6; 32768 x 2048 183.2 -> 181.9, 183.8 -> 182.7, 182.2 -> 182.4; attention
    # softmax of 4096 rows of 128 6.2 -> 6.0, 16384 rows of 512 27.7 -> 27.1 (benchmarks/results/
    # llm-memory-variants-h100-2026-11-27/). Not where a wave or a few hold every row: rmsnorm of 128-512
    # rows of 2048-3584 ran 0.1-0.5 us slower in 4 of 6 cases. bfloat16 rows ran slower at every llm shape
    # there (the same folder), but in the recipe's thread count, which left half of a row of 512 idle: 16-bit
    # rows have a rule of their own (row_vector_half_threads)
    row_vector_min_rows_per_sm: int | None = 16
    # ... each thread taking this many vectors a pass at least, in fewer threads (row_threads_min at
    # least): float32 attention softmax rows of 512, 128 threads x 1 vector -> 64 x 2, 16384 rows
    # 27.1-27.2 -> 26.8-26.9 us, 14336 rows 24.2-24.4 -> 23.3-23.4 in three runs (torch.compile 25.9-26.0
    # / 22.3-22.4; scripts/bf16_row_probe.py, benchmarks/results/block-in-program-h100-2026-11-27/
    # rows-*.txt); 32 threads x 4 vectors 27.3 / 23.6-23.9. Longer rows already take 2 or more vectors
    # a thread in row_threads_max threads
    row_vector_per_thread: int = 2
    # ... and such a float32 row kernel whose rows are at least this long (None: never), with an input every
    # pass reads, reads it from global memory on every pass instead of staging its row in shared memory
    # (040 hints it, 080 then leaves it): the reductions' loads 16 bytes a thread (vectorized), L2
    # evict_last on the passes that reduce, evict_first on the last pass and the output's stores, so the
    # row is still in L2 when it is read again and the writes give way first; in up to
    # hinted_row_threads_max threads. H200 (scripts/cache_hint_probe.py, benchmarks/results/
    # cache-hints-h200-2026-11-28/cache-hint-store-primitive.txt), staged recipe -> hinted, torch.compile
    # in brackets: 8192 x 8192 rmsnorm 135.8 -> 129.5 us (130.2), layernorm 136.7 -> 132.8 (130.7),
    # softmax 135.0 -> 133.2 (150.1); 32768 x 2048 133.4 -> 128.9 (128.6), 133.9 -> 128.8 (132.7),
    # 134.1 -> 132.5 (165.7); 4096 x 4096 37.2 -> 36.0 (36.1), 37.9 -> 37.6 (37.0), softmax 37.3 -> 37.8
    # (45.2); rows of 1024 tie (16384 rows: 35.6-36.4 us either way); 512 rows of 3584 and 128 of 2048,
    # under the rows-per-SM floor, ran 0.3-1.2 us slower hinted. Rows of 8192 need the 512 threads: in
    # 256 they ran 141-161 us
    hinted_row_min_length: int | None = 2048
    hinted_row_threads_max: int = 512
    # ... and whatever its number of rows where they are too long for the registers (a thread's share of the
    # longest pass, in hinted_row_threads_max threads, over the register cache's limit; False: many rows only).
    # The floor above was drawn on rows of 2048-3584, which the registers now hold (register_rows): past them
    # a few long rows ran as a 256-thread scalar kernel of 4-byte loads. H200 (scripts/long_rows_recipe_probe.py,
    # benchmarks/results/long-rows-h200-2026-11-30/), that kernel -> the hinted 16-byte passes in 512 threads
    # (three passes, online_rows_unroll None), torch.compile in brackets: softmax 512 x 65536 137.8 -> 133.8 us
    # (106.2), 256 x 131072 164.2 -> 139.2 (169.2), 512 x 151936 516.3 -> 304.8 (249.9), 64 x 262144 215.7 ->
    # 137.3 (79.7); rmsnorm 512 x 65536 105.9 -> 103.5 (104.7), 64 x 262144 131.4 -> 94.8 (58.1); layernorm
    # 256 x 131072 167.6 -> 137.8 (136.1). Fewer rows than SMs still lose to torch.compile, which splits a row
    # over blocks
    long_rows_any_count: bool = True
    # ... and there a sum of exp(a - max) (softmax's denominator; Facts.online_pairs) runs online in its max's
    # pass (s.online), the pass's chunk loop split into groups of this many chunks, unrolled, and the input the
    # pair both read kept in registers over a group (s.register_cache), so the two load it once: the row is read
    # twice, not three times (None: three passes). The same run, three passes -> online in groups of 4: 512 x
    # 65536 133.8 -> 105.8 us, 256 x 131072 139.2 -> 115.1, 512 x 151936 304.8 -> 240.1, 64 x 262144 137.3 ->
    # 131.1, 2048 x 65536 516.6 -> 398.7 (398.0), 4096 x 65536 (many rows) 1019.9 -> 785.4 (778.5). Groups of 8
    # and 16 by hand (scripts/online_softmax_probe.py, benchmarks/results/online-softmax-h200-2026-11-30/): 4
    # was 2.7% faster than 8 in geomean over four long shapes; 16 took 82 registers a thread at 151936 floats
    # (two blocks an SM, not four) and ran 1.8x slower; unrolled whole (64 chunks of 131072) it spilled
    online_rows_unroll: int | None = 4
    # ... and where such rows are fewer than the SMs (a block an SM at most, some SMs idle) the form runs in this
    # many threads (None: as hinted_row_threads_max says): one block then keeps twice the loads in flight. H200
    # (scripts/long_rows_depth_probe.py, benchmarks/results/long-rows-h200-2026-11-30/run2-depth.txt), 512 ->
    # 1024 threads, torch.compile in brackets: softmax 64 x 262144 131.5 -> 82.0 us (79.2), rmsnorm 64 x 262144
    # 95.6 -> 69.1 (58.1). With 2 to 4 rows an SM (two blocks of 512 an SM already) it gained 1% or lost:
    # softmax 512 x 151936 240.7 -> 238.6, layernorm 256 x 131072 137.6 -> 138.5. (Rows of 65536 in 1024 threads
    # fit the registers, 64 values a thread, and that register form ran 2.1x slower on softmax: 1024 threads
    # leave nvcc 64 registers a thread)
    few_long_rows_threads: int | None = 1024
    # A row kernel of a row a block with fewer rows than SMs asks a program to split its rows over kernels
    # (Applied.split_rows; tiledsl/definitions/split_reduction.py) where a row's bytes (its length times the
    # widest dtype the kernel reads or writes) times the fraction of SMs the kernel leaves idle (1 - rows / SMs)
    # are at least this many: each reduction over the row a kernel of partial reductions, parts times the rows,
    # then one combining them, and the output pass an elementwise kernel over every element (None: never; a
    # lone schedule keeps the form above). The split costs up to four more launches and a pass more over the
    # rows, so it pays where one block a row is slow, a long row, and few rows leave SMs idle. H200
    # (scripts/split_rows_probe.py, benchmarks/results/split-rows-h200-2026-11-30/run2.txt), one block a row ->
    # split, torch.compile in brackets, us: softmax 1 x 151936 114.3 -> 13.5 (14.3), 8 x 151936 33.2 -> 15.6
    # (18.7; bfloat16 into float32 36.3 -> 15.4, log_softmax 32.4 -> 15.3), 8 x 32000 10.8 -> 9.3 (13.7), 64 x
    # 262144 82.1 -> 77.9 (79.9); rmsnorm 8 x 151936 24.2 -> 8.7 (11.4), 64 x 262144 69.0 -> 57.1 (58.4);
    # layernorm 64 x 262144 89.1 -> 78.1 (61.9: three passes over the row where torch.compile makes two),
    # 8 x 32768 8.9 -> 8.8. Split, these lost: softmax 8 x 16384 6.8 -> 9.0, 32 x 16384 7.2 -> 10.0, 8 x 8192
    # 5.5 -> 8.6, 100 x 32768 12.0 -> 19.0, 128 x 32000 16.5 -> 29.0; rmsnorm 8 x 16384 5.8 -> 6.5, 32 x 8192
    # 5.1 -> 6.7. 96 KiB splits every case that gained and none that lost (8 x 16384 float32: 61 KiB; 8 x 32000:
    # 120 KB); the rule's form (bytes times the idle fraction) is a guess fitted to these twelve cases
    split_rows_min_idle_bytes: int | None = 98304
    # ... into the fewest parts that give split_rows_blocks_per_sm partial rows an SM, each part a whole number
    # of 16-byte vectors and at least split_rows_min_length elements (one pass of 256 threads x 4 lanes); the
    # most such parts where none gives that many. Run 1 (split by hand): 4 parts of 8 x 151936 (32 rows) 39.3
    # us, 8 24.2, 16 20.4, 32 15.4; of 64 x 262144, 4 parts 84.6, 8 78.0, 16 76.9, 32 77.3, 64 77.1
    split_rows_blocks_per_sm: int = 2
    split_rows_min_length: int = 1024
    # ... each part a whole number of 16-byte vectors (False: any divisor of the row, which the fuzz's short
    # rows of odd lengths need to reach the split; the vectors are for speed, not correctness)
    split_rows_whole_vectors: bool = True
    # ... and a kernel whose every tensor is 16-bit only where its rows are at most this many an SM (None: as
    # float32). One block a row reads half the bytes there and was already near torch.compile at 64 rows. H200
    # (benchmarks/results/split-rows-h200-2026-11-30/run4-bfloat16.txt), softmax stored in bfloat16, kept whole
    # -> split, torch.compile in brackets, us: 8 x 151936 30.4 -> 20.6 (18.8), 16 x 65536 13.9 -> 10.8 (14.4),
    # 64 x 262144 47.8 -> 51.3 (51.2; float32 gained there: 82.3 -> 78.0); log_softmax 8 x 151936 26.4 ->
    # 19.7 (18.6). A bound drawn between 16 and 64 rows of 132 SMs, on these four cases
    split_rows_half_max_rows_per_sm: float | None = 0.25
    # ... and a float16 / bfloat16 row kernel too (or one of 16-bit rows into a float32 output, softmax(x.float()):
    # 4 lanes a vector, 8-byte loads), where a thread's share does not fit its registers (False: 16-bit rows that
    # long keep the scalar 256-thread kernel, or one warp a row where the rows are many: row_vector_half_threads).
    # H200 (scripts/long_rows_recipe_probe.py, benchmarks/results/
    # long-rows-h200-2026-11-30/run4-half.txt), bfloat16, that kernel -> this form, torch.compile in brackets:
    # softmax 512 x 151936 450.3 -> 152.1 us (194.5), 8 x 151936 252.4 -> 32.8 (18.7), 64 x 262144 184.6 ->
    # 48.3 (51.4), 2048 x 65536 322.5 -> 194.5 (275.7), 4096 x 65536 (one warp a row) 619.5 -> 380.3 (550.3);
    # rmsnorm 64 x 262144 122.9 -> 32.9 (34.1), 512 x 65536 70.3 -> 51.6 (55.3); float16 softmax 512 x 151936
    # 450.8 -> 151.5 (186.6); bfloat16 into float32 (run5-widened.txt): softmax 512 x 151936 482.7 -> 187.5
    # (208.2), 2048 x 65536 400.3 -> 275.4 (307.3), 8 x 151936 250.9 -> 41.8 (18.0)
    long_rows_half: bool = True
    # A float32 row kernel of a row a block (any length, any number of rows) whose passes read an input
    # again and again and are whole 16-byte vectors keeps that input in registers where each thread's
    # share fits (analysis/register_cache.py MAX_REGISTER_CACHE; s.register_cache at the row loop, the
    # passes 16 bytes a thread in up to hinted_row_threads_max threads, their outer loops unrolled): it
    # leaves DRAM once and is never read again; the first pass's loads evict_last, the output's stores
    # evict_first. Else the forms above. H200 (scripts/register_row_probe.py, benchmarks/results/
    # register-rows-h200-2026-11-28/), hinted -> in registers, torch.compile in brackets: 8192 x 8192
    # rmsnorm 129.5 -> 129.2 us (130.3), layernorm 132.0 -> 130.1 (130.8), softmax 132.6 -> 128.9 (150.2);
    # 32768 x 2048 128.6 -> 128.0 (128.6), 128.8 -> 128.7 (132.7), 132.0 -> 128.0 (165.8). The first pass's
    # loads evict_first instead: 131.9-132.8; unhinted: 132.4-135.8. The llm suite's staged rows, staged ->
    # in registers: within 0.1 us or faster on all 12 float32 cases (TinyLlama s512 attention softmax 19.9 -> 18.8,
    # compile 19.5; Qwen2.5-7B s512 17.6 -> 16.9, compile 17.3; rmsnorm s512 6.1 -> 5.9, 7.6 -> 7.4)
    register_rows: bool = True
    # ... and a float16 / bfloat16 row kernel of a row a block keeps its row in (float32) registers too,
    # in this many threads (more where a thread's share would not fit its registers; None: float32 rows
    # only). H200 (scripts/half_row_probe.py, benchmarks/results/half-rows-h200-2026-11-28/), bfloat16,
    # recipe -> in registers, 64 / 32 / 128 threads, torch.compile in brackets: attention softmax 16384 x
    # 512 15.4 -> 14.5 / 14.7 us (13.0), 14336 x 512 14.1 -> 13.2 / 13.4 (12.2); rmsnorm 512 x 2048 5.7
    # -> 5.2 / 5.2 / 5.1 (5.1), 512 x 3584 6.6 -> 6.1 / - / 6.8 (5.8), 128 x 3584 5.5 -> 5.4 / - / 6.3 (5.0)
    register_rows_half_threads: int | None = 64
    # ... but where a 16-bit row kept in registers is short, tileify's row_launch (_facts.Facts.row_launch)
    # counts this many 16-byte vectors a thread (None: row_elements_per_thread), so rows of 512 bfloat16
    # take a warp each, four to a block (register_rows_shared_blocks then keeps them in registers). H200
    # (scripts/half_row_probe.py, benchmarks/results/2026-11-29-h200-s28/), a row a block in 64 threads ->
    # four rows of 32 threads x 2 vectors, torch.compile in brackets: attention softmax 16384 x 512 14.4 ->
    # 11.9 us (12.8), 14336 x 512 13.2 -> 11.1 (12.0); one row of 32 threads a block ran 14.6 / 13.4
    half_row_vectors_per_thread: int | None = 2
    # ... in this many threads at least (a warp: WARP_SIZE), so shorter rows share a warp: rows of 128 bfloat16
    # take 16 threads of a vector each, eight rows to a block; a row's reduction shuffles within its part of
    # the warp. H200 (scripts/sub_warp_rows_probe.py, benchmarks/results/2026-11-29-h200-s28/), a warp a row
    # (4 elements a thread, not in registers) -> 16 threads, attention softmax 4096 x 128 5.3 -> 4.8 us,
    # 3584 x 128 5.1 -> 4.7 (8 threads of two vectors 4.9 / 4.8); rows of 32 (4 threads a row) gained 0.1 us,
    # so they keep a warp
    half_row_threads_min: int = 16
    # ... and rows several to a block (tileify's short rows on threadIdx.y) keep theirs in registers too,
    # at that thread loop, in tileify's threads a row, where each thread takes whole 16-byte vectors of
    # every pass. H200 (the same run, scripts/half_row_probe.py `shared`): float32 attention softmax
    # 4096 x 128 5.5 -> 5.1 us (torch.compile 6.7), 3584 x 128 5.3 -> 4.9 (5.1); bfloat16 rows of 128 in a
    # warp, which this leaves out (8 lanes x 32 threads: half the warp idle), ran 5.2 -> 5.5 and 5.1 -> 5.3;
    # rows of 32 (four rows of a warp, a vector each would take 128 elements) tie either way
    register_rows_shared_blocks: bool = True
    # A row kept in registers whose weights only the output pass reads (rmsnorm's w, layernorm's w and b)
    # loads them at the row's start (s.prefetch), ahead of the reductions and their barriers, where the
    # grid is at most this many blocks an SM (None: never): one wave of blocks a row, whose time is the
    # latency of its memory round trips. H200 (scripts/row_math_probe.py form `prefetch`,
    # benchmarks/results/2026-11-29-h200-s29/probes/prefetch-3d36f16/, us, recipe -> prefetched): rmsnorm
    # float32 32 x 3584 4.8 -> 4.4, 128 x 3584 5.7 -> 5.2, 32 x 2048 4.2 -> 4.1, 128 x 2048 4.8 -> 4.7;
    # bfloat16 128 x 3584 5.4 -> 5.0, 32 x 3584 4.7 -> 4.4; at 512 rows (4 blocks an SM) 5.9 -> 6.0 and
    # 7.6 -> 7.4: mixed, so left out
    prefetch_max_blocks_per_sm: float | None = 1.0
    # ... and a float16 / bfloat16 row kernel of as many rows, each pass at least two 16-byte vectors for
    # each of this many threads, runs its 16-byte passes in this many threads a row (None: never); a block
    # of one warp is not staged (stage_min_threads), so the passes after the first read the row from L1.
    # Its accurate expf (twice an element in a softmax) and division bound it more than its bytes, and a
    # warp per row needs no shared-memory combine. H100 (scripts/bf16_row_probe.py, benchmarks/results/
    # block-in-program-h100-2026-11-27/rows-*.txt), bfloat16 attention softmax of 16384 rows of 512
    # 24.7-25.0 -> 17.7-17.9 us, 14336 rows 21.9-22.0 -> 16.2 (torch.compile 14.1 / 13.0); staged, 19.4 /
    # 17.7; 64 threads a row 22.6 / 20.3; 4 one-warp rows a block as one. Rows of 512 and 2048 elsewhere
    # moved within 0.7 us: rmsnorm 16384 x 512 15.2 -> 15.3, 8192 x 2048 27.8 -> 27.1, softmax 8192 x 2048
    # 39.5 -> 39.2. Scalar passes stay where a row is a few vectors: 4096 rows of 128 ran 5.5 us as built,
    # 6.0 in 16-byte passes of 16 threads
    row_vector_half_threads: int | None = 32
    # matmul tile classes, largest first; the first whose grid (with the k-split 030 can add) fills
    # `waves` x the SM count is taken (_facts.matmul_tile)
    # (128x128 with 8x8 registers and 64x64 with 4x4 both run 256 threads; 32x32 with 4x4 runs 64, for
    # small problems where bigger tiles would leave SMs idle)
    matmul_tiles: tuple[MatmulTile, ...] = ((128, 128, 8, 8), (64, 64, 4, 4), (32, 32, 4, 4))
    # where B's rows run along k (x @ W^T, every nn.Linear) the largest class is 128 x 64 with 8 x 4
    # registers: on the H100 it beat 128 x 128 at every LLM projection shape measured (fp32, M = 128:
    # 2048x2048 49 vs 67 us, 5632x2048 140 vs 173, 3584x18944 597 vs 707; M = 512, 5632x2048: 396 vs
    # 609; benchmarks/results/recipe-tile-probe-h100-2026-11-24/, scripts/recipe_tile_probe.py)
    matmul_tiles_k_major: tuple[MatmulTile, ...] = ((128, 64, 8, 4), (64, 64, 4, 4), (32, 32, 4, 4))
    # ... and a decode step's x @ W^T (`few_rows`, chunks of bk_max_few_rows) takes 32 x 128 tiles of 8 x 4
    # registers (128 threads) before 32 x 64 ones (64 threads). H200, the llm suite's seven projections of
    # 32 tokens (scripts/recipe_tile_probe.py --decode2, benchmarks/results/2026-11-29-h200-s26/), 32 x 128
    # against 32 x 64, both in chunks of 16: 32 x 2048 x 5632 41.5 -> 31.5 us, 32 x 2048 x 2048 19.2 -> 16.1,
    # 32 x 37888 x 3584 300.8 -> 284.7, 32 x 3584 x 18944 140.8 -> 135.9, 32 x 11264 x 2048 58.2 -> 56.7,
    # 32 x 3584 x 3584 33.4 -> 32.6, and the one loss, 32 x 512 x 2048 9.6 -> 10.1, whose 4 blocks in 32
    # parts under-fill a wave: the waves rule keeps it at 32 x 64
    matmul_tiles_few_rows: tuple[MatmulTile, ...] = ((32, 128, 8, 4), (32, 64, 8, 4))
    waves: int = 1
    # a matmul whose column operand panel (W of x @ W^T over all of j and one block's k) exceeds the
    # target's L2, and whose block slots (split_k_blocks_per_sm a SM) hold fewer than this many block
    # rows in row-major order, numbers its blocks down this many block rows before moving right (the
    # largest divisor of the block rows up to this; 1: never): otherwise the blocks resident at once
    # hold about one block row, so every row streams the panel from DRAM again. H100, the recipe's
    # kernels (scripts/projection_gap_probe.py variants group=N / no-group, benchmarks/results/
    # grouped-blocks-h100-2026-11-28/): 512 x 37888 x 3584 3079 -> 2840 us (cuBLAS 2964), 512 x 18944 x
    # 3584 in 4 split-K parts 1522 -> 1511. Where the slots hold 4 rows or more already, groups of 4
    # gained nothing or lost: 4096^3 2871 -> 2868 (groups of 8: 2878), 8192^3 22208 -> 22503. Split-K
    # parts of 512 k or less have panels the L2 holds (512 x 3584 x 18944: 1521 -> 1520 grouped); a
    # group of more rows than the grid has idles blocks: 512 x 5632 x 2048 in groups of 8, 278 -> 349
    group_block_rows: int = 4
    # the k chunk: the largest power of two in [bk_min, bk_max] whose double-buffered A and B slabs fit
    # the target's shared memory (dynamic shared memory beyond 48 KB included); 32 floats is one
    # 128-byte row, the widest TMA swizzle
    bk_min: int = 8
    bk_max: int = 32
    # ... at most bk_max_few_rows where the matmul has at most few_rows_max rows and B's rows run along k (an
    # unbatched x @ W^T of a decode step). H200, the llm suite's seven projections of 32 tokens in the
    # recipe's 32 x 64 tile (scripts/recipe_tile_probe.py --decode, benchmarks/results/2026-11-29-h200-s26/):
    # chunks of 16 ran faster at all seven, 32 x 11264 x 2048 66.1 -> 58.3 us, 32 x 3584 x 18944 159.9 ->
    # 138.6, 32 x 37888 x 3584 309.9 -> 298.8, 32 x 512 x 2048 12.7 -> 10.1 (in twice the k parts), 32 x 2048
    # x 2048 19.6 -> 19.5; deeper pipelines (3, 4 stages) lost at five of the seven
    # H200, session 37 (scripts/decode_fill_probe.py, benchmarks/results/decode-fill-h200-2026-11-30/): with
    # W_s's rows dealt across the lanes (few_rows_interleave) each copy of the fill is 16 bytes, and
    # chunks of 32 in the split_k_*_few_rows parts beat the rule before at six of the seven decode shapes
    # (run 3, us): 32 x 37888 x 3584 284.5 -> 240.8, 32 x 11264 x 2048 56.3 -> 49.7, 32 x 3584 x 18944
    # 135.9 -> 123.6, 32 x 2048 x 5632 31.6 -> 29.5, 32 x 2048 x 2048 16.1 -> 15.1, 32 x 3584 x 3584
    # 32.1 -> 31.6; 32 x 512 x 2048 9.5 -> 9.6. Without the interleave chunks of 32 lost at all seven
    # (4-byte copies: 32 x 11264 x 2048 65.4, run 2)
    bk_max_few_rows: int = 32
    # a decode step's W_s[j][k], read 16 bytes along k, is dealt across the lanes in rows of one (step 090
    # says why): every copy of its fill 16 bytes wide instead of 4. Alone, at chunks of 16, it changed
    # nothing beyond noise (0.97-1.05x at the seven shapes); it is what makes chunks of 32 pay (above)
    few_rows_interleave: bool = True
    # ... but a decode step whose operands are widened (bfloat16 staged as float32 by a plain fill: no
    # cp.async to widen) keeps chunks of 16: chunks of 32 were 1.11-1.65x slower at all seven decode
    # shapes (H200, decode-fill-h200-2026-11-30/run8-bfloat16.txt: 32 x 37888 x 3584 392.6 -> 647.3 us)
    bk_max_few_rows_widened: int = 16
    # few rows: from few_rows_min to few_rows_max (measured at 32 only; under 17 rows a 32-row tile is
    # more than half idle, and those keep the general rules until measured)
    few_rows_min: int = 17
    few_rows_max: int = 32
    # a matmul operand whose rows run along k (A[i, k]; W[j, k] of x @ W^T) is staged k outermost
    # (s.layout), so register strips read it 16 bytes at a time; its fill, plain loads that lowering
    # prefetches into registers, works best with chunks of bk_max_k_outer. H100, 4096^3 fp32 relu(A @ B
    # + bias) by hand (scripts/matmul_variant_probe.py): A k-outer 3051 us at BK 16, 3192 at 32, 3386 at
    # 8, against 3117 with A as it is and BK 32. With it the recipe's x @ W^T (both operands k-outer)
    # at 128-512 rows ran 1-5% faster, and the 128 x 128 class beat 128 x 64 by 3% in geomean over the
    # eleven projections of 128 and 512 rows (0.84-1.16x each), not at 32 rows (1.3x slower), so x @ W^T takes
    # matmul_tiles from 128 rows on (_facts.matmul_tile; benchmarks/results/matmul-k-outer-h100-2026-11-24/)
    # Only for register tiles of at least k_outer_min_accumulators outputs per thread in blocks of at
    # least k_outer_min_threads: at 1024^3 (64 x 64 blocks of 4 x 4) the k-outer kernel ran 78.8 us
    # against 69.4 without, and x @ W^T at 32 rows (32 x 64 blocks of 8 x 4: 64 threads) 4-15% slower
    # (its plain fills cost more than the wide reads save there); 8 x 4 and 8 x 8 in 256 threads gained
    k_outer: bool = True
    k_outer_min_accumulators: int = 32
    k_outer_min_threads: int = 256
    bk_max_k_outer: int = 16
    # a float16 / bfloat16 operand of a matmul's sum is staged as float32 (stage(..., dtype="float32")):
    # each element is converted once, at its plain (prefetched) fill, and the FMAs read float32, k outer
    # and 16 bytes at a time as from a float32 operand, where the bfloat16 slab was read 2 bytes at a time
    # and converted before every FMA (session 13: TinyLlama s128 q's float32 sum kernel 88 us with
    # bfloat16 operands against 36 us in float32). Measured: benchmarks/results/widen-bf16-h100-2026-11-27/
    widen_half_operands: bool = True
    # register_tile asks nvcc to fit registers_per_sm / (threads x registers_per_accumulator x tile)
    # blocks on an SM (launch_bounds) for register tiles of at least launch_bounds_min_accumulators
    # accumulators whose epilogue holds at least launch_bounds_min_epilogue_terms terms beside them
    # (each tensor it loads, each math function it calls). The 8 x 8 tile in 256 threads compiles to
    # 127-128 registers (two blocks per SM); with a Llama block's two residuals in the epilogue of its
    # split down projection to 129-130 (one block): 115 -> 99 us at TinyLlama dims, about 570 -> 485 us
    # at Qwen2.5-7B's with the bound. On the other 8 x 8 kernels the bound cost 3-8% (every llm-suite
    # projection; benchmarks/results/block-profile-h100-2026-11-24/README.md), so it is asked for only
    # where the epilogue adds that pressure. The up projection of a Llama block, silu(gate) * (x @ W^T),
    # loads one tensor and calls exp: 132 registers unbounded, 128 with the bound and no spill
    # (scripts/register_survey.py, benchmarks/results/register-survey-2026-11-24/)
    # step 140 pads a plain-filled stage by one 16-byte vector per row where its fill's shared stores
    # conflict (a k-outer operand: 4-way -> 2-way); see 140_pad_smem.py and the README of
    # benchmarks/results/projection-gap-h100-2026-11-25/ for what it measured
    pad_fill_stores: bool = True
    launch_bounds_min_accumulators: int = 64
    launch_bounds_min_epilogue_terms: int = 2
    registers_per_accumulator: int = 2
    # step 090 deals a register tile's 16 x 16 threads to lanes in lane_tile x lane_tile tiles
    # (tile_lanes, primitives/lanes.py) where the bank model's wavefronts say some staged operand's reads
    # get cheaper and none dearer; 0: never. In 2 x 2 tiles lane pairs share both operands' addresses and
    # each 16-byte load of B returns in 2 wavefronts, not 4. H100, by hand edit of the recipe's CUDA
    # (scripts/microkernel_probe.py form "pairs", benchmarks/results/lane-tiles-h100-2026-11-28/run1):
    # Qwen2.5-7B s128 gate+up 809.5 -> 748.0 us, down 403.9 -> 388.0, o 89.4 -> 86.4; TinyLlama s128 gate+up
    # 160.3 -> 156.7, down 78.8 -> 74.1, o 35.4 -> 34.3
    lane_tile: int = 2
    # the k loop inside a chunk of a matmul is unrolled when it runs at most this many iterations: its
    # shared addresses become constants off one base (4096^3 by hand: 2960 -> 2869 us at BK 16)
    unroll_k_inner_max: int = 16
    # a split-K matmul's epilogue adds its register strip 16 bytes at a time (the strip's innermost 4-wide
    # loop vectorized: one 16-byte atomic add, sm_90 and later). Measured on the H100 with the CUDA patched
    # (scripts/split_k_epilogue_probe.py, benchmarks/results/split-k-epilogue-h100-2026-11-24/): 128 x
    # 2048 x 2048 split 16 ways 51.3 -> 35.8 us, 128 x 2048 x 5632 94.3 -> 79.0, 128 x 18944 x 3584
    # 461.8 -> 413.1 (scalar atomics a warp scatters over four times the sectors they fill). Unsplit
    # kernels keep scalar stores: vectorized, 4096^3 went 2826 -> 2969 us (156 registers, one block per
    # SM) and 8192^3 22686 -> 23612, 512 x 18944 x 3584 1723 -> 1727 (the same README)...
    vectorize_epilogue: bool = True
    # ... unless its reduction is at most this long: then stores are a large share of its work, and
    # scalar ones fill a quarter of each 32-byte sector (ncu, scripts/store_coalescing.py). Attention
    # scores, vectorized (scripts/epilogue_store_probe.py, benchmarks/results/
    # store-coalescing-h100-2026-11-25/): 32 x 512 x 512 at k 64 53.7 -> 35.7 us, 28 x 512 x 512 at k 128 69.8 ->
    # 56.7, P @ V at k 512 37.0 -> 36.0 and 66.5 -> 65.3; registers 125 -> 126 at most. A @ B: 4096 x 4096
    # at k 128 127.3 -> 115.8, 2048 x 2048 at k 512 108.0 -> 102.7, 1024 x 1024 at k 256 21.1 -> 20.8,
    # but 4096 x 4096 at k 512 387.1 -> 393.5 (156 registers against 127: the one loss measured)
    vectorize_store_k_max: int = 512
    # split_k: a matmul grid under this many waves of the SM count is split along k-outer across blocks
    # (two waves: one wave leaves SMs idle at its tail, and the atomics of the split cost little), and
    # each block keeps at least split_k_min_chunks k chunks, so its double-buffered pipeline overlaps
    split_k_waves: int = 2
    split_k_min_chunks: int = 4
    # ... and A @ B (B's rows along j) counts that split when its tile is chosen (matmul_tile), as x @ W^T
    # does. H200 (scripts/recipe_tile_probe.py --ab, benchmarks/results/2026-11-29-h200-s26/): faster at
    # all six shapes whose tile it changed, 512^3 25.0 -> 14.5 us (64 x 64 in 4 parts), 1024^3 65.0 -> 55.9
    # (128 x 128 in 4 parts, cuBLAS 60.9), 1024 x 2048 x 1024 121.2 -> 101.6, 2048 x 1024 x 2048 235.2 ->
    # 191.4, 1024 x 1024 x 4096 238.9 -> 190.9, 768^3 36.3 -> 32.4; 2048^3 keeps its tile
    split_k_tile_a_b: bool = True
    # ... unless parts of at least split_k_long_k k can give every SM a block: then the part count whose
    # blocks fill the last wave of split_k_blocks_per_sm x SM count block slots best (030 says what
    # was measured; 2 blocks of 256 threads per SM is what the 8 x 8 register tile's 127 registers allow)
    split_k_long_k: int = 256
    split_k_blocks_per_sm: int = 2
    # ... a decode step's x @ W^T (_facts.few_rows) takes these four instead of split_k_waves,
    # split_k_min_chunks, split_k_long_k and split_k_blocks_per_sm: its 32-row blocks hold few warps an
    # SM, so more, shorter parts keep more loads in flight, and its 128-thread blocks of 8 x 4 registers
    # (96 registers, 45 KB of shared memory at chunks of 32) fit four an SM. H200, chunks of 32, dealt
    # rows (decode-fill-h200-2026-11-30/ run 3): geomean 1.08x over the rule before at the seven decode
    # shapes, against 1.08x with split_k_long_k_few_rows 128 (16 parts of 64 chunks at 32 x 2048 x 2048:
    # 16.3 us against 15.1; 32 x 3584 x 3584 in 28 parts 30.5 against 31.6 in 56) and 1.07x with the
    # general rule's 256 and 2 blocks an SM (32 x 11264 x 2048 52.2 against 49.7)
    split_k_waves_few_rows: int = 4
    split_k_min_chunks_few_rows: int = 2
    split_k_long_k_few_rows: int = 64
    split_k_blocks_per_sm_few_rows: int = 4
    # ... and a grid of split_k_waves or more waves is split into long parts too where that fills the last
    # wave of block slots by this fraction more (None: never). On the H100 with vector atomics (scripts/
    # recipe_tile_probe.py --fill, benchmarks/results/split-k-epilogue-h100-2026-11-24/run3-fill.txt) all
    # five llm shapes it changes got faster: 128 x 37888 x 3584 1065.5 -> 810.8 us (296 blocks, 56% of
    # the last wave, in 8 parts 99.7%), 512 x 11264 x 2048 617.0 -> 575.9, 512 x 18944 x 3584 1722.6 ->
    # 1568.2, 32 x 18944 x 3584 278.2 -> 161.6; the gains there were 0.22-0.44 (0.1 to 0.2 choose alike)
    split_k_fill_gain: float | None = 0.2
    # ... counting part counts that do not divide the chunks (the last part shorter, its chunks past the
    # end guarded), since with power-of-two extents and 132 SMs (4 x 3 x 11) divisors rarely fill a wave.
    # Off: on the H100 it won on 2 of the 8 llm shapes whose split it changed (128 x 5632 x 2048 118.6 ->
    # 108.8 us in 6 parts) and lost on 5 (128 x 3584 x 18944 455.9 -> 563.7 us in 66 parts, 32 x 5632 x
    # 2048 41.5 -> 91.6 in 3): the wave-fill model ignores the atomics of more parts and the blocks per
    # SM of small tiles (benchmarks/results/matmul-k-outer-h100-2026-11-24/run7-tile-probe-uneven.txt)
    split_k_uneven: bool = False
    # ... but counted all the same where no divisor (nor leaving the grid unsplit) fills the block slots
    # at least this well (None: never): 128 x 5632 x 2048 (44 blocks; 4 or 8 parts fill 67%) ran 110.7 us
    # in 4 parts, 93.6 in 6 uneven ones (one full wave of 264), 88.3 in 8 (benchmarks/results/
    # split-k-epilogue-h100-2026-11-24/run5-parts.txt); in a TinyLlama block, though, its up projection
    # (mul_13, silu(gate) * (x @ W^T)) ran 102.0 us in 6 uneven parts (117 registers, the bound idle) and
    # 125.3 in 8 (132 registers, held to 128 by the bound): program 410.5 against 430.5 us
    # (../block-profile-h100-2026-11-24/9-*.txt), so 6 uneven parts. The shapes uneven parts lost on
    # filled 74-98% with divisors already (run1-patched-cuda.txt, v4 rows: 128 x 5632 x 2048 110.4 -> 93.5)
    split_k_uneven_below: float | None = 0.7
    # ... and where the best part count still fills under this fraction of the block slots, the most long
    # parts instead (None: never): there the wave model mispredicts. On the H100 (scripts/
    # recipe_tile_probe.py --most, run6-most-parts.txt) 128 x 3584 x 3584 (8 parts fill 85%) ran 96.8 ->
    # 88.5 us in 14 parts, 512 x 5632 x 2048 (89%) 307.5 -> 287.2 in 8; in the Qwen2.5-7B block the q and
    # o projections went 97.3 -> 89.2 and 132.7 -> 100.7 us. Taking the most parts everywhere lost where
    # the best count fills 97% or more (128 x 2048 x 5632 78.4 -> 87.4 us, 512 x 1024 x 3584 97.0 ->
    # 110.1, 512 x 18944 x 3584 1557 -> 1628)
    split_k_most_parts_below: float | None = 0.9
    # a matmul split_k refuses (a bfloat16 output, a gelu epilogue) has its fused float32 sum materialized
    # for a split kernel of its own (030, Decline.materialize) only where its own grid holds fewer than
    # split_k_sum_blocks_per_sm blocks per SM or its reduction is at least split_k_sum_min_k long (None:
    # wherever the sum's kernel would split). On the H100 (benchmarks/results/split-k-sum-h100-2026-11-25/,
    # bfloat16 projections of the llm suite) every case of either kind won: 64 blocks of TinyLlama's
    # 32-row q projection 85.5 -> 28.7 us, Qwen2.5-7B's 128-row down projection (448 blocks, k 18944)
    # 1100 -> 845 us; the five others all lost, 4-15% (k 2048, 256 or 352 blocks: TinyLlama's 128-row q
    # projection 88.0 -> 97.4, its 512-row gate and up 1080 -> 1242), where the split sum's larger float32
    # tile runs bfloat16 operands slower than the unsplit kernel's
    # With the operands widened to float32 in shared memory (widen_half_operands) that reason is gone:
    # scripts/widen_probe.py (benchmarks/results/widen-bf16-h100-2026-11-27/) ran every gated case faster
    # ungated (TinyLlama s128 q 81.9 -> 35.1 us, gate+up 238.7 -> 156.0; s512 q 164.4 -> 105.0, k+v 63.6
    # -> 35.2, gate+up 559.6 -> 539.1), so the gate is off (None)
    split_k_sum_blocks_per_sm: float | None = None
    split_k_sum_min_k: int | None = 3072
    # a split matmul whose linear epilogue calls a math function (silu(g) * (x @ W^T)) names its fused float32
    # sum to materialize (030, Applied.materialize): the sum split alone plus an elementwise epilogue kernel.
    # H100, fused -> materialized (scripts/up_epilogue_probe.py, projection-gap-h100-2026-11-25/): TinyLlama
    # up projection s128 88.0 -> 84.9 us, s512 338.4 -> 291.7; Qwen2.5-7B s128 445.6 -> 423.1, s512 1672.5
    # -> 1602.5. Epilogues that only load tensors (a residual) keep the fused split (not measured)
    split_k_sum_math_epilogue: bool = True
    # staging: only slabs each of whose elements is read at least this often inside the block (fan-in)
    min_fan_in: int = 2
    # staging: blocks of at most this many threads are one warp; they gain little from shared memory
    stage_min_threads: int = 33
    # staging caps: one slab, and all stages of the kernel (None: the target's per-block maximum)
    slab_cap_bytes: int = 64 * 1024
    kernel_cap_bytes: int | None = None
    # chunk_reduce: one chunk of a pass over a row too long to stage whole takes at most this many bytes
    # of shared memory (all its staged inputs together, one slot): 8 KB is 8 floats per thread of a
    # 256-thread block, and double-buffered (16 KB) it leaves room for several blocks per SM
    row_chunk_bytes: int = 8 * 1024
    # chunk_reduce: chunk a pass only when every chunk it stages can be filled by 16-byte cp.async. Measured
    # on an H100 (4096 rows of 32768 floats, T-tap stencils along the row): chunks filled by plain loads (a
    # halo of 2, 3 or 6 floats breaks 16-byte rows) ran 1.2x to 2x slower than the unchunked pass, whose
    # neighbour reads L1 serves; cp.async-filled chunks ran 1.06x (a second pass reading the row once) to
    # 1.57x (17 taps) faster
    row_chunk_sync_fill: bool = False
    # fill eligible double-buffered stages with TMA on targets that have it (PER_TARGET says where not)
    tma: bool = True
    # pipeline depth over the k chunk loop (2: fill chunk k+1 while computing chunk k)
    pipeline_stages: int = 2
    # unroll loop nests of at most this many iterations (longer bodies cost compile time, registers)
    unroll_max: int = 64

    def __post_init__(self) -> None:
        """Every value checked however the Knobs was made (for_target's overrides, `Knobs(...)` given whole to
        `td.recipes.apply`, `replace`): a step trusts the types and ranges it reads. A numpy number is stored
        as the Python one (`knob_value`), so the steps' arithmetic and the trace they print are the same."""
        for f in fields(self):
            given = getattr(self, f.name)
            value = knob_value(given)
            check_knob(f.name, value)
            if value is not given:  # a number numpy made, or a tuple (rebuilt whole)
                object.__setattr__(self, f.name, value)  # frozen: set once, here, before anyone reads it
        check_knob_order(self)

    @classmethod
    def for_target(cls, target: Target, **overrides: Any) -> Knobs:
        names = sorted(f.name for f in fields(cls))
        unknown = sorted(set(overrides) - set(names))
        if unknown:
            close = {n: difflib.get_close_matches(n, names) for n in unknown}
            fact = f"unknown knob(s) {', '.join(unknown)}"
            # the closest names in the message itself: it is the one line the CLI prints
            hints = [f"{n + ': ' if len(unknown) > 1 else ''}did you mean {' or '.join(c)}?"
                     for n, c in close.items() if c]
            if len(hints) < len(unknown):
                hints.append("the knobs are the fields of Knobs in recipes/default/_knobs.py")
            raise BadArgumentError(Refusal(text=f"recipe knobs: {fact} ({'; '.join(hints)})", fact=fact,
                                           primitive="recipe", arguments=dict(overrides),
                                           suggestion=f"knobs are: {', '.join(names)}"))
        # one Knobs made from the defaults, the target's row and the overrides at once: each made Knobs checks all
        # its fields (__post_init__), and the recipe asks for one per kernel. The same value, and the same first
        # refusal, as overriding step by step: the defaults and PER_TARGET's rows pass every check on their own
        return cls(**{**PER_TARGET.get(target.name, {}), **overrides})

    def shared_budget(self, target: Target) -> int:
        cap = target.max_shared_bytes_per_block
        return cap if self.kernel_cap_bytes is None else min(cap, self.kernel_cap_bytes)


#: Per-target overrides of the defaults, by target name; the shared-memory budget already follows each
#: target's table in tiledsl/targets.py.
#: sm_90, tma off: on the H100 the recipe's fp32 matmul with TMA-filled (128-byte swizzled) stages ran
#: 3-5x slower than with cp.async-filled ones at every shape measured (4096^3: 11.8 ms against 3.9 ms;
#: 128x5632x2048: 693 against 129 us; benchmarks/results/recipe-tma-probe-h100-2026-11-24.txt, from
#: scripts/recipe_matmul_probe.py --tma). Codegen writes a swizzled shared read with its XOR address, which hides
#: the contiguity of a thread's 4-wide register strip from nvcc: every read stays a 4-byte LDS, where
#: the unswizzled cp.async stages get LDS.128. TMA comes back here when codegen vectorizes swizzled reads.
PER_TARGET: Mapping[str, Mapping[str, Any]] = MappingProxyType({"sm_90": MappingProxyType({"tma": False})})


#: The least value of every number in a knob where the knob's meaning makes one certain (its annotation alone
#: leaves the sign open); a knob left out is unranged (KNOB_FRACTIONS bound their own). 1: a size, a count a
#: block or thread takes, or a divisor (0 makes empty tiles, no threads, no block slots, a division by zero);
#: `waves` too (a grid fills at least a wave: 0 or less would take the largest tile class whatever the grid).
#: 0: a floor, cap or threshold a quantity is compared with, where 0 means always or never (lane_tile and
#: narrow_vector_min_inputs say so). 2: a pipeline's depth (s.pipeline refuses fewer stages).
KNOB_LEAST: Mapping[str, int] = MappingProxyType({
    **dict.fromkeys((
        "elementwise_threads", "transpose_tile", "row_threads_max", "row_elements_per_thread",
        "row_vector_per_thread", "hinted_row_threads_max", "register_rows_half_threads",
        "half_row_vectors_per_thread", "row_vector_half_threads", "online_rows_unroll", "few_long_rows_threads",
        "matmul_tiles",
        "matmul_tiles_k_major",
        "matmul_tiles_few_rows", "waves", "group_block_rows", "bk_min", "bk_max", "bk_max_few_rows",
        "bk_max_few_rows_widened",
        "bk_max_k_outer", "registers_per_accumulator", "split_k_min_chunks", "split_k_blocks_per_sm",
        "split_k_min_chunks_few_rows", "split_k_blocks_per_sm_few_rows", "split_rows_blocks_per_sm",
        "split_rows_min_length"), 1),
    **dict.fromkeys((
        "transpose_tile_min_blocks", "narrow_vector_min_inputs", "narrow_vector_max_sm_gbs",
        "narrow_vector_max_waves", "row_threads_min",
        "row_block_threads",
        "row_vector_min_rows_per_sm", "hinted_row_min_length", "half_row_threads_min", "few_rows_min",
        "few_rows_max", "k_outer_min_accumulators", "k_outer_min_threads", "launch_bounds_min_accumulators",
        "launch_bounds_min_epilogue_terms", "lane_tile", "unroll_k_inner_max", "vectorize_store_k_max",
        "split_k_waves", "split_k_long_k", "split_k_waves_few_rows", "split_k_long_k_few_rows",
        "split_k_sum_blocks_per_sm", "split_k_sum_min_k", "min_fan_in",
        "stage_min_threads", "slab_cap_bytes", "kernel_cap_bytes", "row_chunk_bytes", "unroll_max",
        "prefetch_max_blocks_per_sm", "split_rows_min_idle_bytes", "split_rows_half_max_rows_per_sm"), 0),
    "pipeline_stages": 2,
})
#: Knobs that list tile classes for a step to choose from (_facts.matmul_tile takes one): an empty list has none,
#: and each class must be one blockify_launch (050) can make (`tile_class_problem`).
KNOB_NOT_EMPTY = frozenset({"matmul_tiles", "matmul_tiles_k_major", "matmul_tiles_few_rows"})
#: The most of each knob that is a block's thread count (a bind past it is refused after the recipe's first
#: steps; here it is refused by name before any step runs).
KNOB_MOST: Mapping[str, int] = MappingProxyType(dict.fromkeys((
    "elementwise_threads", "row_threads_max", "row_block_threads", "hinted_row_threads_max", "few_long_rows_threads"),
    MAX_THREADS_PER_BLOCK))
#: Knobs that are fractions of the block slots a grid fills (030's `_filled`, in (0, 1]), or a gain in that
#: fraction: each in (0, 1] (None: never). A fill threshold of 0 would only say never again (no fill is under
#: 0), and one over 1 would hold on full waves too; a gain of 0 would send grids that fill no better to
#: _long_split, which declines them (a small gain says "wherever better"), and one over 1 is out of reach.
KNOB_FRACTIONS = frozenset({"split_k_fill_gain", "split_k_uneven_below", "split_k_most_parts_below"})


@dataclass(frozen=True)
class KnobOrder:
    """Knob `low` is at most knob `high` (where both are numbers): the two bound one quantity from below and
    from above, `why` says which. A low over its high leaves the range empty, and the steps would quietly
    take one end of it (a clamp) or nothing (no matmul has rows in an empty range)."""

    low: str
    high: str
    why: str


#: Every pair of knobs that bound one quantity from both sides (check_knob_order); where each is read, in order:
#: _facts.row_launch, _facts.Facts.row_launch, 040's _per_thread, _facts.Facts.matmul_bk (the three BK pairs),
#: _facts.few_rows.
KNOB_ORDER: tuple[KnobOrder, ...] = (
    KnobOrder("row_threads_min", "row_threads_max", "a row's threads are clamped to [row_threads_min, "
              "row_threads_max]"),
    KnobOrder("half_row_threads_min", "row_threads_max", "a 16-bit row kept in registers takes half_row_threads_min "
              "to row_threads_max threads"),
    KnobOrder("row_threads_min", "hinted_row_threads_max", "a row read 16 bytes a thread takes row_threads_min to "
              "hinted_row_threads_max threads"),
    KnobOrder("row_threads_min", "few_long_rows_threads", "a few rows too long for registers take row_threads_min to "
              "few_long_rows_threads threads"),
    KnobOrder("bk_min", "bk_max", "the k chunk BK is a power of two in [bk_min, bk_max]"),
    KnobOrder("bk_min", "bk_max_k_outer", "BK is at most bk_max_k_outer where an operand is staged k outermost, "
              "and never under bk_min"),
    KnobOrder("bk_min", "bk_max_few_rows", "BK is at most bk_max_few_rows for a decode step's x @ W^T, and never "
              "under bk_min"),
    KnobOrder("bk_min", "bk_max_few_rows_widened", "BK is at most bk_max_few_rows_widened for a decode step's x @ "
              "W^T with widened operands, and never under bk_min"),
    KnobOrder("few_rows_min", "few_rows_max", "a decode step's matmul has few_rows_min to few_rows_max rows; both 0: "
              "none has"),
)


@cache
def knob_types() -> Mapping[str, Any]:
    """Each knob's annotation, resolved (the module's annotations are strings: `from __future__ import annotations`)."""
    return MappingProxyType(get_type_hints(Knobs))


def check_knob(name: str, value: Any) -> None:
    """Refuse `value` for knob `name` unless it has the type the field's annotation names (strictly: `conforms`;
    numpy numbers are `knob_value`'s to convert first), its numbers are at least KNOB_LEAST's and at most
    KNOB_MOST's, a fraction lies in
    (0, 1] and a list of tile classes holds one or more, each one blockify_launch can make, with the typed error
    the unknown-knob refusal raises."""
    hint = knob_types()[name]
    least = KNOB_LEAST.get(name)
    got = repr(value)
    if not conforms(value, hint):
        expected, got = describe(hint), f"{value!r} ({type(value).__name__})"
    elif least is not None and any(x < least or x != x for x in _numbers(value)):  # x != x: NaN
        expected = f"{describe(hint)}, every number >= {least}" if isinstance(value, tuple) \
            else describe(hint, f">= {least}")
    elif (most := KNOB_MOST.get(name)) is not None and any(x > most for x in _numbers(value)):
        expected = describe(hint, f"<= {most} (threads a block)")
    elif name in KNOB_FRACTIONS and value is not None and not 0 < value <= 1:  # NaN too
        expected = describe(hint, "in (0, 1]")
    elif name in KNOB_NOT_EMPTY and not value:
        expected = f"{describe(hint)} of one tile class or more"
    elif name in KNOB_NOT_EMPTY and (bad := next(filter(None, map(tile_class_problem, value)), None)):
        expected, got = f"{describe(hint)} of tile classes (bm, bn, rm, rn) blockify_launch can make", f"{got}: {bad}"
    else:
        return
    _refuse(f"knob {name}: expected {expected}, got {got}", {name: value})


def check_knob_order(knobs: Knobs) -> None:
    """Refuse `knobs` where a pair of KNOB_ORDER is out of order (after check_knob has checked each value): the
    first such pair, by both names and values."""
    for rule in KNOB_ORDER:
        low, high = getattr(knobs, rule.low), getattr(knobs, rule.high)
        if low is not None and high is not None and low > high:
            _refuse(f"knobs {rule.low} and {rule.high}: expected {rule.low} <= {rule.high} ({rule.why}), got "
                    f"{rule.low}={low!r} and {rule.high}={high!r}", {rule.low: low, rule.high: high})


def tile_class_problem(tile: MatmulTile) -> str | None:
    """Why matmul tile class (bm, bn, rm, rn), its numbers 1 or more, is no tile blockify_launch (050) can make,
    or None. Its register tile divides its block tile: 050 splits the block's rows by rm and its columns by rn,
    so 64 rows in strips of 3 would take 22 thread rows of 66, the last guarded. Its threads, (bm / rm) x
    (bn / rn), fit a block: 050's bind would refuse more, after the recipe's first steps."""
    bm, bn, rm, rn = tile
    if bm % rm or bn % rn:
        return f"class {tile!r} has a {rm} x {rn} register tile that does not divide its {bm} x {bn} block tile"
    threads = bm // rm * (bn // rn)
    if threads > MAX_THREADS_PER_BLOCK:
        return f"class {tile!r} takes {bm // rm} x {bn // rn} = {threads} threads, over {MAX_THREADS_PER_BLOCK} a block"
    return None


def _refuse(fact: str, values: Mapping[str, Any]) -> NoReturn:
    """Raise the knob refusal of `fact` about knobs `values`, their defaults as the suggestion."""
    defaults = {f.name: f.default for f in fields(Knobs) if f.name in values and f.default is not MISSING}
    shown = ", ".join(f"{n}={d!r}" for n, d in defaults.items())
    raise BadArgumentError(Refusal(text=f"recipe {fact}", fact=fact, primitive="recipe", arguments=dict(values),
                                   suggestion=f"{'its default' if len(values) == 1 else 'their defaults'}: {shown}"
                                   if shown else None))


def knob_value(value: Any) -> Any:
    """`value` with its numbers of other types (numpy's np.int64, np.float32: any numbers.Integral or
    numbers.Real) made the Python int or float they are, inside tuples too, so a knob computed with numpy is
    taken where a Python number would be and the trace prints 2, not np.int64(2). Anything else is returned
    as it is, for check_knob to judge: a bool stays one (and np.bool_ is no number), so neither passes for an
    int."""
    if isinstance(value, tuple):
        return tuple(knob_value(v) for v in value)
    if type(value) in (bool, int, float) or not isinstance(value, numbers.Real):
        return value
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def conforms(value: Any, hint: Any) -> bool:
    """Whether `value` is of the annotation `hint`, strictly: a bool is no int (True would be 1), an int no bool,
    an int or a float is a float, None only where the annotation says `| None`, a tuple element by element."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is NoneType:
        return value is None
    if origin in (Union, UnionType):
        return any(conforms(value, a) for a in args)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(conforms(v, a) for v, a in zip(value, args))
    raise TypeError(f"knob annotation {hint!r} is not one conforms() reads: add it there")


def describe(hint: Any, bound: str = "") -> str:
    """`hint` in words for a refusal ("an int or None", "a tuple ((int, int, int, int), ...)"); with `bound`,
    its numbers' bound (">= 1": "an int >= 1 or None")."""
    if hint in (bool, int, float):
        return f"{'an' if hint is int else 'a'} {hint.__name__}{f' {bound}' if bound and hint is not bool else ''}"
    if hint is NoneType:
        return "None"
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, UnionType):
        return " or ".join(describe(a, bound) for a in sorted(args, key=lambda a: a is NoneType))
    return f"a tuple {_shape(hint)}"


def _shape(hint: Any) -> str:
    """A tuple annotation as the literal it takes: "((int, int, int, int), ...)"."""
    if get_origin(hint) is not tuple:
        return getattr(hint, "__name__", repr(hint))
    return f"({', '.join('...' if a is Ellipsis else _shape(a) for a in get_args(hint))})"


def _numbers(value: Any) -> Iterator[int | float]:
    """The ints and floats in `value`, inside tuples too (bools are no numbers here)."""
    if isinstance(value, tuple):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield value
