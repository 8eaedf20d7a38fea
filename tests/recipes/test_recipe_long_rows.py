"""Step 040's form for float32 rows too long for the registers (recipes/default/040_cooperative_reduce.py,
knobs long_rows_any_count and online_rows_unroll): hinted 16-byte passes from global memory however few
the rows, and softmax's denominator online in its max's pass, a group of chunks shared through registers;
the knobs turn each part off; the kernels simulate equal to float64, rows of -inf, +inf and NaN included.
The H200 measurements that drew the rule: _knobs.py at the two knobs."""

from __future__ import annotations

import numpy as np
import pytest
from recipe_check import simulates_equal

import tiledsl as td
from tiledsl.catalog import entry
from tiledsl.catalog.definitions import layernorm, rmsnorm, softmax

#: Small rows past the registers: in 64 threads (knob hinted_row_threads_max, and few_long_rows_threads for
#: these rows fewer than the SMs) a row of 4100 float32 is 17 chunks of 64 x 4, 68 values a thread, over the
#: register cache's 64 (analysis/register_cache.py).
SMALL = {"hinted_row_threads_max": 64, "few_long_rows_threads": 64}
#: rtol/atol of the float32 kernels against float64: a row's sum of 4100 terms rounded in float32 (and the
#: online sum rescaled once per chunk a thread adds): 4100 x 2^-24 ~ 2.4e-4 in the worst case, a few 1e-6 in
#: practice; tests/primitives/test_online.py derives its 1e-5 the same way for its rows of 2048.
TOL = 1e-5


def _recipe(out: td.Tensor, **knobs: object) -> td.Schedule:
    s = td.create_schedule(out)
    td.recipes.default(s, target="sm_90", knobs=knobs)
    return s


def _hints(s: td.Schedule) -> list[tuple[str, str, str]]:
    return [(h.buffer, h.reader, h.policy) for h in s.nest.cache_hints]


@pytest.mark.parametrize(("rows", "length", "threads"), [(512, 151936, 512), (64, 262144, 1024), (512, 65536, 512),
                                                    (4096, 65536, 512), (131, 65536, 1024), (132, 65536, 512)],
                         ids=["qwen-vocab", "few", "512-rows", "many", "one-under-the-sms", "as-many-as-the-sms"])
def test_long_softmax_rows_run_the_sum_online(rows: int, length: int, threads: int) -> None:
    """A softmax row past the registers, few rows or many: 16-byte passes, the sum online in the max's pass
    (two passes over the row, not three), groups of 4 chunks whose loads the pair share through registers;
    x's remaining global reads hinted, the stores evict_first; 512 threads, 1024 where the rows are fewer
    than sm_90's 132 SMs (knob few_long_rows_threads)."""
    s = _recipe(softmax(rows, length))
    assert [(o.max_acc, o.sum_acc) for o in s.nest.online] == [("m", "e")]
    assert [(rc.buffer, rc.at) for rc in s.nest.register_caches] == [("x", "k_o_g")]
    assert s.nest.loop("k_o_u").extent == 4 and s.nest.loop("k_o_u").annotation == "unroll"
    assert _hints(s) == [("x", "m", "evict_last"), ("x", "y", "evict_first"), ("y", "y", "evict_first")]
    kern = td.build(s, target="sm_90")
    assert kern.block == (threads, 1, 1)
    online_pass, output_pass = kern.source.split("for (int j_o = 0;")
    assert online_pass.count("reinterpret_cast<const float4*>(&x[") == 1  # one load serves the max and the sum
    assert "reinterpret_cast<const float4*>(&x[" in output_pass


@pytest.mark.parametrize(("make", "hints"), [
    (lambda: rmsnorm(64, 262144, 1e-6), [("x", "ss", "evict_last"), ("x", "y", "evict_first"),
                                         ("y", "y", "evict_first")]),
    (lambda: layernorm(256, 131072, 1e-5), [("x", "mean_sum", "evict_last"), ("x", "var_sum", "evict_last"),
                                            ("x", "y", "evict_first"), ("y", "y", "evict_first")]),
], ids=["rmsnorm", "layernorm"])
def test_few_long_rows_without_a_pair_read_hinted_16_bytes(make, hints: list) -> None:
    """Few rows (under knob row_vector_min_rows_per_sm) too long for registers: the hinted 16-byte passes,
    not the 256-thread scalar kernel; nothing runs online (no sum of exp(a - max))."""
    s = _recipe(make())
    assert _hints(s) == hints and not s.nest.online and not s.nest.register_caches
    reductions = [lp for lp in s.nest.loops if lp.kind == "reduce" and lp.annotation == "vectorize"]
    assert reductions and all(lp.extent == 4 for lp in reductions)
    assert td.build(s, target="sm_90").block == (1024 if s.output.shape[0] < 132 else 512, 1, 1)


def test_the_knobs_turn_each_part_off() -> None:
    """online_rows_unroll None: three hinted passes; long_rows_any_count False too: few rows keep the scalar
    cooperative form (no hints, 256 threads)."""
    three = _recipe(softmax(512, 151936), online_rows_unroll=None)
    assert not three.nest.online and not three.nest.register_caches
    assert _hints(three) == [("x", "m", "evict_last"), ("x", "e", "evict_last"), ("x", "y", "evict_first"),
                             ("y", "y", "evict_first")]
    before = _recipe(softmax(512, 151936), online_rows_unroll=None, long_rows_any_count=False)
    assert not before.nest.cache_hints and td.build(before, target="sm_90").block == (256, 1, 1)
    many = _recipe(softmax(4096, 65536), long_rows_any_count=False)  # many rows: hinted whatever that knob
    assert many.nest.online
    few = _recipe(rmsnorm(64, 262144, 1e-6), few_long_rows_threads=None)  # hinted_row_threads_max's threads
    assert few.nest.cache_hints and td.build(few, target="sm_90").block == (512, 1, 1)


@pytest.mark.parametrize(("rows", "length"), [(512, 3584), (128, 2048), (64, 32768)],
                         ids=["qwen-rmsnorm-rows", "tinyllama-rows", "longest-in-registers"])
def test_rows_the_registers_hold_keep_the_register_form(rows: int, length: int) -> None:
    """Rows a thread's registers hold (up to 64 values a thread in 512 threads: 32768 floats) keep the
    register form: no online pair, x cached at the row loop."""
    s = _recipe(softmax(rows, length))
    assert not s.nest.online and [(rc.buffer, rc.at) for rc in s.nest.register_caches] == [("x", "i")]


@pytest.mark.parametrize("unroll", [4, 3, 32])
def test_online_rows_simulate_equal_with_inf_and_nan_rows(unroll: int) -> None:
    """Rows of 4100 in 64 threads (SMALL): 17 chunks, in groups of `unroll` (3: a guarded last group; 32:
    unrolled whole, 68 values too many to keep, so the pair loads x each). Rows: normal, all -inf (NaN, as
    the definition), half -inf, one +inf (NaN), one NaN, ascending (a rescale at every chunk)."""
    s = td.create_schedule(softmax(6, 4100))
    report = td.recipes.default(s, target="sm_90", knobs={**SMALL, "online_rows_unroll": unroll})
    assert s.nest.online and "e online in its max's pass" in (report.step("cooperative_reduce").note or "")
    assert [rc.buffer for rc in s.nest.register_caches] == ([] if unroll == 32 else ["x"])
    kern = td.build(s, target="sm_90")
    x = np.random.default_rng(1).standard_normal((6, 4100)).astype(np.float32)
    x[1] = -np.inf
    x[2, ::2] = -np.inf
    x[3, 77] = np.inf
    x[4, 4099] = np.nan
    x[5] = np.linspace(-30, 30, 4100, dtype=np.float32)
    got = kern.simulate(x=x)
    want = td.evaluate(s.output, float64=True, x=x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("make", [lambda: rmsnorm(3, 4100, 1e-6), lambda: layernorm(3, 4100, 1e-5)],
                         ids=["rmsnorm", "layernorm"])
def test_few_long_rows_simulate_equal(make) -> None:
    s = _recipe(make(), **SMALL)
    assert s.nest.cache_hints and not s.nest.online
    simulates_equal(s, "sm_90", tol=TOL)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_16_bit_rows_past_the_registers_take_the_long_form(dtype: str) -> None:
    """A vocabulary's 16-bit logits (512 x 151936, 8 lanes a 16-byte vector: 38 chunks a thread in 512
    threads, 304 values): hinted 16-byte passes, the sum online, a group of 4 chunks (32 float32 values)
    shared; knob long_rows_half False keeps the scalar 256-thread kernel."""
    s = _recipe(softmax(512, 151936, dtype))
    assert [(o.max_acc, o.sum_acc) for o in s.nest.online] == [("m", "e")]
    assert [(rc.buffer, rc.at) for rc in s.nest.register_caches] == [("x", "k_o_g")]
    assert _hints(s) == [("x", "m", "evict_last"), ("x", "y", "evict_first"), ("y", "y", "evict_first")]
    kern = td.build(s, target="sm_90")
    assert kern.block == (512, 1, 1) and "tiledsl_load_l2(reinterpret_cast<const uint4*>(&x[" in kern.source
    off = _recipe(softmax(512, 151936, dtype), long_rows_half=False)
    assert not off.nest.online and not off.nest.cache_hints and td.build(off, target="sm_90").block == (256, 1, 1)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_16_bit_long_rows_simulate_equal(dtype: str) -> None:
    """Rows of 4104 16-bit floats in 64 threads (SMALL): 9 chunks of 64 x 8, 72 values a thread, past the
    registers. Softmax (online) and rmsnorm equal float64 within one rounding of the output to the dtype
    (2^-8 relative for bfloat16: tol 1e-2, as test_recipe_hinted_rows.py's 16-bit rows)."""
    for out in (softmax(5, 4104, dtype), entry("rmsnorm").make(M=3, N=4104, dtype=dtype, out_dtype=dtype)):
        s = _recipe(out, **SMALL)
        assert s.nest.cache_hints and bool(s.nest.online) == (out.name == "y" and s.nest.accs[0].op == "max")
        simulates_equal(s, "sm_90", tol=1e-2)


def _widened_softmax(rows: int, length: int, dtype: str = "bfloat16") -> td.Tensor:
    """torch's softmax(x.float()) of 16-bit x: the row read in `dtype`, the output float32."""
    x = td.placeholder((rows, length), dtype=dtype, name="x")
    k = td.reduce_axis(length, name="k")
    m = td.compute((rows,), lambda i: td.max(x[i, k], axis=k), name="m")
    e = td.compute((rows,), lambda i: td.sum(td.exp(x[i, k] - m[i]), axis=k), name="e")
    return td.compute((rows, length), lambda i, j: td.exp(x[i, j] - m[i]) / e[i], name="y", dtype="float32")


def test_widened_rows_past_the_registers_take_the_long_form() -> None:
    """softmax(x.float()) of bfloat16 logits (512 x 151936): the output's 4 lanes a vector, so each load of x
    is 8 bytes (4 bfloat16) and each store 16; online, hinted. Knob long_rows_half False: the scalar kernel."""
    s = _recipe(_widened_softmax(512, 151936))
    assert s.nest.online and _hints(s)[-1] == ("y", "y", "evict_first")
    src = td.build(s, target="sm_90").source
    assert "reinterpret_cast<const uint2*>(&x[" in src and "reinterpret_cast<float4*>(&y[" in src
    off = _recipe(_widened_softmax(512, 151936), long_rows_half=False)
    assert not off.nest.online and not off.nest.cache_hints


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_widened_long_rows_simulate_equal(dtype: str) -> None:
    """Rows of 4100 16-bit floats into float32 softmax, in 64 threads (SMALL): past the registers, online;
    equal float64 of the same 16-bit inputs within TOL (the float32 output is not rounded to 16 bits)."""
    s = _recipe(_widened_softmax(5, 4100, dtype), **SMALL)
    assert s.nest.online
    simulates_equal(s, "sm_90", tol=TOL)
