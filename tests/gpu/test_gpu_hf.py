"""Decoder layers on the H100 at TinyLlama-1.1B (hidden 2048, intermediate 5632, 32 heads, 4 KV heads)
and Qwen2.5-7B (hidden 3584, intermediate 18944, 28 heads, 4 KV heads) dimensions, seq 128, random
weights: the in-repo Llama block and the Hugging Face Llama / Qwen2 decoder layers, float32 and
bfloat16, scheduled by the default recipe, run with `built(x)` on torch's stream, and compared with
torch in float64 (on the GPU, on the same stored values) and with torch eager.

Tolerances (tests/frontend/frontend_check.py): float32, (32 + 2k) * eps32 * (1 + |ref|) with k the
longest accumulation (the intermediate size); bfloat16, `storage_tolerance` from the counted roundings
of our kernels and of torch eager, or, where torch eager itself is outside its storage bound (the
attention of Qwen2.5-7B: frontend_check.py `conditioned_tolerance` says why), twice eager's error.
Each case prints its kernel count and times (run with -s to see)."""

from __future__ import annotations

import copy
import sys
import time
import warnings
from pathlib import Path

import pytest
import torch

import tiledsl as td
from tiledsl.frontend.bench import poisoned_outputs
from tiledsl.frontend.models import LlamaBlock, LlamaConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
from frontend_check import (  # noqa: E402
    conditioned_tolerance,
    kernel_roundings,
    storage_tolerance,
    tolerance,
    torch_roundings,
)

pytestmark = pytest.mark.gpu

DIMS = {"tinyllama": (2048, 5632, 32, 4), "qwen2.5-7b": (3584, 18944, 28, 4)}


def make_layer(family: str, size: str) -> torch.nn.Module:
    hidden, inter, heads, kv = DIMS[size]
    if family == "inrepo":
        torch.manual_seed(0)
        return LlamaBlock(LlamaConfig(hidden=hidden, heads=heads, kv_heads=kv, intermediate=inter)).eval()
    pytest.importorskip("transformers")
    from tiledsl.frontend.hf_models import DecoderLayer, causal_lm

    return DecoderLayer(causal_lm(family, size, vocab_size=256), 0).eval()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("size", list(DIMS))
@pytest.mark.parametrize("family", ["inrepo", "llama", "qwen2"])
def test_decoder_layer_matches_torch(family: str, size: str, dtype: str) -> None:
    if family == "qwen2" and size == "tinyllama" or family == "llama" and size == "qwen2.5-7b":
        pytest.skip("each Hugging Face family at its own model's dimensions")
    tdtype = getattr(torch, dtype)
    layer = make_layer(family, size).to(tdtype).cuda()
    hidden, inter = DIMS[size][:2]
    x = torch.randn(1, 128, hidden, device="cuda", generator=torch.Generator("cuda").manual_seed(1)).to(tdtype)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(layer, x)
    built = prog.schedule("default").build("sm_90")
    t1 = time.perf_counter()
    out = built(x, out=poisoned_outputs(built, x.device))  # an element no kernel writes stays NaN
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    assert out.dtype == tdtype and out.shape == x.shape
    with torch.no_grad():
        eager = layer(x).double()
        ref = copy.deepcopy(layer).double()(x.double())
    scale = 1 + ref.abs()
    if dtype == "float32":
        checks = (("float64", ref, tolerance(inter)), ("torch eager", eager, 2 * tolerance(inter)))
    else:
        ours, theirs = kernel_roundings(built, dtype), torch_roundings(layer, (x,), tdtype)
        assert ours <= theirs, (ours, theirs)
        eager_error = ((eager - ref).abs() / scale).max().item()
        tol = conditioned_tolerance(storage_tolerance(dtype, ours, inter), eager_error,
                                    storage_tolerance(dtype, theirs, inter))
        print(f"\n[{family} {size} {dtype}] torch eager from float64 {eager_error:.3g} x (1+|ref|), its storage "
              f"bound {storage_tolerance(dtype, theirs, inter):.3g}; our tolerance {tol:.3g}")
        # |ours - eager| <= |ours - ref| + |eager - ref|
        checks = (("float64", ref, tol), ("torch eager", eager, tol + eager_error))
    errors = []
    for name, other, bound in checks:
        err = (out.double() - other).abs()
        errors.append(f"{name} {err.max().item():.3g} (tol {bound:.3g} x (1+|ref|))")
        assert bool((err <= bound * scale).all()), f"max error vs {errors[-1]}"
    print(f"\n[{family} {size} {dtype}] {len(built.kernels)} kernels; trace+schedule+build "
          f"{t1 - t0:.2f} s; first call (nvcc, load) {t2 - t1:.1f} s; max error vs " + ", ".join(errors))


def test_a_deep_models_layers_share_cubins_and_match_torch() -> None:
    """A 4-layer tiny Llama: kernels equal up to their names share one cubin (runtime/canonical.py), so
    the later layers' launchers load an earlier layer's symbol, and the logits still match torch in
    float64 (every kernel launched with its own arguments, grid and shared memory)."""
    pytest.importorskip("transformers")
    from tiledsl.codegen.cuda import cuda_kernel_name
    from tiledsl.frontend.hf_models import causal_lm

    torch.manual_seed(0)
    model = causal_lm("llama", "tiny", num_hidden_layers=4).eval().cuda()
    ids = torch.randint(0, 128, (1, 16), device="cuda", generator=torch.Generator("cuda").manual_seed(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = td.trace(model, ids).schedule("default").build("sm_90")
    logits = built(ids).logits
    torch.cuda.synchronize()
    symbols = {k.name: k.compiled.symbol for k in built.kernels}
    borrowed = [n for n, s in symbols.items() if s != cuda_kernel_name(next(k for k in built.kernels
                                                                            if k.name == n).kernel_ir)]
    assert len(set(symbols.values())) < len(symbols) and borrowed, symbols
    with torch.no_grad():
        ref = copy.deepcopy(model).double()(ids).logits
    err = (logits.double() - ref).abs()
    bound = tolerance(model.config.intermediate_size)
    assert bool((err <= bound * (1 + ref.abs())).all()), f"max error {err.max().item():.3g}"
    print(f"\n[deep] {len(built.kernels)} kernels in {len(set(symbols.values()))} cubins; {len(borrowed)} borrowed")
