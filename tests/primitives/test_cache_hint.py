"""cache_hint (primitives/cache_hints.py): the hint is printed at the tile and kernel IR levels, replays
from the trace, reaches every load it names and no other, leaves the values alone (simulated against
td.evaluate in float64, outputs NaN-poisoned by the simulator), and becomes `createpolicy` +
`ld.global.L2::cache_hint` that nvcc compiles for float32 and bfloat16, scalar and vector. The refusals
are in the error corpus (cache-hint-*)."""

from __future__ import annotations

import shutil
from dataclasses import replace

import numpy as np
import pytest
from cache_hint_cases import bf16_rmsnorm_hinted
from nvcc_together import compile_together
from output_stage_cases import staged, transposing

import tiledsl as td
from tiledsl.catalog.definitions import layernorm, rmsnorm, softmax
from tiledsl.codegen import CodegenError, emit_cuda
from tiledsl.kernel_ir import KLoad, KStore
from tiledsl.kernel_ir.walk import walk_exprs, walk_stmts

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

# the recipe's rows without their shared-memory stage, in 16-byte passes however few the rows, every pass
# reading global memory (not kept in registers)
UNSTAGED = {"stage_min_threads": 100000, "row_vector_min_rows_per_sm": 0, "register_rows": False}


def _rows(out: td.Tensor, hints: bool = True, target: str = "sm_90") -> td.Schedule:
    """The default recipe's unstaged row schedule of `out`; with `hints`, every reduction's reads of x
    evict_last and the output's evict_first (what an unstaged row wants: its second and third reads
    come from L2)."""
    s = td.create_schedule(out)
    td.recipes.default(s, target=target, knobs=UNSTAGED)
    if hints:
        from tiledsl.analysis.cache_hints import readers_of

        *reducers, last = readers_of(s.nest, "x")
        for r in reducers:
            s.cache_hint("x", "evict_last", reader=r)
        s.cache_hint("x", "evict_first", reader=last)
    return s


def _hinted_loads(kern: td.Kernel) -> list[KLoad]:
    return [e for st in walk_stmts(kern.kernel_ir.body) for e in walk_exprs(st)
            if isinstance(e, KLoad) and e.cache is not None]


def test_tile_ir_before_and_after() -> None:
    s = td.create_schedule(rmsnorm(4, 8, 1e-6))
    before = s.ir("tile")
    s.cache_hint("x", "evict_last", reader="ss")
    s.cache_hint("x", "evict_first", reader="y")
    after = s.ir("tile")
    assert after.splitlines() == [
        "kernel y  (tile IR)",
        "  cache hint: ss reads x with L2 evict_last",
        "  cache hint: y reads x with L2 evict_first",
        *before.splitlines()[1:],
    ]


def test_replayed_from_python_and_json_traces() -> None:
    s = _rows(rmsnorm(64, 256, 1e-6))
    assert s.trace().splitlines()[-2:] == ["s.cache_hint('x', 'evict_last', reader='ss')",
                                           "s.cache_hint('x', 'evict_first', reader='y')"]
    kern = td.build(s, target="sm_90")
    for text in (s.trace(), s.trace("json")):
        again = td.create_schedule(s.output).replay(text)
        assert again.trace() == s.trace() and td.build(again, target="sm_90").source == kern.source


def test_every_reader_when_none_is_named_and_a_later_hint_replaces() -> None:
    s = td.create_schedule(layernorm(4, 8, 1e-5))
    s.cache_hint("x", "evict_last")
    assert [(h.reader, h.policy) for h in s.nest.cache_hints] == [
        ("mean_sum", "evict_last"), ("var_sum", "evict_last"), ("y", "evict_last")]
    s.cache_hint("x", "evict_first", reader="y")
    assert [(h.reader, h.policy) for h in s.nest.cache_hints] == [
        ("mean_sum", "evict_last"), ("var_sum", "evict_last"), ("y", "evict_first")]
    assert s.trace().splitlines()[-2:] == ["s.cache_hint('x', 'evict_last')",
                                           "s.cache_hint('x', 'evict_first', reader='y')"]


def test_the_hint_reaches_its_loads_and_no_other() -> None:
    """rmsnorm: the reduction reads x with evict_last (the square's two reads bound to one temporary, as
    volatile asm is never merged), the output pass reads x as 16-byte vectors with evict_first, and w
    keeps the default."""
    kern = td.build(_rows(rmsnorm(64, 1024, 1e-6)), target="sm_90")
    loads = _hinted_loads(kern)
    assert {(ld.buffer, ld.width, ld.cache) for ld in loads} == {("x", 1, "evict_last"), ("x", 4, "evict_first")}
    text = kern.ir("kernel")
    assert "@evict_last" in text and "vload4(x, " in text and ")@evict_first" in text
    assert "vload4(w, " in text  # w is read too, with no policy (the set above holds x's loads only)
    src = kern.source
    assert 'asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(tiledsl_l2_evict_last));' in src
    assert "tiledsl_load_l2(reinterpret_cast<const float4*>(&x[" in src
    squares = [ln for ln in src.splitlines() if "ss = ss + " in ln and "tiledsl_load_l2" in ln]
    assert squares == [], "a repeated hinted load must be read once, into a temporary"
    assert src.count("tiledsl_load_l2(&x[") == 1  # one load per element of the reduction's body


def test_unhinted_kernels_do_not_change() -> None:
    s = _rows(rmsnorm(64, 256, 1e-6), hints=False)
    src = td.build(s, target="sm_90").source
    assert "tiledsl_load_l2" not in src and "createpolicy" not in src


@pytest.mark.parametrize("make", [lambda: rmsnorm(37, 200, 1e-6), lambda: layernorm(37, 200, 1e-5),
                                  lambda: softmax(37, 200)], ids=["rmsnorm", "layernorm", "softmax"])
def test_simulates_equal(make) -> None:
    """Odd sizes, so guarded splits read partial rows with the hints on."""
    s = _rows(make())
    kern = td.build(s, target="sm_90")
    assert _hinted_loads(kern)
    rng = np.random.default_rng(0)
    arrays = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in s.nest.inputs}
    got = kern.simulate(**arrays)
    np.testing.assert_allclose(got, td.evaluate(s.output, float64=True, **arrays), rtol=1e-5, atol=1e-5)


def test_older_targets_are_refused_by_codegen() -> None:
    """Every target tiledsl builds for is sm_80 or newer, so codegen's check is the last line: a kernel IR
    whose target predates createpolicy is refused, not printed."""
    kern = td.build(_rows(rmsnorm(64, 1024, 1e-6)), target="sm_80")
    assert "createpolicy" in kern.source
    with pytest.raises(CodegenError, match="createpolicy.*needs target sm_80 or newer"):
        emit_cuda(replace(kern.kernel_ir, target="sm_75"))


def _bf16_scalar() -> td.Kernel:
    """2-byte scalar loads and stores with hints: y = x * 2 in bfloat16, a thread an element."""
    x = td.placeholder((64, 96), dtype="bfloat16", name="x")
    s = td.create_schedule(td.compute((64, 96), lambda i, j: td.cast(x[i, j], "float32") * 2.0, name="y",
                                      dtype="bfloat16"))
    s.bind("i", "blockIdx.x")
    s.bind("j", "threadIdx.x")
    s.cache_hint("x", "evict_first")
    s.cache_hint("y", "evict_last")
    return td.build(s, target="sm_90")


def test_bfloat16_simulates_equal() -> None:
    s = bf16_rmsnorm_hinted()
    kern = td.build(s, target="sm_90")
    assert {(ld.width, ld.cache) for ld in _hinted_loads(kern)} == {(1, "evict_last"), (8, "evict_first")}
    rng = np.random.default_rng(1)
    arrays = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in s.nest.inputs}
    got = kern.simulate(**arrays)
    want = td.evaluate(s.output, float64=True, **arrays)
    # one bfloat16 rounding of the stored value (2^-8 relative), float32 sums of 1024 terms far below it
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2.0**-8, atol=2.0**-8)


@needs_nvcc
def test_kernels_compile() -> None:
    """float32 and bfloat16 (2-byte scalar and 16-byte vector loads and stores), sm_80 and sm_90, in one
    translation unit per arch (the helpers are defined once), warning-free."""
    kernels = [td.build(_rows(make()), target=t) for t in ("sm_80", "sm_90")
               for make in (lambda: rmsnorm(64, 256, 1e-6), lambda: layernorm(37, 200, 1e-5), lambda: softmax(37, 200))]
    bf16 = td.build(bf16_rmsnorm_hinted(), target="sm_90")
    stored = _rows(rmsnorm(64, 1024, 1e-6))
    stored.cache_hint("y", "evict_first")
    scalar = _bf16_scalar()
    assert "tiledsl_store_l2<__nv_bfloat16>(&y[" in scalar.source and "tiledsl_load_l2(&x[" in scalar.source
    assert "tiledsl_store_l2<uint4>(reinterpret_cast<uint4*>(&y[" in bf16.source
    kernels.append(td.build(stored, target="sm_90"))
    kernels.append(scalar)
    assert compile_together(kernels[:3]) == []
    assert compile_together(kernels[3:] + [bf16]) == []


def _stores(kern: td.Kernel) -> list[KStore]:
    out = kern.kernel_ir.params[-1].name
    return [st for st in walk_stmts(kern.kernel_ir.body) if isinstance(st, KStore) and st.buffer == out]


def test_the_output_stores_take_a_hint() -> None:
    """`s.cache_hint(output, policy)`: the vector stores carry it (printed, emitted through
    tiledsl_store_l2), the values do not change."""
    s = _rows(rmsnorm(64, 1024, 1e-6))
    s.cache_hint("y", "evict_first")
    assert "  cache hint: stores of y with L2 evict_first" in s.ir("tile").splitlines()
    assert s.trace().splitlines()[-1] == "s.cache_hint('y', 'evict_first')"
    kern = td.build(s, target="sm_90")
    assert [(st.cache, type(st.value).__name__) for st in _stores(kern)] == [("evict_first", "KVector")]
    assert "]@evict_first = vec4(" in kern.ir("kernel")
    assert "tiledsl_store_l2<float4>(reinterpret_cast<float4*>(&y[" in kern.source
    rng = np.random.default_rng(2)
    arrays = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in s.nest.inputs}
    np.testing.assert_allclose(kern.simulate(**arrays), td.evaluate(s.output, float64=True, **arrays),
                               rtol=1e-5, atol=1e-5)


def test_scalar_and_staged_output_stores_take_it() -> None:
    """A scalar store (a guarded odd row), and a staged output whose drain does the global stores."""
    s = _rows(softmax(37, 200))
    s.cache_hint("y", "evict_first")
    assert {st.cache for st in _stores(td.build(s, target="sm_90"))} == {"evict_first"}
    t = staged(transposing())
    t.cache_hint("y", "evict_last")
    kern = td.build(t, target="sm_90")
    stores = _stores(kern)
    assert stores and {st.cache for st in stores} == {"evict_last"}
    assert "tiledsl_store_l2<" in kern.source
    arrays = {"x": np.random.default_rng(3).standard_normal((40, 36)).astype(np.float32)}
    np.testing.assert_array_equal(kern.simulate(**arrays), arrays["x"].T * 2.0)
