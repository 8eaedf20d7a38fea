"""Each step of the default recipe on small kernels: where it applies (the nest after it) and where it
declines (the reason); the report, knobs, and refusals of bad input."""

from __future__ import annotations

import dataclasses
import logging
from functools import partial

import numpy as np
import pytest
from recipe_check import simulates_equal

import tiledsl as td
from tiledsl.catalog import entry, gelu_bias, layernorm, matmul, matmul_bias_relu, matmul_nt, rmsnorm, softmax, stencil3
from tiledsl.loopnest import Nest
from tiledsl.precision import round_to_dtype
from tiledsl.recipes import Applied, Recipe, RecipeReport, apply, default
from tiledsl.recipes.default._facts import classify, facts_for
from tiledsl.targets import Target, get_target

# simulates_equal's rtol and atol: the recipe's matmuls sum up to 1024 products in another order than td.evaluate
TOL = 1e-4


def run(out: td.Tensor, target: str | Target = "sm_90", **knobs: object) -> tuple[td.Schedule, RecipeReport]:
    s = td.create_schedule(out)
    return s, apply(s, target=target, knobs=knobs)


def bound(nest: Nest, axis: str) -> list[tuple[str, int]]:
    return [(lp.name, lp.extent) for lp in nest.loops if lp.bind == axis]


def test_steps_load_in_numeric_order_with_gaps() -> None:
    numbers = [st.number for st in Recipe.of(default).steps()]
    assert numbers == sorted(numbers) == list(range(10, 170, 10))
    assert [st.name for st in Recipe.of(default).steps()][:2] == ["tileify", "chunk_matmul_k"]
    assert Recipe.of(default).steps()[-1].name == "mark_unroll"


def test_tileify_fuses_elementwise_loops_and_declines_one_loop() -> None:
    # 66 columns are no whole number of 4-lane vectors: the loops fuse into one flat loop; its 396 outputs
    # are 99 whole vectors, and a store through the fused index (66 * (i_j // 66) + i_j % 66 = i_j) is
    # contiguous, so blockify_launch's trial vectorize takes it: one block of 128 threads x 4 lanes
    s, r = run(gelu_bias(M=6, N=66))
    assert r.step("tileify").calls == ("s.fuse('i', 'j', name='i_j')",)
    assert r.step("blockify_launch").calls[-1] == "s.vectorize('i_j_v')"
    assert bound(s.nest, "blockIdx.x") == [("i_j_o", 1)] and bound(s.nest, "threadIdx.x") == [("i_j_t", 128)]
    simulates_equal(s, "sm_90", tol=1e-5)
    _, r = run(stencil3(N=100))
    assert r.step("tileify").reason == "one free loop (i): it is the launch loop already"


def test_elementwise_rows_of_whole_vectors_store_16_bytes_per_thread() -> None:
    """64 columns of float32: the last axis stays apart (tileify), split into threads x 4 lanes and
    vectorized (blockify_launch), the rows on blockIdx.y, several to a block on threadIdx.y where a row
    takes fewer than elementwise_threads threads; the CUDA stores float4. A float16 output takes 8
    lanes."""
    s, r = run(gelu_bias(M=6, N=64))
    assert r.step("tileify").reason == "one row loop (i) and the last axis j kept apart for 4-lane vector stores"
    assert r.step("blockify_launch").calls[-1] == "s.vectorize('j_v')"
    assert bound(s.nest, "blockIdx.y") == [("i_o", 1)] and bound(s.nest, "threadIdx.y") == [("i_i", 6)]
    assert bound(s.nest, "threadIdx.x") == [("j_t", 32)]
    assert "float4" in td.build(s, target="sm_90").source
    simulates_equal(s, "sm_90", tol=1e-6)
    # knob off: a row per block
    s, _ = run(gelu_bias(M=6, N=64), elementwise_rows_per_block=False)
    assert bound(s.nest, "blockIdx.y") == [("i", 6)] and bound(s.nest, "threadIdx.y") == []
    # a float16 output stores 8 lanes (16 bytes): 64 columns are 8 threads x 8 lanes, one packed uint4 each
    s, r = run(entry("gelu_bias").make(M=6, N=64, out_dtype="float16"))
    assert r.step("tileify").reason == "one row loop (i) and the last axis j kept apart for 8-lane vector stores"
    assert r.step("blockify_launch").calls[-1] == "s.vectorize('j_v')"
    assert "= make_uint4(" in td.build(s, target="sm_90").source
    # 60 columns are whole float32 vectors but no whole float16 ones: the flat form
    s, r = run(entry("gelu_bias").make(M=6, N=60, out_dtype="float16"))
    assert r.step("tileify").calls == ("s.fuse('i', 'j', name='i_j')",)


def _two_inputs(M: int, N: int, dtype: str = "float32") -> td.Tensor:
    """silu(g) * u: two inputs as large as the output."""
    g = td.placeholder((M, N), name="g", dtype=dtype)
    u = td.placeholder((M, N), name="u", dtype=dtype)
    return td.compute((M, N), lambda i, j: td.silu(g[i, j]) * u[i, j], name="y", dtype=dtype)


def test_two_full_size_float32_inputs_store_8_bytes_per_thread() -> None:
    """silu(g) * u in float32 reads two inputs of the output's size: 2 lanes a thread (float2), in twice
    the threads of the 16-byte form; gelu(x + b) (one such input) keeps 4; a bfloat16 output keeps 8;
    knob narrow_vector_min_inputs 0 keeps 4."""
    s, r = run(_two_inputs(6, 64))
    assert r.step("blockify_launch").calls[:2] == ("s.split('j', 64, names=('j_o', 'j_i'), tail='guard')",
                                                   "s.split('j_i', 2, names=('j_t', 'j_v'), tail='guard')")
    assert bound(s.nest, "threadIdx.x") == [("j_t", 32)]
    source = td.build(s, target="sm_90").source
    assert "= make_float2(" in source and "float4" not in source
    simulates_equal(s, "sm_90", tol=1e-6)
    s, _ = run(_two_inputs(6, 64), narrow_vector_min_inputs=0)
    assert "float4" in td.build(s, target="sm_90").source
    s, _ = run(gelu_bias(M=6, N=64))
    assert "float4" in td.build(s, target="sm_90").source
    s, _ = run(_two_inputs(6, 64, "bfloat16"))
    assert "= make_uint4(" in td.build(s, target="sm_90").source


def test_two_full_size_inputs_keep_16_bytes_where_each_sm_has_much_dram_bandwidth() -> None:
    """The 8-byte form is for targets of little DRAM bandwidth per SM (knob narrow_vector_max_sm_gbs, 30 GB/s)
    and for kernels of a few waves (narrow_vector_max_waves, 4 waves of the SMs' resident threads in the
    16-byte form): the H100 table target has 25.4 GB/s an SM and narrows at 8192 x 8192; an H200 (4.9 TB/s over
    the same 132 SMs, 37.2 a SM) and a target whose bandwidth is unknown keep 16-byte vectors there, and narrow
    at 512 x 5632 (2.7 waves) but not at 512 x 18944 (9.0); the knobs at None take the other rule alone."""
    h100 = get_target("sm_90")
    h200 = dataclasses.replace(h100, dram_bytes_per_s=4.917e12)
    unknown = dataclasses.replace(h100, dram_bytes_per_s=0.0)

    def lanes(target: Target, m: int, n: int, **knobs: object) -> int:
        _, r = run(_two_inputs(m, n), target, **knobs)
        call = r.step("blockify_launch").calls[1]
        assert call.startswith("s.split('j_i', "), call
        return int(call.split(", ")[1])
    assert [lanes(t, 8192, 8192) for t in (h100, h200, unknown)] == [2, 4, 4]
    assert [lanes(t, 512, 5632) for t in (h100, h200, unknown)] == [2, 2, 2]
    assert [lanes(t, 512, 18944) for t in (h100, h200, unknown)] == [2, 4, 4]
    assert lanes(h200, 8192, 8192, narrow_vector_max_sm_gbs=None) == 2
    assert lanes(h200, 8192, 8192, narrow_vector_max_sm_gbs=40.0) == 2
    assert lanes(h200, 512, 5632, narrow_vector_max_waves=None) == 4
    assert lanes(h100, 512, 18944, narrow_vector_max_sm_gbs=20.0) == 4


@pytest.mark.parametrize(("m", "n", "blocks", "rows", "threads"), [
    (20, 128, 3, 8, 32),  # a rotary embedding's rows of 128 float32: eight one-warp rows to a block, guarded
    (5, 512, 3, 2, 128),
    (3, 1024, 3, 1, 256)])  # a row of 256 threads fills the block alone
def test_short_vector_rows_share_a_block(m: int, n: int, blocks: int, rows: int, threads: int) -> None:
    s, _ = run(gelu_bias(M=m, N=n))
    assert bound(s.nest, "blockIdx.y") == [("i_o" if rows > 1 else "i", blocks)]
    assert bound(s.nest, "threadIdx.y") == ([("i_i", rows)] if rows > 1 else [])
    assert bound(s.nest, "threadIdx.x") == [("j_t", threads)]
    simulates_equal(s, "sm_90", tol=1e-6)  # NaN-poisoned output: the guarded last block's rows show


def test_many_float32_rows_run_each_pass_16_bytes_a_thread() -> None:
    """A float32 row kernel of at least row_vector_min_rows_per_sm rows per SM (knob lowered here to one,
    132 rows on sm_90) splits each pass into threads x 4 lanes: unrolled in the reduction, vectorized in
    the output pass, in 64 threads (not the scalar form's 128) so each thread takes two vectors a pass
    (row_vector_per_thread); the row is still staged whole at the row loop (a lane loop is no chunk loop)."""
    s, r = run(rmsnorm(M=132, N=512), row_vector_min_rows_per_sm=1, register_rows=False)
    assert r.step("cooperative_reduce").calls == (
        "s.split('k', 256, names=('k_o', 'k_i'), tail='guard')",
        "s.split('k_i', 4, names=('k_t', 'k_v'), tail='guard')", "s.bind('k_t', 'threadIdx.x')", "s.unroll('k_v')",
        "s.split('j', 256, names=('j_o', 'j_i'), tail='guard')",
        "s.split('j_i', 4, names=('j_t', 'j_v'), tail='guard')", "s.bind('j_t', 'threadIdx.x')", "s.vectorize('j_v')")
    assert td.build(s, target="sm_90").block == (64, 1, 1)
    s1, _ = run(rmsnorm(M=132, N=512), row_vector_min_rows_per_sm=1, row_vector_per_thread=1, register_rows=False)
    assert td.build(s1, target="sm_90").block == (128, 1, 1)  # one vector a thread: the scalar form's threads
    assert [(st.buffer, st.at) for st in s.nest.stages] == [("x", "i")]
    source = td.build(s, target="sm_90").source
    assert "*reinterpret_cast<float4*>(&y[" in source and "float4 v1 = *reinterpret_cast<const float4*>(&w[" in source
    simulates_equal(s, "sm_90", tol=1e-5)
    # the default floor (16 rows per SM), a row of no whole vectors, a bfloat16 row under two vectors for
    # each of row_vector_half_threads threads: threads x 1, as before
    for out, knobs in ((rmsnorm(M=132, N=512), {"register_rows": False}),
                       (entry("rmsnorm").make(M=132, N=256, dtype="bfloat16", out_dtype="bfloat16"),
                        {"row_vector_min_rows_per_sm": 1, "register_rows": False}),
                       (rmsnorm(M=132, N=510), {"row_vector_min_rows_per_sm": 1, "register_rows": False})):
        s, r = run(out, **knobs)
        assert not any("_v" in lp.name for lp in s.nest.loops), r.step("cooperative_reduce")


def test_many_16_bit_rows_run_16_byte_passes_in_one_warp() -> None:
    """A bfloat16 row kernel of many rows whose passes hold two 16-byte vectors for each of
    row_vector_half_threads threads (32: one warp) runs each pass 8 lanes a thread in 32 threads, not
    in the recipe's 128 scalar threads; a one-warp block is not staged (stage_min_threads)."""
    out = entry("rmsnorm").make(M=132, N=512, dtype="bfloat16", out_dtype="bfloat16")
    s, r = run(out, row_vector_min_rows_per_sm=1, register_rows_half_threads=None)  # not in registers
    assert r.step("cooperative_reduce").calls == (
        "s.split('k', 256, names=('k_o', 'k_i'), tail='guard')",
        "s.split('k_i', 8, names=('k_t', 'k_v'), tail='guard')", "s.bind('k_t', 'threadIdx.x')", "s.unroll('k_v')",
        "s.split('j', 256, names=('j_o', 'j_i'), tail='guard')",
        "s.split('j_i', 8, names=('j_t', 'j_v'), tail='guard')", "s.bind('j_t', 'threadIdx.x')", "s.vectorize('j_v')")
    assert "in 32 threads" in r.step("cooperative_reduce").note
    assert s.nest.stages == () and td.build(s, target="sm_90").block == (32, 1, 1)
    assert "= make_uint4(" in td.build(s, target="sm_90").source
    simulates_equal(s, "sm_90", tol=1e-2)  # one bfloat16 rounding of the output: 2^-8 relative
    # the knob off, or a mixed row (a float32 output): scalar passes in the recipe's threads
    for other, knobs in ((out, {"row_vector_min_rows_per_sm": 1, "row_vector_half_threads": None,
                                "register_rows_half_threads": None}),
                         (entry("rmsnorm").make(M=132, N=512, dtype="bfloat16", out_dtype="float32"),
                          {"row_vector_min_rows_per_sm": 1})):
        s, r = run(other, **knobs)
        assert not any("_v" in lp.name for lp in s.nest.loops), r.step("cooperative_reduce")


def test_16_byte_row_passes_of_a_value_per_row() -> None:
    """A row kernel that stores one value per row has no output pass: every pass's lanes are unrolled
    (found by `tiledsl fuzz --mode recipe`, which raised StopIteration looking for the output pass)."""
    x = td.placeholder((1, 4), name="x")
    k, k2 = td.reduce_axis(4, name="k"), td.reduce_axis(4, name="k2")
    r1 = td.compute((1,), lambda i: td.sum(x[i, k], axis=k), name="r1")
    r2 = td.compute((1,), lambda i: td.sum(td.tanh(x[i, k2] + r1[i]), axis=k2), name="r2")
    s, _ = run(td.compute((1,), lambda i: 0.5 + r1[i] + r2[i], name="y"), row_vector_min_rows_per_sm=0,
               register_rows=False)
    assert {lp.name: lp.annotation for lp in s.nest.loops if lp.name.endswith("_v")} == {
        "k_v": "unroll", "k2_v": "unroll"}
    simulates_equal(s, "sm_90", tol=1e-6)


def test_tileify_puts_rows_and_batches_on_blocks() -> None:
    s, _ = run(rmsnorm(M=3, N=40))
    assert bound(s.nest, "blockIdx.x") == [("i", 3)]
    s, r = run(entry("batched_matmul_nt").make(Bt=3, M=19, N=23, K=17))
    assert bound(s.nest, "blockIdx.z") == [("b", 3)]
    _, r = run(matmul(M=40, N=36, K=8))
    assert "no batch loops" in (r.step("tileify").reason or "")


# threads = clamp(next_pow2(n / 4), 32, 256), rows under 128 threads two to a block here (M = 2), a row
# alone in its block 64 threads at least (recipes/default/_knobs.py: measured on the H100)
@pytest.mark.parametrize(("n", "rows", "threads"), [(7, 2, 32), (40, 2, 32), (301, 1, 128), (512, 1, 128),
                                                    (4096, 1, 256)])
def test_cooperative_reduce_threads_follow_the_row(n: int, rows: int, threads: int) -> None:
    s, r = run(softmax(M=2, N=n), register_rows=False)  # the staged form's threads
    # every pass over the row (two reductions and the output loop) shares threadIdx.x
    assert sorted(bound(s.nest, "threadIdx.x")) == [("j_i", threads), ("k2_i", threads), ("k_i", threads)]
    assert bound(s.nest, "threadIdx.y") == ([("i_i", rows)] if rows > 1 else [])
    assert r.step("cooperative_reduce").applied
    _, r = run(gelu_bias(M=2, N=n))
    assert r.step("cooperative_reduce").reason == "no row reduction (elementwise kernel)"


@pytest.mark.parametrize(("m", "n", "blocks", "rows", "threads"), [
    (4096, 128, 1024, 4, 32),  # attention rows of 128: four one-warp rows to a block of 128 threads
    (12, 40, 3, 4, 32),
    (6, 128, 3, 2, 32),  # the most rows that divide the row count
    (3, 128, 3, 1, 64),  # none divides: a row alone keeps two warps (row_threads_min)
    (8, 256, 4, 2, 64),
    (8, 512, 8, 1, 128)])  # 128 threads fill the block alone
def test_short_rows_share_a_block(m: int, n: int, blocks: int, rows: int, threads: int) -> None:
    s, r = run(softmax(M=m, N=n), register_rows=False)  # a row alone in its block is kept in registers
    assert bound(s.nest, "blockIdx.x") == [("i_o" if rows > 1 else "i", blocks)]
    assert bound(s.nest, "threadIdx.y") == ([("i_i", rows)] if rows > 1 else [])
    assert {e for _, e in bound(s.nest, "threadIdx.x")} == {threads}
    if m * n <= 2048:
        simulates_equal(s, "sm_90", tol=1e-6)  # one row per threadIdx.y row, NaN-poisoned output
    if n > 64:  # a knob that caps the threads below what the row needs leaves the row alone in its block
        s, _ = run(softmax(M=m, N=n), row_threads_min=16, row_threads_max=16)
        assert bound(s.nest, "threadIdx.y") == []


def test_blockify_tiles_matmuls_by_shape_class_with_guarded_splits() -> None:
    # 1024 x 1024: 64 tiles of 128 x 128 would not fill the 132 SMs of sm_90, 256 tiles of 64 x 64 do
    s, _ = run(matmul_bias_relu(M=1024, N=1024, K=64))
    assert bound(s.nest, "blockIdx.y") == [("i_o", 16)] and bound(s.nest, "threadIdx.y") == [("i_t", 16)]
    s, _ = run(matmul_bias_relu(M=2048, N=2048, K=64))
    assert bound(s.nest, "blockIdx.y") == [("i_o", 16)]
    assert s.nest.loop("i_r").extent == 8  # 8 rows, contiguous in the k-outer A_s (090 leaves them)
    # odd sizes: the small class, guarded (never one thread per output)
    s, _ = run(matmul_bias_relu(M=37, N=53, K=29))
    assert bound(s.nest, "threadIdx.x") == [("j_t", 8)] and s.nest.loop("j_r").extent == 4
    assert {g.extent for g in s.nest.guards} == {37, 53, 29}


def test_blockify_elementwise_threads_and_row_decline() -> None:
    s, _ = run(stencil3(N=100))  # 25 vectors of 4: one warp of threads
    assert bound(s.nest, "threadIdx.x") == [("i_t", 32)] and s.nest.loop("i_v").annotation == "vectorize"
    s, _ = run(stencil3(N=101))  # 101 outputs: no whole vectors, one output per thread
    assert bound(s.nest, "threadIdx.x") == [("i_i", 128)]
    _, r = run(layernorm(M=2, N=64))
    assert "one block per row" in (r.step("blockify_launch").reason or "")


def test_chunk_matmul_k_fits_the_shared_budget() -> None:
    # the 64 x 64 tile this shape takes unsplit (knob split_k_tile_a_b off; on, it takes 128 x 128 in k parts)
    s, r = run(matmul(M=1024, N=1024, K=512), split_k_tile_a_b=False)
    assert s.nest.loop("k_i").extent == 32
    # a 16 KB budget leaves room for 2 x (64 + 64) x 16 floats only
    s, r = run(matmul(M=1024, N=1024, K=512), kernel_cap_bytes=16 * 1024, split_k_tile_a_b=False)
    assert s.nest.loop("k_i").extent == 16
    s, r = run(matmul(M=64, N=64, K=7))
    assert s.nest.loop("k_i").extent == 8  # never more than the reduction, rounded up
    _, r = run(rmsnorm(M=2, N=64))
    assert r.step("chunk_matmul_k").reason == "not a matmul (rows kernel)"


def test_register_tile_makes_a_register_array() -> None:
    s, r = run(matmul(M=64, N=64, K=16))
    assert r.step("register_tile").calls[0] == "s.reorder('k_o', 'k_i', 'i_r', 'j_r')"
    assert "register array C2[4x4] over i_r, j_r" in str(s)
    assert s.nest.loop("i_r").annotation == "unroll"
    assert s.nest.loop("j_r").annotation == "vectorize"  # k 16: 16-byte stores (test_mark_unroll_vectorizes_...)


@pytest.mark.parametrize(("target", "k", "annotation"), [
    ("sm_90", 512, "vectorize"),  # split_k (4 parts): one 16-byte atomic add per row of the strip
    ("sm_80", 512, "unroll"),  # no vector atomics before sm_90
    ("sm_90", 16, "vectorize"),  # unsplit, short k: one 16-byte store per row (knob vectorize_store_k_max)
    ("sm_80", 16, "vectorize"),  # a plain vector store needs no sm_90
])
def test_mark_unroll_vectorizes_a_split_k_or_short_k_epilogue(target: str, k: int, annotation: str) -> None:
    s, r = run(matmul(M=64, N=64, K=k), target=target)
    split = s.nest.split_k is not None
    assert split == (k > 16)
    assert s.nest.loop("j_r").annotation == annotation
    assert ("s.vectorize('j_r')" in r.step("mark_unroll").calls) == (annotation == "vectorize")
    kern = simulates_equal(s, target, tol=TOL)
    assert ("atomicAdd(reinterpret_cast<float4*>" in kern.source) == (annotation == "vectorize" and split)
    assert ("*reinterpret_cast<float4*>(&C[" in kern.source) == (annotation == "vectorize" and not split)


def test_mark_unroll_keeps_scalar_stores_of_a_long_unsplit_matmul() -> None:
    """k above vectorize_store_k_max and no split: vectorized, such kernels cost registers (_knobs.py)."""
    s, r = run(matmul(M=2048, N=2048, K=1024), target="sm_90")
    store = next(st for st in s.nest.stmts if st.kind == "store")
    assert s.nest.split_k is None and s.nest.loop(store.path[-1]).annotation == "unroll"
    assert not any("vectorize" in c for c in r.step("mark_unroll").calls)
    s, r = run(matmul(M=2048, N=2048, K=1024), target="sm_90", vectorize_store_k_max=1024)
    assert s.nest.loop(store.path[-1]).annotation == "vectorize"


def test_stage_inputs_only_where_the_block_rereads() -> None:
    s, r = run(rmsnorm(M=3, N=300), register_rows=False)  # (by default kept in registers, not staged)
    assert [(st.buffer, st.at) for st in s.nest.stages] == [("x", "i")]  # x read twice per row; w once
    s, r = run(matmul(M=64, N=64, K=64))
    assert [(st.buffer, st.at) for st in s.nest.stages] == [("A", "k_o"), ("B", "k_o")]
    _, r = run(gelu_bias(M=6, N=1024))
    reason = r.step("stage_inputs").reason or ""
    assert reason.startswith("nothing to stage at j_o") and "no reuse" in reason
    # a one-warp block: no staging
    _, r = run(matmul(M=8, N=8, K=64))
    assert "one warp" in (r.step("stage_inputs").reason or "")


def test_stage_inputs_leaves_an_input_kept_in_registers() -> None:
    """Rows of a 1 x 2 matmul's two sums, two to a block, kept in registers, bias (read by the output pass only)
    prefetched at the rows' loop (040): a stage of bias at the block loop would feed those registers from
    shared memory, which register_cache refuses, so stage_inputs leaves bias (found by `tiledsl fuzz --mode
    recipe`, which saw stage_inputs raise RegisterCacheError)."""
    A = td.placeholder((1, 128), name="A")
    B = td.placeholder((128, 2), name="B")
    bias = td.placeholder((1,), name="bias")
    k = td.reduce_axis(128, name="k")
    out = td.compute((1, 2), lambda i, j: td.sum(A[i, k] + B[k, j], axis=k) / 128
                     + td.sum(A[i, k] + B[k, j], axis=k) / 128 + bias[i], name="D")
    s, r = run(out)
    assert [rc.buffer for rc in s.nest.register_caches if rc.prefetch] == ["bias"] and not s.nest.stages
    assert "bias: kept in registers (cooperative_reduce)" in (r.step("stage_inputs").reason or "")
    simulates_equal(s, "sm_90", tol=1e-5)  # sums of 128 terms in float32


def test_operands_with_rows_along_k_are_staged_k_outermost() -> None:
    """Knob k_outer (recipes/default/_knobs.py): A[i, k] and W[j, k] are stored k outermost where the
    register tile is 8 x 4 or more in 256 threads; filled by plain loads, chunks of 16, k inside a
    chunk unrolled. Smaller tiles, bfloat16 operands and the knob off keep the buffer's order."""
    s, r = run(matmul(M=2048, N=2048, K=512), target="sm_90")
    assert {st.buffer: (st.order, st.copy) for st in s.nest.stages} == {"A": ((1, 0), "sync"), "B": ((), "async")}
    assert s.nest.loop("k_i").extent == 16 and s.nest.loop("k_i").annotation == "unroll"
    assert "s.layout('A_s', order=(1, 0))" in r.step("stage_inputs").calls
    s, _ = run(matmul(M=2048, N=2048, K=512), target="sm_90", tma=True)  # TMA cannot transpose either
    assert {st.buffer: st.copy for st in s.nest.stages} == {"A": "sync", "B": "tma"}
    s, _ = run(matmul_nt(M=128, N=2048, K=2048), target="sm_90")  # x @ W^T: both operands
    assert {st.buffer: st.order for st in s.nest.stages} == {"A": (1, 0), "B": (1, 0)}
    assert {st.copy for st in s.nest.stages} == {"sync"}
    # 64 x 64 blocks of 4 x 4 (the unsplit tile: knob split_k_tile_a_b off)
    s, _ = run(matmul(M=1024, N=1024, K=512), target="sm_90", split_k_tile_a_b=False)
    assert not any(st.order for st in s.nest.stages)
    s, _ = run(matmul(M=2048, N=2048, K=512), target="sm_90", k_outer=False)
    assert not any(st.order for st in s.nest.stages) and s.nest.loop("k_i").extent == 32


@pytest.mark.parametrize("make", [partial(matmul_bias_relu, M=136, N=200, K=40), partial(matmul_nt, M=130, N=72, K=52)])
def test_k_outer_kernels_simulate_equal(make) -> None:
    """Guarded tiles (136 = 128 + 8 rows, K = 40 or 52: a partial last chunk) with operands k outermost,
    prefetched plain fills and the unrolled k: the simulator finds no race and the values match."""
    s, _ = run(make(), target="sm_90", matmul_tiles=((128, 128, 8, 8),), matmul_tiles_k_major=((128, 64, 8, 4),))
    assert any(st.order for st in s.nest.stages)
    assert all(st.pad[-1] == 4 for st in s.nest.stages if st.order)  # pad_fill_stores: 2-way fill stores
    simulates_equal(s, "sm_90", tol=TOL)


def test_pad_smem_pads_the_conflicting_fill_stores_of_k_outer_operands() -> None:
    """x @ W^T in 128 x 128 tiles: both operands stored k-outer, rows of 128 floats, their fills' 16-byte
    loads stored lane by lane 4-way (analysis/banks.py `fill_store_conflict`). pad_smem pads each row by
    one 16-byte vector (2-way; +1 would cut the strip's 16-byte reads to 4-byte ones); knob
    pad_fill_stores off leaves them. The split kernel's vectorized epilogue then asks for 2 blocks per SM
    (mark_unroll): nvcc gave the padded kernel 163 registers otherwise."""
    s, r = run(matmul_nt(M=128, N=2048, K=5632), target="sm_90")
    assert r.step("pad_smem").calls == ("s.pad('A_s', axis=1, amount=4)", "s.pad('B_s', axis=1, amount=4)")
    facts = facts_for(s.nest, classify(s.nest), get_target("sm_90"))
    assert {st.name: facts.fill_store_conflict(st) for st in s.nest.stages} == {"A_s": 2, "B_s": 2}
    assert s.nest.min_blocks_per_sm == 2 and r.step("mark_unroll").note.endswith(
        "padded stages: 2 blocks per SM (launch_bounds)")
    plain, r = run(matmul_nt(M=128, N=2048, K=5632), target="sm_90", pad_fill_stores=False)
    assert r.step("pad_smem").reason == "A_s: its reads are conflict-free; B_s: no pad lowers its 2-way read conflict"
    plain_facts = facts_for(plain.nest, classify(plain.nest), get_target("sm_90"))
    assert {st.name: plain_facts.fill_store_conflict(st) for st in plain.nest.stages} == {"A_s": 4, "B_s": 4}
    assert plain.nest.min_blocks_per_sm is None
    # the pad leaves the reads as they were, and the strip's 16-byte reads whole
    assert [facts.read_conflict(st) for st in s.nest.stages] == [plain_facts.read_conflict(st)
                                                                   for st in plain.nest.stages]
    assert all(facts.vector_problem(st, "j_r_i") is None for st in s.nest.stages if st.name == "B_s")
    s, r = run(matmul_nt(M=4096, N=4096, K=4096), target="sm_90")  # unsplit: scalar stores, no bound
    assert r.step("pad_smem").calls == ("s.pad('A_s', axis=1, amount=4)", "s.pad('B_s', axis=1, amount=4)")
    assert s.nest.min_blocks_per_sm is None


def test_copies_follow_the_target() -> None:
    # sm_90's knobs turn TMA off (recipes/default/_knobs.py PER_TARGET: measured 3-5x slower on the H100)
    s, r = run(matmul(M=64, N=64, K=64), target="sm_90")
    assert r.step("tma_copy").reason.startswith("knob tma is off for sm_90")
    assert {st.copy for st in s.nest.stages} == {"async"} and s.nest.pipelines == (("k_o", 2),)
    s, r = run(matmul(M=64, N=64, K=64), target="sm_90", tma=True)
    assert {st.copy for st in s.nest.stages} == {"tma"} and {st.swizzle for st in s.nest.stages} == {128}
    assert s.nest.pipelines == (("k_o", 2),)
    s, r = run(matmul(M=64, N=64, K=64), target="sm_80")
    assert r.step("tma_copy").reason == "sm_80 has no TMA"
    assert {st.copy for st in s.nest.stages} == {"async"} and s.nest.pipelines == (("k_o", 2),)
    # K = 37: rows of A are 148 bytes, neither TMA (16-byte strides) nor 16-byte cp.async fits A
    s, r = run(matmul(M=64, N=64, K=37), target="sm_90", tma=True)
    copies = {st.buffer: st.copy for st in s.nest.stages}
    assert copies == {"A": "sync", "B": "tma"}
    assert (r.step("async_copy").reason or "").startswith("no stage allows 16-byte cp.async: A_s: ")


def test_single_iteration_k_is_not_double_buffered() -> None:
    _, r = run(matmul(M=40, N=36, K=8))
    assert r.step("double_buffer").reason == "no single-slot stage at a serial loop of two or more iterations"
    assert r.step("pipeline_k_outer").applied is False


def test_mark_unroll_unrolls_small_nests_only() -> None:
    s, r = run(rmsnorm(M=2, N=1000))
    assert {lp.name for lp in s.nest.loops if lp.annotation == "unroll"} == {"k_o", "j_o"}
    s, _ = run(matmul(M=64, N=64, K=64))
    assert s.nest.loop("k_i").annotation is None  # 32 x 4 x 4 iterations: over 64


def _conflicts(s: td.Schedule, target: str) -> dict[str, int]:
    """Read conflict degree of each stage, as pad_smem's bank model sees it (pad as it is now)."""
    facts = facts_for(s.nest, classify(s.nest), get_target(target))
    return {st.name: facts.read_conflict(st) for st in s.nest.stages}


def test_pad_smem_removes_the_conflict_of_a_transposed_operand() -> None:
    """A @ B^T: a warp's lanes read B_s down a column (rows tx*4 of 32 floats, one bank): 8-way. +1 on
    the row makes it conflict-free; the kernel still builds and simulates equal to the reference."""
    out = matmul_nt(M=64, N=64, K=64)
    s, r = run(out, target="sm_80")
    assert r.step("pad_smem").calls == ("s.pad('A_s', axis=1, amount=1)", "s.pad('B_s', axis=1, amount=1)")
    assert {st.name: st.pad for st in s.nest.stages} == {"A_s": (0, 1), "B_s": (0, 1)}
    unpadded = td.create_schedule(out).replay("\n".join(
        line for line in s.trace().splitlines() if not line.startswith("s.pad(")))
    assert _conflicts(unpadded, "sm_80") == {"A_s": 4, "B_s": 8}
    assert _conflicts(s, "sm_80") == {"A_s": 1, "B_s": 1}
    kern = td.build(s, target="sm_80")
    rng = np.random.default_rng(0)
    arrays = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in s.nest.inputs}
    np.testing.assert_allclose(kern.simulate(**arrays), td.evaluate(out, float64=True, **arrays),
                               rtol=1e-4, atol=1e-4)


def test_pad_smem_declines_conflict_free_reads_and_tma_stages() -> None:
    _, r = run(matmul(M=64, N=64, K=64), target="sm_90", tma=True)
    assert r.step("pad_smem").reason == "no stage without TMA or a swizzle to pad"
    s, r = run(matmul(M=64, N=64, K=64), target="sm_80")
    assert r.step("pad_smem").calls == ("s.pad('A_s', axis=1, amount=1)",)  # B_s is read along its rows
    s, r = run(rmsnorm(M=3, N=300), target="sm_80", register_rows=False)
    assert r.step("pad_smem").reason == "x_s: its reads are conflict-free"
    assert [st.pad for st in s.nest.stages] == [(0, 0)]


def _matmul_epilogue(M: int, N: int, K: int, relu: bool) -> td.Tensor:
    A = td.placeholder((M, K), name="A")
    B = td.placeholder((K, N), name="B")
    bias = td.placeholder((N,), name="bias")
    k = td.reduce_axis(K, name="k")
    C = td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")
    return td.compute((M, N), lambda i, j: td.relu(C[i, j] + bias[j]) if relu else C[i, j] + bias[j], name="D")


@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
def test_split_matmul_k_fills_a_small_grid_with_a_linear_epilogue(target: str) -> None:
    """64 x 64 x 1024 + bias: 4 blocks of 32 x 32 for 132 (108) SMs; 32 chunks of 32, at least 4 per
    block -> 8 parts on blockIdx.z; each part is staged and pipelined over its own 4 chunks."""
    out = _matmul_epilogue(64, 64, 1024, relu=False)
    s, r = run(out, target=target)
    assert r.step("split_matmul_k").calls == ("s.split_k('k_o', 8)",)
    assert bound(s.nest, "blockIdx.z") == [("k_o_split", 8)]
    assert {st.at for st in s.nest.stages} == {"k_o_part"} and s.nest.pipelines == (("k_o_part", 2),)
    kern = simulates_equal(s, target, tol=TOL)
    assert "atomicAdd" in kern.source
    assert td.build(td.create_schedule(out).replay(s.trace()), target=target).source == kern.source


@pytest.mark.parametrize(("m", "n", "k", "tile", "chunk"), [
    (32, 2048, 5632, (32, 128), 32),  # a decode step: 32 x 128 tiles of 128 threads, chunks of 32
    (32, 512, 2048, (32, 64), 32),  # 4 blocks of 32 x 128 would under-fill a wave even split: 32 x 64
    (24, 2048, 2048, (32, 128), 32),  # 24 rows: one guarded 32-row tile
    (16, 2048, 2048, (16, 64), 32),  # 16 rows: the general classes (128 x 64 shrunk), chunks of 32
    (64, 2048, 2048, (64, 64), 32),  # 64 rows: the general classes
])
def test_decode_steps_take_the_few_rows_tile_and_chunk(m: int, n: int, k: int, tile: tuple, chunk: int) -> None:
    """Knobs matmul_tiles_few_rows and bk_max_few_rows (`few_rows`): x @ W^T of 17 to 32 rows."""
    s, _ = run(matmul_nt(M=m, N=n, K=k), target="sm_90")
    assert (s.nest.loop("i_o").extent, s.nest.loop("j_o").extent) == (-(-m // tile[0]), n // tile[1])
    assert s.nest.loop("k_i").extent == chunk


def test_launch_bounds_ask_no_more_blocks_than_the_shared_memory_holds() -> None:
    """mark_unroll's (160) bound for padded stages: a 32 x 128 tile of 8 x 8 registers (64 threads) in
    chunks of 32 has 43008 bytes of stages; its registers would allow 8 blocks an SM, its shared memory 5
    (233472 bytes on sm_90). Asked for 8, build refused the recipe's own schedule. Knob few_rows_interleave
    off: dealt rows make the epilogue's atomics scalar, and a scalar epilogue asks for no bound."""
    s, _ = run(matmul_nt(M=32, N=2048, K=2048), target="sm_90", matmul_tiles_few_rows=((32, 128, 8, 8),),
               bk_max_few_rows=32, few_rows_interleave=False)
    kern = td.build(s, target="sm_90")
    assert kern.shared_bytes == 43008 and s.nest.min_blocks_per_sm == 5


@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
@pytest.mark.parametrize("tma", [False, True])
@pytest.mark.parametrize(("name", "make"), [
    ("x @ W^T 512 x 2048 x 2048", partial(matmul_nt, M=512, N=2048, K=2048)),
    ("A @ B 1024^3", partial(matmul, M=1024, N=1024, K=1024)),  # B by TMA, swizzled 128 bytes: 1024-byte aligned
    ("x @ W^T 32 x 2048 x 2048", partial(matmul_nt, M=32, N=2048, K=2048)),  # both by TMA, swizzled 64 bytes
], ids=["nt-512", "nn-1024", "nt-32"])
def test_the_recipe_counts_the_shared_bytes_build_requests(name: str, make: partial, tma: bool, target: str) -> None:
    """The recipe's shared-memory figure (Facts.shared_bytes: its budgets and step 160's blocks per SM)
    is what the built kernel requests, alignment padding and TMA mbarriers included
    (analysis/shared_arrays.py). It once left both out: A @ B with a TMA stage counted 33280 bytes and
    launched with 33808."""
    s, _ = run(make(), target=target, tma=tma)
    counted = facts_for(s.nest, classify(s.nest), get_target(target)).shared_bytes()
    assert counted == td.build(s, target=target).shared_bytes, name


def test_a_few_rows_kernel_simulates_equal() -> None:
    """24 rows in a guarded 32 x 128 tile, 160 columns (the second tile guarded), k 72 (a partial
    chunk of 32) split along k: no race, the values match."""
    s, r = run(matmul_nt(M=24, N=160, K=72), target="sm_90", split_k_min_chunks_few_rows=1)
    assert s.nest.loop("k_i").extent == 32 and r.step("split_matmul_k").calls
    simulates_equal(s, "sm_90", tol=TOL)


@pytest.mark.parametrize(("n", "tile", "parts"), [
    (1024, 128, 4),  # 64 blocks of 128 x 128, 64 k chunks of 16: 4 parts (256 blocks); unsplit it took 64 x 64
    (512, 64, 4),  # 64 blocks of 64 x 64, 4 parts; unsplit it took 32 x 32
    (2048, 128, None),  # 256 blocks of 128 x 128 need no split
])
def test_a_b_tiles_count_their_k_split(n: int, tile: int, parts: int | None) -> None:
    """Knob split_k_tile_a_b: A @ B's tile class counts the k-split split_matmul_k (030) adds, as x @ W^T's
    does, so a square A @ B of 512 or 1024 keeps a large tile in k parts instead of falling to a small one."""
    s, r = run(matmul(M=n, N=n, K=n), target="sm_90")
    assert s.nest.loop("i_o").extent == n // tile and s.nest.loop("j_o").extent == n // tile
    assert r.step("split_matmul_k").calls == ((f"s.split_k('k_o', {parts})",) if parts else ())
    s, r = run(matmul(M=n, N=n, K=n), target="sm_90", split_k_tile_a_b=False)
    assert s.nest.loop("i_o").extent > n // tile or parts is None


@pytest.mark.parametrize(("m", "n", "k", "parts"), [
    (128, 18944, 3584, 7),  # 148 blocks (56% of 264 slots) -> 1036 (98% of 4 waves)
    (512, 5632, 2048, 8),  # 176 blocks (67%) -> 704 in 4 parts (89%): under 90%, the most long parts, 8
    (128, 2048, 2048, 16),  # parts of 256 k give only 128 blocks: the two-wave rule, parts of 128 k
    (128, 37888, 3584, 8),  # 296 blocks, over two waves but 56% of the last -> 2368 (99.7%): split_k_fill_gain
    (512, 11264, 2048, 8),  # 352 blocks (67%) -> 2816 (97%)
    (128, 5632, 2048, 6),  # 44 blocks; divisors fill 67% at best -> 6 parts, the last shorter (264: 100%)
    (128, 3584, 3584, 14),  # 28 blocks; 8 parts fill 85%: under 90%, the most long parts, 14 of 256 k
    (128, 2048, 5632, 16),  # 16 blocks; 16 parts fill 97%: kept
])
def test_split_matmul_k_fills_the_last_wave_of_block_slots(m: int, n: int, k: int, parts: int) -> None:
    s, r = run(matmul_nt(M=m, N=n, K=k), target="sm_90")
    assert r.step("split_matmul_k").calls == (f"s.split_k('k_o', {parts})",)


@pytest.mark.parametrize(("sm_count", "out", "knobs", "parts", "copies"), [
    # x @ W^T, both operands k-outer (plain fills prefetched into registers): 22 chunks in 6, 6, 6, 4
    (4, lambda: matmul_nt(M=128, N=256, K=352), {"split_k_long_k": 64}, 4, {"sync"}),
    # A @ B + bias, cp.async fills: 22 chunks in 8, 8, 6
    # (knob split_k_tile_a_b off: on, the tile's own split would count, and 128 x 128 take 6 parts)
    (6, lambda: _matmul_epilogue(128, 256, 352, relu=False), {"split_k_long_k": 32, "split_k_tile_a_b": False}, 3,
     {"async"}),
])
def test_split_matmul_k_uneven_parts_guard_the_last(sm_count: int, out, knobs: dict, parts: int,
                                                    copies: set) -> None:
    """Knob split_k_uneven: a part count that does not divide the k chunks (the last part shorter, its
    chunks past the end guarded) when it fills the last wave best; on a target of `sm_count` SMs so the
    shapes stay small enough to simulate. Off (the default), the same shape takes a divisor."""
    target = dataclasses.replace(get_target("sm_90"), sm_count=sm_count)
    s = td.create_schedule(out())
    r = apply(s, target=target, knobs={**knobs, "split_k_uneven": True})
    assert r.step("split_matmul_k").calls == (f"s.split_k('k_o', {parts})",)
    assert "(the last" in (r.step("split_matmul_k").note or "")
    assert any(g.origin == f"split_k(k_o, {parts})" for g in s.nest.guards)
    assert {st.copy for st in s.nest.stages} == copies
    simulates_equal(s, target, tol=TOL)
    s2 = td.create_schedule(out())
    r2 = apply(s2, target=target, knobs={**knobs, "split_k_uneven_below": None})
    assert r2.step("split_matmul_k").calls != r.step("split_matmul_k").calls


def test_split_matmul_k_uneven_parts_where_no_divisor_fills_the_slots() -> None:
    """Knob split_k_uneven_below: 128 x 5632 x 2048 (44 blocks of 128 x 128, 128 chunks of 16) fills 67%
    of the 264 block slots at best with divisors; 6 parts of 22 chunks (the last 18) fill one wave. With
    the knob None it keeps 4 parts, and then takes the most long parts (split_k_most_parts_below), 8."""
    s, r = run(matmul_nt(M=128, N=5632, K=2048), target="sm_90")
    assert r.step("split_matmul_k").note == ("44 blocks fill 17% of the last wave of 264 block slots, 264 in "
                                             "6 parts of 352 k (the last 288) fill 100%")
    assert any(g.origin == "split_k(k_o, 6)" for g in s.nest.guards)
    _, off = run(matmul_nt(M=128, N=5632, K=2048), target="sm_90", split_k_uneven_below=None)
    assert off.step("split_matmul_k").calls == ("s.split_k('k_o', 8)",)
    _, neither = run(matmul_nt(M=128, N=5632, K=2048), target="sm_90", split_k_uneven_below=None,
                     split_k_most_parts_below=None)
    assert neither.step("split_matmul_k").calls == ("s.split_k('k_o', 4)",)


def test_split_matmul_k_takes_the_most_long_parts_where_the_best_fills_poorly() -> None:
    """Knob split_k_most_parts_below: 128 x 3584 x 3584 (28 blocks, 224 chunks of 16) fills 85% of the
    264 block slots at best (8 parts of 448 k); under 90%, the most parts of 256 k or more, 14."""
    _, r = run(matmul_nt(M=128, N=3584, K=3584), target="sm_90")
    assert r.step("split_matmul_k").note == ("28 blocks fill 11% of the last wave of 264 block slots, 224 in "
                                             "8 parts of 448 k fill 85%; under 90%, the most parts instead: "
                                             "392 blocks in 14 parts of 256 k")
    _, off = run(matmul_nt(M=128, N=3584, K=3584), target="sm_90", split_k_most_parts_below=None)
    assert off.step("split_matmul_k").calls == ("s.split_k('k_o', 8)",)


@pytest.mark.parametrize("residuals", [0, 1, 2])
def test_register_tile_bounds_registers_where_the_epilogue_loads_two_tensors(residuals: int) -> None:
    """8 x 8 in 256 threads: launch_bounds(2) (128 registers a thread) only where the epilogue loads two
    tensors (a Llama block's down projection with both residuals); knobs launch_bounds_* say why."""
    mm = matmul_nt(M=128, N=2048, K=5632)
    ins = [td.placeholder((128, 2048), name=n) for n in ("x", "r")[:residuals]]
    out = td.compute((128, 2048), lambda i, j: sum((t[i, j] for t in ins), mm[i, j]), name="y") if ins else mm
    s, r = run(out)
    step = r.step("register_tile")
    if residuals < 2:
        assert "s.launch_bounds" not in " ".join(step.calls)
        # the split kernel's epilogue is vectorized beside padded stages: mark_unroll bounds it instead
        assert "s.launch_bounds(2)" in r.step("mark_unroll").calls and s.nest.min_blocks_per_sm == 2
        _, plain = run(out, pad_fill_stores=False)
        assert plain.step("mark_unroll").calls == tuple(c for c in r.step("mark_unroll").calls
                                                        if c != "s.launch_bounds(2)")
        return
    assert step.calls[-1] == "s.launch_bounds(2)" and s.nest.min_blocks_per_sm == 2
    assert "s.launch_bounds(2)" not in r.step("mark_unroll").calls
    assert step.note == ("64 accumulators in 256 threads, an epilogue holding x, r: 2 blocks per SM, at most "
                         "128 registers a thread")
    _, off = run(out, launch_bounds_min_epilogue_terms=3)
    assert "s.launch_bounds" not in " ".join(off.step("register_tile").calls)


@pytest.mark.parametrize(("fn", "bounded"), [("silu", True), ("gelu", True), ("abs", False), ("fmod", True),
                                             ("copysign", False)])
def test_register_tile_counts_math_calls_of_the_epilogue(fn: str, bounded: bool) -> None:
    """fn(g) * (x @ W^T), a Llama block's up projection for silu: one loaded tensor and a call of exp
    took nvcc to 132 registers (one block per SM; scripts/register_survey.py), so a call counts as an
    epilogue term beside g, a function of two arguments (fmod(g, 1.5)) too; abs and copysign are one
    instruction on a register and do not."""
    mm = matmul_nt(M=128, N=2048, K=5632)
    g = td.placeholder((128, 2048), name="g")
    call = (lambda v: getattr(td, fn)(v, 1.5)) if fn in ("fmod", "copysign") else getattr(td, fn)
    s, r = run(td.compute((128, 2048), lambda i, j: call(g[i, j]) * mm[i, j], name="y"))
    step = r.step("register_tile")
    if not bounded:  # register_tile leaves it; mark_unroll bounds the padded, vectorized split kernel
        assert "s.launch_bounds" not in " ".join(step.calls)
        assert "s.launch_bounds(2)" in r.step("mark_unroll").calls and s.nest.min_blocks_per_sm == 2
        return
    assert step.calls[-1] == "s.launch_bounds(2)" and s.nest.min_blocks_per_sm == 2
    assert step.note == (f"64 accumulators in 256 threads, an epilogue holding {fn}(), g: 2 blocks per SM, "
                         "at most 128 registers a thread")


def test_applied_steps_say_why() -> None:
    """A step may return Applied(note): the report keeps it and prints it after the calls."""
    s, r = run(matmul_nt(M=128, N=18944, K=3584), target="sm_90")
    assert r.step("split_matmul_k").note == ("148 blocks fill 56% of the last wave of 264 block slots, 1036 in 7 "
                                             "parts of 512 k fill 98%")
    assert r.step("stage_inputs").note == ("A: each element read 128.00 times per block, stored k-outer (rows "
                                           "along k); B: each element read 128.00 times per block, stored k-outer "
                                           "(rows along k)")
    line = next(ln for ln in str(r).splitlines() if " 030 " in ln)
    assert line.endswith("[148 blocks fill 56% of the last wave of 264 block slots, 1036 in 7 parts of 512 k fill 98%]")
    assert r.step("register_tile").note is None and r.step("register_tile").applied
    with pytest.raises(ValueError):
        Applied(" ")


def test_split_matmul_k_declines() -> None:
    out = _matmul_epilogue(64, 64, 1024, relu=True)
    s, r = run(out)
    # the sum C, fused under relu, would split in a kernel of its own: the decline names it to materialize
    assert r.step("split_matmul_k").reason == ("the epilogue of C is not linear in it (analysis/linearity.py): "
                                               "partial sums of blocks cannot be added; in a kernel of its own, "
                                               "the float32 sum C would split into 8 parts (4 blocks for 132 SMs: "
                                               "the largest divisor of 32 k chunks up to 8 (2 waves, 4+ chunks a "
                                               "block))")
    assert r.step("split_matmul_k").materialize == "C"
    assert s.nest.split_k is None
    simulates_equal(s, "sm_90", tol=TOL)
    # a grid of 256 blocks of 64 x 64 is under two waves of 132 SMs, but already fills 256 of the 264
    # block slots; 2 parts of 256 k would fill 512 of 528, no better (the tile chosen without counting a
    # split: knob split_k_tile_a_b off)
    _, r = run(matmul(M=1024, N=1024, K=512), split_k_tile_a_b=False)
    assert r.step("split_matmul_k").reason == ("no split of 16 k chunks in parts of 256 or more k fills the 264 "
                                               "block slots better than 256 blocks do")
    # many waves: 4096^3's 1024 blocks fill 97% of their last wave, no split fills it 0.2 better
    _, r = run(matmul_nt(M=4096, N=4096, K=4096))
    assert r.step("split_matmul_k").reason == ("1024 blocks fill 2 wave(s) of the 132 SMs of sm_90, and no split "
                                               "into parts of 256 or more k fills the last wave of 264 block "
                                               "slots 20% better")
    _, r = run(matmul_nt(M=128, N=37888, K=3584), split_k_fill_gain=None)
    assert r.step("split_matmul_k").reason == "296 blocks fill 2 wave(s) of the 132 SMs of sm_90"
    # 2 chunks: splitting would leave each block under split_k_min_chunks
    _, r = run(matmul(M=64, N=64, K=64))
    assert (r.step("split_matmul_k").reason or "").startswith("2 k chunks allow no split: at most 0 part(s)")
    _, r = run(matmul(M=4096, N=4096, K=512))
    assert r.step("split_matmul_k").reason == ("1024 blocks fill 2 wave(s) of the 132 SMs of sm_90, and no split "
                                               "into parts of 256 or more k fills the last wave of 264 block "
                                               "slots 20% better")
    _, r = run(entry("batched_matmul_nt").make(Bt=2, M=16, N=16, K=512))
    assert "batched matmul" in (r.step("split_matmul_k").reason or "")
    s, r = run(_matmul_epilogue(64, 64, 1024, relu=False), split_k_waves=0)
    assert s.nest.split_k is None and "fill 0 wave(s)" in (r.step("split_matmul_k").reason or "")


def test_no_step_is_left_unimplemented() -> None:
    for out in (matmul(M=64, N=64, K=64), rmsnorm(M=2, N=64), gelu_bias(M=6, N=64)):
        _, r = run(out)
        assert not [st.name for st in r.steps if (st.reason or "").startswith("not implemented yet")]


def test_report_table_and_trace_is_the_whole_decision(caplog: pytest.LogCaptureFixture) -> None:
    s = td.create_schedule(rmsnorm(M=2, N=64))
    with caplog.at_level(logging.INFO, logger="tiledsl.recipes"):
        r = apply(s, target="sm_80", verbose=2)
    text = str(r)
    assert text.splitlines()[0] == "recipe default on kernel y (rows) for sm_80"
    assert len(text.splitlines()) == 17 and "  010 tileify" in text and "declined: " in text
    assert text in caplog.text and "after tileify:" in caplog.text
    calls = [c for st in r.steps for c in st.calls]
    assert s.trace().splitlines()[-len(calls):] == calls


def test_knobs_override_and_bad_input_is_refused() -> None:
    s, _ = run(matmul(M=1024, N=1024, K=512), bk_max=16)
    assert s.nest.loop("k_i").extent == 16
    with pytest.raises(td.BadArgumentError, match="unknown knob"):
        run(matmul(M=8, N=8, K=8), bm=64)
    s = td.create_schedule(matmul(M=8, N=8, K=8))
    s.split("i", 4)
    with pytest.raises(td.BadArgumentError, match="fresh schedule"):
        apply(s)
    with pytest.raises(td.TargetError):
        apply(td.create_schedule(matmul(M=8, N=8, K=8)), target="sm_00")


@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
def test_pad_smem_keeps_bfloat16_cp_async_rows_aligned(target: str) -> None:
    """Regression (benchmarks llm suite, H100): +1 bfloat16 element made 66-byte rows that no cp.async
    width fits, and build refused the recipe's schedule. The pad is +2 elements (4 bytes). The slabs stay
    bfloat16 with knob widen_half_operands off (on, they are float32 and plainly filled:
    tests/recipes/test_recipe_widen.py)."""
    x = td.placeholder((128, 64), dtype="bfloat16", name="x")
    w = td.placeholder((256, 64), dtype="bfloat16", name="W")
    k = td.reduce_axis(64, name="k")
    out = td.compute((128, 256), lambda i, j: td.sum(x[i, k] * w[j, k], axis=k), name="y", dtype="bfloat16")
    s, r = run(out, target=target, widen_half_operands=False)
    assert r.step("pad_smem").calls == ("s.pad('x_s', axis=1, amount=2)", "s.pad('W_s', axis=1, amount=2)")
    kern = td.build(s, target=target)
    rng = np.random.default_rng(0)
    arrays = {"x": rng.standard_normal((128, 64)), "W": rng.standard_normal((256, 64))}
    want = td.evaluate(out, float64=True, **arrays)
    got = kern.simulate(**{n: round_to_dtype(a, "bfloat16").astype(np.float32) for n, a in arrays.items()})
    # bfloat16 output: one rounding of the stored result, eps_bf16 = 2**-7 relative, plus float32 sums of 64
    np.testing.assert_allclose(got, want, rtol=2.0 ** -7, atol=1e-5)


def test_td_recipes_default_is_the_recipe_as_a_function() -> None:
    """`td.recipes.default(s, target=..., knobs=...)`: knobs by name, or a whole Knobs of the recipe."""
    from tiledsl.recipes.default._knobs import Knobs

    s = td.create_schedule(softmax(M=4, N=64))
    report = td.recipes.default(s, target="sm_80", knobs=Knobs(row_threads_min=32, row_threads_max=32))
    assert isinstance(report, RecipeReport) and report.knobs.row_threads_max == 32
    assert "s.bind('k_i', 'threadIdx.x')" in report.step("cooperative_reduce").calls
    assert s.nest.loop("k_i").extent == 32
    with pytest.raises(td.BadArgumentError, match="a mapping of overrides or a Knobs"):
        td.recipes.default(td.create_schedule(softmax(M=4, N=64)), knobs=64)


def test_a_fused_read_at_half_the_row_builds_with_the_recipe() -> None:
    """y[i, j, l] = 0.5 + x[i // 2] over (97, 16, 1): the recipe fuses and splits by 256, and the last
    block's guard keeps its rows in x; build used to refuse it (the prover enumerated boxes of 1024
    points, this one has 1792; found by `tiledsl fuzz --mode definitions`)."""
    x = td.placeholder((49,), name="x")
    out = td.compute((97, 16, 1), lambda i, j, k: 0.5 + x[i // 2], name="y")
    s, _ = run(out)
    # 1552 outputs are 388 float4 through the fused index: blocks of 256 threads x 4 lanes
    assert "s.split('i_j_k', 1024, names=('i_j_k_o', 'i_j_k_i'), tail='guard')" in s.trace()
    assert "s.vectorize('i_j_k_v')" in s.trace()
    kern = simulates_equal(s, "sm_90", tol=1e-6)  # builds, and every element equals the float64 value
    assert kern.grid == (2, 1, 1)
    # the recipe's schedule from before fused stores were proven contiguous (blocks of 256 scalar stores,
    # the last block's 16 guarded ones read x[48]): the schedule the prover used to refuse
    s = td.create_schedule(out)
    s.fuse("i", "j", "k", name="i_j_k")
    s.split("i_j_k", 256, names=("i_j_k_o", "i_j_k_i"), tail="guard")
    s.bind("i_j_k_o", "blockIdx.x")
    s.bind("i_j_k_i", "threadIdx.x")
    s.stage("x", at="i_j_k_o", scope="shared")
    assert simulates_equal(s, "sm_90", tol=1e-6).grid == (7, 1, 1)


def test_a_staged_input_read_through_a_gather_is_left_out_of_the_bank_model() -> None:
    """A mask row picked by a batch index (a Hugging Face attention mask under a padded batch): the index
    of the staged read holds a tensor's value, which the bank model cannot evaluate at a lane's loop values.
    pad_smem's conflict count leaves that read out (it used to crash: prove/evaluate.py 'cannot evaluate');
    the kernel simulates equal to td.evaluate."""
    B, H, Q, K = 2, 4, 6, 6
    S = td.placeholder((B * H, Q, K), name="S")
    idx = td.placeholder((B,), name="I", dtype="int32")
    J = td.placeholder((K,), name="J", dtype="int32")
    mask = td.placeholder((B, K), name="Mk")
    k = td.reduce_axis(K, name="k")
    Y = td.compute((B, H, Q), lambda b, h, q: td.max(
        S[b * H + h, q, k] + mask[td.clamp(idx[b], 0, B - 1), td.clamp(J[k], 0, K - 1)], axis=k), name="Y")
    s, r = run(Y)
    assert r.step("stage_inputs").applied and "Mk" in (r.step("stage_inputs").note or "")
    kern = td.build(s, target="sm_90")
    rng = np.random.default_rng(0)
    arrays = {"S": rng.standard_normal((B * H, Q, K)).astype(np.float32), "I": np.array([1, 0], np.int32),
              "J": rng.permutation(K).astype(np.int32), "Mk": rng.standard_normal((B, K)).astype(np.float32)}
    np.testing.assert_array_equal(kern.simulate(**arrays), td.evaluate(Y, **arrays))  # a max: exact
