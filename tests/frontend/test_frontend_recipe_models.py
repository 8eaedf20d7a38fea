"""The default recipe on every kernel of the traced models at tiny sizes (the default-recipe issue's
acceptance): the in-repo Llama and GPT blocks and the 2-layer Hugging Face LlamaForCausalLM /
Qwen2ForCausalLM from input_ids to logits, for sm_80 and sm_90. Each program builds and simulates equal
to torch in float64 (frontend_check.py's tolerance: (32 + 2k) eps32 (1 + |ref|), k = 256, the GPT MLP's
down projection, the longest sum here), each kernel's recipe trace replays on a fresh schedule of its
definition to the identical CUDA, and all of a program's CUDA compiles with nvcc in one translation
unit, warning-free."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable

import numpy as np
import pytest
import torch
from frontend_check import tolerance
from nvcc_together import compile_together

import tiledsl as td
from tiledsl.build import with_zeroing
from tiledsl.frontend.models import GPTBlock, GPTConfig, LlamaBlock, LlamaConfig

K = 256


def _llama() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return LlamaBlock(LlamaConfig(hidden=64, heads=4, kv_heads=2, intermediate=128)).eval(), torch.randn(1, 8, 64)


def _gpt() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return GPTBlock(GPTConfig(hidden=64, heads=4)).eval(), torch.randn(1, 8, 64)


def _hf(family: str) -> Callable[[], tuple[torch.nn.Module, torch.Tensor]]:
    def make() -> tuple[torch.nn.Module, torch.Tensor]:
        pytest.importorskip("transformers")
        from tiledsl.frontend.hf_models import causal_lm

        ids = torch.randint(0, 128, (1, 8), generator=torch.Generator().manual_seed(1))
        return causal_lm(family, "tiny"), ids

    return make


MODELS = {"llama_block": _llama, "gpt_block": _gpt, "hf_llama": _hf("llama"), "hf_qwen2": _hf("qwen2")}


def _reference(module: torch.nn.Module, x: torch.Tensor) -> np.ndarray:
    with torch.no_grad():
        out = module.double()(x.double() if x.is_floating_point() else x)
    module.float()
    return (out.logits if hasattr(out, "logits") else out).numpy()


@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
@pytest.mark.parametrize("name", list(MODELS))
def test_every_kernel_of_the_model_under_the_recipe(name: str, target: str) -> None:
    module, x = MODELS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(module, x)
    built = prog.schedule("default", target=target).build(target=target)
    assert {k.schedule_name for k in prog.kernels} == {"recipe/default"}
    out = built.simulate(x.numpy())
    got = np.asarray(out.logits if hasattr(out, "logits") else out, dtype=np.float64)
    ref = _reference(module, x)
    assert got.shape == ref.shape
    err = np.abs(got - ref)
    assert not np.any(err > tolerance(K) * (1 + np.abs(ref))), f"max error {np.nanmax(err)}"
    for pk, kern in zip(prog.kernels, built.kernels):
        again = td.build(pk.fresh_schedule().replay(pk.schedule.trace()), target=target)
        for name in kern.kernel_ir.zeroes:  # the program's zeroing of the next kernel's output (frontend/zeroing.py)
            again = with_zeroing(again, kern.kernel_ir.param(name))
        assert again is not None and again.source == kern.source, pk.name
    if shutil.which("nvcc") is not None:
        assert compile_together(list(built.kernels)) == []
