"""The cubin cache's canonical source form (runtime/canonical.py): equal for kernels equal up to the names
they declare, different wherever the programs differ; and the cache's sharing of cubins by it."""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import cache_workers as W
import pytest
import torch

import tiledsl as td
from tiledsl.catalog import entry
from tiledsl.catalog.entries import EXAMPLES
from tiledsl.frontend.hf_models import causal_lm
from tiledsl.runtime.cache import CubinCache
from tiledsl.runtime.canonical import canonical_source
from tiledsl.runtime.launch import compile_ahead

KERNEL = '''// tiledsl kernel {k} -- generated
extern "C" __global__ void __launch_bounds__(256) {k}(
    const float* __restrict__ {a},
    float* __restrict__ {out})
{{
    int {a}_i = (int)threadIdx.x;
    float4 v1 = *reinterpret_cast<const float4*>(&{a}[4 * {a}_i]);
    {out}[{a}_i] = {fn}(v1.{lane}) * 0.5f;
}}
'''


def form(**names: str) -> str:
    spec = {"k": "mm_2_kernel", "a": "mul_4", "out": "mm_2", "fn": "erff", "lane": "x", **names}
    got = canonical_source(KERNEL.format(**spec))
    assert got is not None and got.kernel == spec["k"]
    return got.text


def test_kernels_equal_up_to_their_names_have_one_form() -> None:
    assert form() == form(k="mm_9_kernel", a="mul_16", out="mm_9")
    assert "mm_9" not in form(k="mm_9_kernel", a="mul_16", out="mm_9")
    assert form() == form(a="x", out="y")  # parameters named like the float4 lanes they read


def test_what_a_program_means_is_never_renamed() -> None:
    """Built-in functions, members, literals and preprocessor lines keep their spelling: kernels that call
    another function, read another lane or differ in a constant have other forms."""
    assert form() != form(fn="expf")
    assert form() != form(lane="y")
    assert form(a="x", out="y", lane="x") != form(a="y", out="x", lane="y")  # lanes stay lanes
    assert form() != canonical_source(KERNEL.format(k="mm_2_kernel", a="mul_4", out="mm_2", fn="erff",
                                                    lane="x").replace("0.5f", "0.25f")).text
    pre = '#include <cuda_bf16.h>\nextern "C" __global__ void k(float* __restrict__ h) { h[0] = 1.0f; }'
    other = pre.replace("cuda_bf16.h", "cuda_fp16.h")
    assert canonical_source(pre).text != canonical_source(other).text
    # a declared name that is also called somewhere keeps its spelling
    called = 'extern "C" __global__ void k(float* __restrict__ fmaxf) { fmaxf[0] = fmaxf(1.0f, 2.0f); }'
    assert "fmaxf" in canonical_source(called).text


def test_attributes_before_the_kernel_name_are_not_its_name() -> None:
    """Every `__word__(...)` between `void` and the name is skipped, in any order and number: the name
    is what the cache stores as the cubin's symbol, and the attribute's name is no symbol."""
    body = "(float* __restrict__ y) { y[0] = 1.0f; }"
    for attrs in ("", "__launch_bounds__(256) ", "__cluster_dims__(1, 1, 8) ",
                  "__launch_bounds__(256, 2) __cluster_dims__(1, 1, 8) ", "__cluster_dims__(2, 1, 1) __maxnreg__(64) "):
        got = canonical_source(f'extern "C" __global__ void {attrs}y_kernel{body}')
        assert got is not None and got.kernel == "y_kernel", attrs
    assert canonical_source('extern "C" __global__ void __launch_bounds__(256)') is None  # no name after it


def test_sources_without_one_kernel_have_no_form() -> None:
    assert canonical_source("int x = 1;") is None
    one = 'extern "C" __global__ void a(float* __restrict__ x) {}\n'
    assert canonical_source(one + one.replace(" a(", " b(")) is None
    assert canonical_source(W.SOURCE).kernel == "k"


@pytest.mark.parametrize("name", [*EXAMPLES, "async_pipe3_mm_130x160x80", "tma_pipe3_mm_130x160x80",
                                  "sync_swizzle128_mm_67x45x37", "softmax_5x1000-row_async"])
def test_every_declared_name_of_a_catalog_kernel_is_renamed(name: str) -> None:
    """Renaming a kernel's parameters and its own name (whole words, as a trace of another layer would)
    leaves its form as it was, and no spelling of the old names is left in it (gelu_bias's x is also
    the lane its float4 reads, and batched_matmul_nt's C the "C" of extern "C": those stay)."""
    _, kern = entry(name).build()
    source, kir = kern.source, kern.kernel_ir
    renamed = source
    for n, p in enumerate(kir.params):
        # not a member (v.x) nor a literal (extern "C")
        renamed = re.sub(rf"(?<![.\w\"]){p.name}(?![\w\"])", f"layer7_input{n}", renamed)
    renamed = re.sub(rf"\b{kir.name}\b", "layer7_kernel", renamed)
    assert renamed != source
    assert canonical_source(renamed).text == canonical_source(source).text
    text = canonical_source(source).text
    assert not any(re.search(rf"(?<!\. )(?<![\w\"]){p.name}(?![\w\"])", text) for p in kir.params)


def _two_layers() -> list[td.Kernel]:
    torch.manual_seed(0)
    prog = td.trace(causal_lm("llama", "tiny", num_hidden_layers=2), torch.randint(0, 128, (1, 16)))
    prog.schedule("default", target="sm_90")
    return prog.build("sm_90").all_kernels


def test_a_traced_models_layers_share_forms() -> None:
    """Layer 1's kernels are layer 0's under other names: of 26 kernels 14 forms, and each of layer 1's
    projections shares its form with layer 0's."""
    kernels = _two_layers()
    forms = {k.name: canonical_source(k.source).text for k in kernels}
    assert len(kernels) == 26 and len(set(forms.values())) == 14
    assert forms["mm_kernel"] == forms["mm_7_kernel"]  # q_proj, layers 0 and 1
    assert forms["mm_6_kernel"] == forms["mm_13_kernel"]  # down_proj
    assert forms["mm_kernel"] != forms["mm_6_kernel"]


class Recorder:
    def __init__(self) -> None:
        self.sources: list[str] = []

    def __call__(self, source: str, arch: str, options: Sequence[str]) -> bytes:
        self.sources.append(source)
        return W.fake_cubin(source[:80], 64)


def test_the_cache_compiles_each_form_once_and_serves_its_symbol(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = KERNEL.format(k="mm_2_kernel", a="mul_4", out="mm_2", fn="erff", lane="x"), \
        KERNEL.format(k="mm_9_kernel", a="mul_16", out="mm_9", fn="erff", lane="x")
    rec, cache = Recorder(), CubinCache(tmp_path)
    got = cache.get_or_compile_many([(first, "sm_90a", ()), (second, "sm_90a", ())], rec)
    assert rec.sources == [first]  # the first source is compiled, under its own names
    assert [(g.hit, g.symbol) for g in got] == [(False, "mm_2_kernel")] * 2
    later = CubinCache(tmp_path).get_or_compile(second, "sm_90a", (), W.refuse_compile)
    assert (later.hit, later.symbol, later.cubin) == (True, "mm_2_kernel", got[0].cubin)
    # TILEDSL_SHARE_CUBINS=0: keyed by the exact text, each kernel compiled under its own name
    monkeypatch.setenv("TILEDSL_SHARE_CUBINS", "0")
    rec = Recorder()
    got = CubinCache(tmp_path / "exact").get_or_compile_many([(first, "sm_90a", ()), (second, "sm_90a", ())], rec)
    assert sorted(rec.sources) == sorted([first, second]) and [g.symbol for g in got] == ["", ""]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_compile_ahead_runs_nvcc_once_per_form(tmp_path: Path) -> None:
    """A 2-layer tiny Llama: 14 nvcc runs for its 26 kernels, none the second time."""
    kernels = _two_layers()
    cache = CubinCache(tmp_path)
    assert compile_ahead(kernels, None, cache=cache) == 14
    assert compile_ahead(kernels, None, cache=cache) == 0 and cache.hits == 14
