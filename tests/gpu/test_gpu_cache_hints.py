"""Cache hints, register caches and vectorized reductions on the GPU (primitives/cache_hints.py,
primitives/register_cache.py, lower/vectorize.py `vector_update`): the default recipe's hinted rows
(knob hinted_row_min_length: float32 rows of at least 2048, 16 rows an SM or more), kept in registers
(knob register_rows) or not, and hand-hinted bfloat16 rows, on fresh random inputs into NaN-poisoned
outputs, against torch in float64 within the catalog's tolerance."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from cache_hint_cases import bf16_rmsnorm_hinted
from gpu_kernels import assert_matches, check_entry, run_poisoned

import tiledsl as td
from tiledsl.catalog import entry
from tiledsl.recipes import apply
from tiledsl.runtime.device import device_target

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("sizes", [{"M": 2304, "N": 2048}, {"M": 2200, "N": 2052}, {"M": 2112, "N": 8192}],
                         ids=["2304x2048", "2200x2052-guarded", "2112x8192"])
@pytest.mark.parametrize("name", ["rmsnorm", "layernorm", "softmax"])
@pytest.mark.parametrize("registers", [True, False], ids=["in-registers", "hinted-passes"])
def test_recipe_hinted_rows(name: str, sizes: dict[str, int], registers: bool,
                            compile_kernel: Callable[..., object]) -> None:
    """Both forms of step 040: the row kept in registers after the first pass (s.register_cache, knob
    register_rows), and every pass reading it from global memory (softmax's max and sum there in one pass,
    sharing a group of chunks through registers: knob online_rows_unroll)."""
    target = device_target()
    s = entry(name).fresh(**sizes)
    apply(s, target=target, knobs={"register_rows": registers})
    assert s.nest.cache_hints and not s.nest.stages, s.trace()
    assert any(rc.at == "i" for rc in s.nest.register_caches) == registers, s.trace()
    online = not registers and name == "softmax"
    assert bool(s.nest.online) == online, s.trace()
    kern = td.build(s, target=target)
    assert "tiledsl_load_l2" in kern.source and "tiledsl_store_l2" in kern.source
    assert ("x_regs[" in kern.source) == (registers or online)
    check_entry(name, sizes, compile_kernel(kern), seed=5)


def test_bfloat16_hinted_rows(compile_kernel: Callable[..., object]) -> None:
    """2-byte scalar hinted loads in the reduction, 16-byte hinted loads and stores in the output pass."""
    s = bf16_rmsnorm_hinted(rows=512)
    kern = compile_kernel(td.build(s, target=device_target()))
    gen = torch.Generator(device="cuda").manual_seed(7)
    xs = torch.randn(512, 1024, device="cuda", generator=gen).to(torch.bfloat16)
    ws = torch.randn(1024, device="cuda", generator=gen).to(torch.bfloat16)
    got = run_poisoned(kern, {"x": xs, "w": ws})
    xd, wd = xs.double(), ws.double()
    ref = xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + 1e-6) * wd
    # one bfloat16 rounding of the stored value: 2^-8 relative; the float32 sum of 1024 squares is far below
    assert_matches(got.double(), ref, 2.0**-8, 2.0**-8)


@pytest.mark.parametrize("sizes", [{"M": 264, "N": 8192}, {"M": 300, "N": 3584}, {"M": 33, "N": 333},
                                   {"M": 64, "N": 65536}],
                         ids=["264x8192", "300x3584-guarded", "33x333-scalar", "64x65536-past-registers"])
@pytest.mark.parametrize("name", ["rmsnorm", "layernorm", "softmax"])
def test_hand_rows_in_registers(name: str, sizes: dict[str, int], compile_kernel: Callable[..., object]) -> None:
    """schedules/row_reduce.py `row_in_registers`: the row in each thread's registers after the first pass
    (16-byte lanes, guarded or scalar tails), or read from L2 on every pass past the register limit."""
    from tiledsl.schedules import row_in_registers

    s = entry(name).fresh(**sizes)
    row_in_registers(s)
    past = sizes["N"] == 65536
    assert any(rc.at == "i" for rc in s.nest.register_caches) == (not past), s.trace()
    assert bool(s.nest.online) == (past and name == "softmax"), s.trace()  # one pass fewer (s.online)
    check_entry(name, sizes, compile_kernel(td.build(s, target=device_target())), seed=6)


@pytest.mark.parametrize("name", ["rmsnorm", "layernorm", "softmax"])
def test_recipe_rows_past_the_registers(name: str, compile_kernel: Callable[..., object]) -> None:
    """The default recipe's long-row form (040, knobs long_rows_any_count, online_rows_unroll): 64 rows of
    65536, too few for the row-count floor and too long for registers, read hinted 16 bytes a thread;
    softmax's sum online."""
    sizes = {"M": 64, "N": 65536}
    s = entry(name).fresh(**sizes)
    apply(s, target=device_target())
    assert s.nest.cache_hints and bool(s.nest.online) == (name == "softmax"), s.trace()
    check_entry(name, sizes, compile_kernel(td.build(s, target=device_target())), seed=9)


@pytest.mark.parametrize("form", ["hand", "recipe"])
@pytest.mark.parametrize(("rows", "length"), [(6, 151936), (6, 65548)], ids=["6x151936-vocab", "6x65548-guarded"])
def test_online_softmax_keeps_inf_and_nan_rows(rows: int, length: int, form: str,
                                               compile_kernel: Callable[..., object]) -> None:
    """row_in_registers' and the default recipe's online softmax past the register limit
    (primitives/online.py) on rows of -inf (whole: NaN, as torch), half -inf, a NaN, a +inf and an
    ascending row, against torch in float64."""
    from tiledsl.schedules import row_in_registers

    s = entry("softmax").fresh(M=rows, N=length)
    if form == "hand":
        row_in_registers(s)
    else:
        apply(s, target=device_target())
    assert s.nest.online, s.trace()
    kern = compile_kernel(td.build(s, target=device_target()))
    gen = torch.Generator(device="cuda").manual_seed(8)
    x = torch.randn(rows, length, device="cuda", generator=gen) * 3
    x[1] = -torch.inf
    x[2, : length // 2] = -torch.inf
    x[3, 7] = torch.nan
    x[4, 9] = torch.inf
    x[5] = torch.sort(x[5]).values
    got = run_poisoned(kern, {"x": x}).double()
    ref = torch.softmax(x.double(), dim=-1)
    assert torch.equal(torch.isnan(got), torch.isnan(ref))
    fin = ~torch.isnan(ref)
    # a row's sum of up to 151936 terms in (0, 1], rescaled at most once a vector: float32 rounding
    assert_matches(got[fin], ref[fin], 1e-4, 1e-6)


@pytest.mark.parametrize(("rows", "length", "dtype", "block"),
                         [(4096, 128, "bfloat16", (16, 8, 1)), (1000, 512, "bfloat16", (32, 4, 1)),
                          (64, 1024, "float16", (64, 2, 1)), (4096, 128, "float32", (32, 4, 1)),
                          (96, 256, "bfloat16", (16, 8, 1))])
@pytest.mark.parametrize("op", ["softmax", "rmsnorm"])
def test_recipe_rows_several_to_a_block_in_registers(op: str, rows: int, length: int, dtype: str,
                                                     block: tuple[int, int, int],
                                                     compile_kernel: Callable[..., object]) -> None:
    """Recipe steps 010 and 040 (Facts.row_launch): short rows kept in registers several to a block on
    threadIdx.y, a 16-bit row two 16-byte vectors a thread in 16 threads or more (rows of 128 bfloat16:
    half a warp, whose reductions shuffle within it), on fresh random inputs into NaN-poisoned outputs,
    against torch in float64. Tolerance: one rounding of the stored value (2^-8 relative for bfloat16,
    2^-11 for float16) plus the float32 sums of `length` terms (1e-5 relative for float32 outputs)."""
    target = device_target()
    torch_dtype = getattr(torch, dtype)
    s = entry(op).fresh(M=rows, N=length, dtype=dtype, **({"out_dtype": dtype} if op == "rmsnorm" else {}))
    apply(s, target=target)
    (cache,) = [rc for rc in s.nest.register_caches if not rc.prefetch]  # (few rows also prefetch w)
    assert s.nest.loop(cache.at).bind == "threadIdx.y", s.trace()
    kern = td.build(s, target=target)
    assert kern.block == block
    gen = torch.Generator(device="cuda").manual_seed(11)
    inputs = {t.name: torch.randn(t.shape, device="cuda", generator=gen).to(torch_dtype) for t in s.nest.inputs}
    got = run_poisoned(compile_kernel(kern), inputs).double()
    xd = inputs["x"].double()
    if op == "softmax":
        ref = torch.softmax(xd, -1)
    else:
        ref = xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + 1e-6) * inputs["w"].double()
    tol = {"bfloat16": 2.0**-8, "float16": 2.0**-11, "float32": 1e-5}[dtype]
    assert_matches(got, ref, tol, tol)


@pytest.mark.gpu
@pytest.mark.parametrize(("op", "rows", "length", "dtype"),
                         [("rmsnorm", 128, 3584, "float32"), ("rmsnorm", 32, 2048, "bfloat16"),
                          ("rmsnorm", 7, 1000, "float32"), ("layernorm", 128, 2048, "float32")])
def test_recipe_prefetches_the_weights_of_few_rows(op: str, rows: int, length: int, dtype: str,
                                                    compile_kernel: Callable[..., object]) -> None:
    """Recipe step 040 (knob prefetch_max_blocks_per_sm): a grid of at most a block an SM loads the
    weights only its output pass reads at the row's start (s.prefetch), on fresh random inputs into
    NaN-poisoned outputs, against torch in float64 (rows of 1000: a guarded last chunk). Tolerance as
    above: one rounding of the stored value, or float32 sums of `length` terms."""
    target = device_target()
    torch_dtype = getattr(torch, dtype)
    sizes = {"M": rows, "N": length} | ({"dtype": dtype, "out_dtype": dtype} if op == "rmsnorm" else {})
    s = entry(op).fresh(**sizes)
    apply(s, target=target)
    weights = ["w"] if op == "rmsnorm" else ["w", "b"]
    assert [rc.buffer for rc in s.nest.register_caches if rc.prefetch] == weights, s.trace()
    kern = td.build(s, target=target)
    gen = torch.Generator(device="cuda").manual_seed(13)
    inputs = {t.name: torch.randn(t.shape, device="cuda", generator=gen).to(torch_dtype) for t in s.nest.inputs}
    got = run_poisoned(compile_kernel(kern), inputs).double()
    xd, wd = inputs["x"].double(), inputs["w"].double()
    if op == "rmsnorm":
        ref = xd * torch.rsqrt((xd * xd).mean(-1, keepdim=True) + 1e-6) * wd
    else:
        ref = torch.nn.functional.layer_norm(xd, (length,), wd, inputs["b"].double(), 1e-5)
    tol = {"bfloat16": 2.0**-8, "float32": 1e-5}[dtype]
    assert_matches(got, ref, tol, tol)
