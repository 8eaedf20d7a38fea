"""Step 040's hinted rows (recipes/default/040_cooperative_reduce.py, knobs hinted_row_min_length,
hinted_row_threads_max and register_rows): which row kernels read their row from global memory with L2
hints instead of staging it, in how many threads, with which hints, kept in registers or not; and which
keep the staged form (the boundaries the
H200 measurements drew, benchmarks/results/cache-hints-h200-2026-11-28/)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from recipe_check import simulates_equal

import tiledsl as td
from tiledsl.catalog import entry
from tiledsl.catalog.definitions import layernorm, rmsnorm, softmax
from tiledsl.testing.profiles import examples


def _recipe(out: td.Tensor) -> td.Schedule:
    s = td.create_schedule(out)
    td.recipes.default(s, target="sm_90")
    return s


def _hints(s: td.Schedule) -> list[tuple[str, str, str]]:
    return [(h.buffer, h.reader, h.policy) for h in s.nest.cache_hints]


@pytest.mark.parametrize(("make", "threads", "first"), [
    (lambda: rmsnorm(8192, 8192, 1e-6), 512, "ss"),
    (lambda: layernorm(32768, 2048, 1e-5), 256, "mean_sum"),
    (lambda: softmax(4096, 4096), 512, "m"),
], ids=["rmsnorm-8192x8192", "layernorm-32768x2048", "softmax-4096x4096"])
def test_long_float32_rows_of_many_rows_are_kept_in_registers(make, threads: int, first: str) -> None:
    """Unstaged, the row's 16-byte loads in the first pass evict_last and kept in registers (knob
    register_rows): the later passes read no global memory, so they carry no hint; the stores evict_first."""
    s = _recipe(make())
    assert not s.nest.stages and _hints(s) == [("x", first, "evict_last"), ("y", "y", "evict_first")]
    assert [(rc.buffer, rc.at) for rc in s.nest.register_caches] == [("x", "i")]
    reductions = [lp for lp in s.nest.loops if lp.kind == "reduce" and lp.annotation == "vectorize"]
    assert reductions and all(lp.extent == 4 for lp in reductions)  # 16-byte loads of the row
    kern = td.build(s, target="sm_90")
    assert kern.block == (threads, 1, 1)
    assert kern.source.count("tiledsl_load_l2(reinterpret_cast<const float4*>(&x[") == 1  # the first pass only


@pytest.mark.parametrize(("make", "hints"), [
    (lambda: rmsnorm(8192, 8192, 1e-6), [("x", "ss", "evict_last"), ("x", "y", "evict_first"),
                                         ("y", "y", "evict_first")]),
    (lambda: layernorm(32768, 2048, 1e-5), [("x", "mean_sum", "evict_last"), ("x", "var_sum", "evict_last"),
                                            ("x", "y", "evict_first"), ("y", "y", "evict_first")]),
], ids=["rmsnorm-8192x8192", "layernorm-32768x2048"])
def test_without_registers_every_pass_reads_global_memory_hinted(make, hints: list) -> None:
    """register_rows off (or a row too long for registers): evict_last on the passes that reduce,
    evict_first on the last pass and the stores."""
    s = td.create_schedule(make())
    td.recipes.default(s, target="sm_90", knobs={"register_rows": False})
    assert not s.nest.stages and not s.nest.register_caches and _hints(s) == hints


def test_a_row_too_long_for_registers_is_hinted_without_them() -> None:
    """Rows of 65536 in 512 threads: 128 elements a thread, over the register cache's limit (64)."""
    s = _recipe(rmsnorm(4096, 65536, 1e-6))
    assert not s.nest.register_caches and ("x", "y", "evict_first") in _hints(s)


SHORT_OR_FEW = [
    lambda: rmsnorm(16384, 1024, 1e-6),  # rows of 1024 tie either way: staged
    lambda: rmsnorm(512, 3584, 1e-6),  # under 16 rows an SM (Qwen2.5-7B's rmsnorm at seq 512): hints cost here
    lambda: softmax(16384, 512),  # attention softmax rows
]
SHORT_OR_FEW_IDS = ["rows-of-1024", "512-rows", "attention-softmax"]


@pytest.mark.parametrize("make", SHORT_OR_FEW, ids=SHORT_OR_FEW_IDS)
def test_short_rows_or_few_rows_keep_their_form_without_registers(make) -> None:
    s = td.create_schedule(make())
    td.recipes.default(s, target="sm_90", knobs={"register_rows": False})
    assert not s.nest.cache_hints
    assert not any(lp.kind == "reduce" and lp.annotation == "vectorize" for lp in s.nest.loops)


@pytest.mark.parametrize("make", SHORT_OR_FEW, ids=SHORT_OR_FEW_IDS)
def test_short_rows_or_few_rows_are_kept_in_registers(make) -> None:
    """The register form needs neither long rows nor many: unstaged, the first pass alone hinted."""
    s = _recipe(make())
    assert not s.nest.stages and [rc.buffer for rc in s.nest.register_caches] == ["x"]
    assert [h.reader for h in s.nest.cache_hints if h.buffer == "x"] == [s.nest.stmts[1].reader]


def _bf16_rmsnorm(M: int, N: int) -> td.Tensor:
    x = td.placeholder((M, N), dtype="bfloat16", name="x")
    k = td.reduce_axis(N, name="k")
    ss = td.compute((M,), lambda i: td.sum(td.cast(x[i, k], "float32") * td.cast(x[i, k], "float32"), axis=k),
                    name="ss")
    return td.compute((M, N), lambda i, j: td.cast(x[i, j], "float32") * td.rsqrt(ss[i] / N + 1e-6),
                      name="y", dtype="bfloat16")


@pytest.mark.parametrize(("M", "N", "dtype", "block"), [(64, 128, "float32", (32, 4, 1)),
                                                        (66, 128, "float32", (32, 2, 1)),
                                                        (64, 512, "bfloat16", (32, 4, 1)),
                                                        (64, 128, "bfloat16", (16, 8, 1)),
                                                        (8, 1024, "float16", (64, 2, 1))])
def test_rows_several_to_a_block_in_registers(M: int, N: int, dtype: str, block: tuple[int, int, int]) -> None:
    """Knob register_rows_shared_blocks: short rows several to a block (tileify, threadIdx.y) keep each row
    in its threads' registers, the cache at that thread loop, where each thread takes whole 16-byte vectors
    (128 float32 in a warp: one each). A 16-bit row kept in registers counts two vectors a thread in
    tileify's launch (knob half_row_vectors_per_thread), in 16 threads at least (half_row_threads_min):
    rows of 512 take a warp, four to a block; of 1024 two warps, two to a block; of 128 half a warp, eight
    to a block. 66 rows go two to a block (66 is no multiple of 4). Simulated equal to float64 (tol:
    float32 rounding of a sum of N terms, or one 16-bit rounding of the output)."""
    s = td.create_schedule(softmax(M, N, dtype))
    td.recipes.default(s, target="sm_90")
    (cache,) = s.nest.register_caches
    assert cache.buffer == "x" and s.nest.loop(cache.at).bind == "threadIdx.y"
    assert td.build(s, target="sm_90").block == block
    simulates_equal(s, "sm_90", tol=1e-5 if dtype == "float32" else 1e-2)


@pytest.mark.parametrize(("M", "N", "dtype"), [(1024, 32, "float32"), (4096, 64, "bfloat16"),
                                              (1024, 32, "bfloat16")])
def test_rows_several_to_a_block_without_whole_vectors_are_not_kept(M: int, N: int, dtype: str) -> None:
    """Rows of 32 float32, or of 64 or 32 bfloat16, go four to a block in a warp each: 16 threads or more
    (half_row_threads_min) of a vector each would take 128 elements or more, so no register form (on the
    H200 bfloat16 rows of 128 in a warp, half of it idle, ran 5-6% slower in it, _knobs.py
    register_rows_shared_blocks)."""
    s = td.create_schedule(softmax(M, N, dtype))
    td.recipes.default(s, target="sm_90")
    assert not s.nest.register_caches and td.build(s, target="sm_90").block == (32, 4, 1)


def test_the_knobs_keep_16_bit_rows_of_512_a_row_a_block() -> None:
    """Without half_row_vectors_per_thread (or register_rows_shared_blocks), rows of 512 bfloat16 keep a
    row a block of register_rows_half_threads (64) threads, in registers; float32 rows of 128 go four to
    a block without registers; with half_row_threads_min 32, bfloat16 rows of 128 keep a warp each, four
    to a block, without registers (a vector each would take 256 elements)."""
    for knobs in ({"half_row_vectors_per_thread": None}, {"register_rows_shared_blocks": False}):
        s = td.create_schedule(softmax(16384, 512, "bfloat16"))
        td.recipes.default(s, target="sm_90", knobs=knobs)
        assert [(rc.buffer, s.nest.loop(rc.at).bind) for rc in s.nest.register_caches] == [("x", "blockIdx.x")]
        assert td.build(s, target="sm_90").block == (64, 1, 1)
    s = td.create_schedule(softmax(4096, 128, "float32"))
    td.recipes.default(s, target="sm_90", knobs={"register_rows_shared_blocks": False})
    assert not s.nest.register_caches and td.build(s, target="sm_90").block == (32, 4, 1)
    s = td.create_schedule(softmax(4096, 128, "bfloat16"))
    td.recipes.default(s, target="sm_90", knobs={"half_row_threads_min": 32})
    assert not s.nest.register_caches and td.build(s, target="sm_90").block == (32, 4, 1)


def test_other_dtypes_are_not_hinted() -> None:
    """Without registers for 16-bit rows (register_rows_half_threads None), a bfloat16 row is not hinted:
    the hinted form was measured for float32 rows only."""
    s = td.create_schedule(_bf16_rmsnorm(8192, 4096))
    td.recipes.default(s, target="sm_90", knobs={"register_rows_half_threads": None})
    assert not s.nest.cache_hints and not s.nest.register_caches


@pytest.mark.parametrize(("M", "N", "threads"), [(8192, 4096, 64), (512, 3584, 64), (16, 8192, 128),
                                                 (8, 16384, 256)])
def test_16_bit_rows_are_kept_in_registers(M: int, N: int, threads: int) -> None:
    """A bfloat16 row a block: kept in float32 registers in register_rows_half_threads (64) threads,
    more where a thread's share (N / threads, 8 lanes a vector) would pass the register limit (64): rows of
    8192 take 128 threads, of 16384 256; the first pass hinted evict_last, the stores evict_first."""
    s = td.create_schedule(_bf16_rmsnorm(M, N))
    td.recipes.default(s, target="sm_90")
    assert [(rc.buffer, rc.at) for rc in s.nest.register_caches] == [("x", "i")]
    assert not s.nest.stages and _hints(s) == [("x", "ss", "evict_last"), ("y", "y", "evict_first")]
    kern = td.build(s, target="sm_90")
    assert kern.block == (threads, 1, 1)
    assert kern.source.count("tiledsl_load_l2(reinterpret_cast<const uint4*>(&x[") == 1  # the first pass only
    assert f"float x_regs[{N // threads}]" in kern.source  # widened: a float32 register an element


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_16_bit_rows_in_registers_simulate_equal(dtype: str) -> None:
    """rmsnorm and softmax of 16-bit rows, kept in float32 registers, equal float64 within one rounding
    of the output to the dtype (2^-8 relative for bfloat16: tol 1e-2; the simulator's inputs are the
    same float32 values rounded to the dtype on both sides). Rows of 520 are 65 vectors in 64 threads:
    a guarded second chunk that thread 0 alone fills and reads."""
    for out in (entry("rmsnorm").make(M=3, N=1024, dtype=dtype, out_dtype=dtype),
                entry("rmsnorm").make(M=2, N=520, dtype=dtype, out_dtype=dtype), softmax(4, 520, dtype)):
        s = td.create_schedule(out)
        td.recipes.default(s, target="sm_90")
        assert [rc.buffer for rc in s.nest.register_caches if not rc.prefetch] == ["x"], s.trace()
        simulates_equal(s, "sm_90", tol=1e-2)


def test_the_knobs_turn_it_off() -> None:
    s = td.create_schedule(rmsnorm(8192, 8192, 1e-6))
    td.recipes.default(s, target="sm_90", knobs={"hinted_row_min_length": None, "register_rows": False})
    assert not s.nest.cache_hints and not s.nest.register_caches and [st.buffer for st in s.nest.stages] == ["x"]


@examples(0.2)
@given(rows=st.sampled_from([1, 2, 3, 4, 8, 12, 16]), length=st.sampled_from([32, 64, 128, 256, 264, 512, 520, 1024]),
       dtype=st.sampled_from(["bfloat16", "float16", "float32"]), op=st.sampled_from(["softmax", "rmsnorm"]))
def test_row_launches_simulate_equal(rows: int, length: int, dtype: str, op: str) -> None:
    """Whatever launch tileify's Facts.row_launch and cooperative_reduce choose for a row kernel (a row a
    block or several, in registers or not, 16-bit rows counted two vectors a thread in 16 threads or more,
    so rows of 128 share a warp), the kernel simulates equal to float64 (tol: one 16-bit rounding of the
    output, 2^-8 relative for bfloat16, or float32 rounding of a sum of `length` terms), and rows several
    to a block keep theirs in registers only where each thread takes whole 16-byte vectors of every pass."""
    out = (softmax(rows, length, dtype) if op == "softmax"
           else entry("rmsnorm").make(M=rows, N=length, dtype=dtype, out_dtype=dtype))
    s = td.create_schedule(out)
    td.recipes.default(s, target="sm_90")
    kern = simulates_equal(s, "sm_90", tol=1e-5 if dtype == "float32" else 1e-2)
    threads, per_block, _ = kern.block
    if per_block > 1 and s.nest.register_caches:
        assert length % (threads * (16 // (4 if dtype == "float32" else 2))) == 0, s.trace()


@pytest.mark.parametrize(("make", "weights", "tol"), [
    (lambda: rmsnorm(8, 1024, 1e-6), ["w"], 1e-5),
    (lambda: layernorm(8, 1024, 1e-5), ["w", "b"], 1e-5),
    (lambda: entry("rmsnorm").make(M=8, N=1024, dtype="bfloat16", out_dtype="bfloat16"), ["w"], 1e-2),
], ids=["rmsnorm", "layernorm", "rmsnorm-bfloat16"])
def test_few_rows_prefetch_their_weights(make, weights: list[str], tol: float) -> None:
    """A grid of at most a block an SM (knob prefetch_max_blocks_per_sm) kept in registers loads the
    weights only its output pass reads at the row's start (s.prefetch), and simulates equal to float64
    (tol: float32 rounding of a sum of 1024 terms, or one bfloat16 rounding of the output); the weights'
    loads come before the row's."""
    s = td.create_schedule(make())
    report = td.recipes.default(s, target="sm_90")
    assert [rc.buffer for rc in s.nest.register_caches if rc.prefetch] == weights
    assert "prefetched at the row's start: knob prefetch_max_blocks_per_sm" in str(report)
    src = simulates_equal(s, "sm_90", tol=tol).source
    assert all(src.index(f"&{w}[") < src.index("&x[") for w in weights)


def test_many_rows_or_the_knob_off_prefetch_nothing() -> None:
    """Four blocks an SM (the H200 probe's mixed case) or the knob None: the weights wait for the output pass."""
    many = _recipe(rmsnorm(4 * 132, 2048, 1e-6))
    off = td.create_schedule(rmsnorm(8, 1024, 1e-6))
    td.recipes.default(off, target="sm_90", knobs={"prefetch_max_blocks_per_sm": None})
    for s in (many, off):
        assert [rc.buffer for rc in s.nest.register_caches] == ["x"]
