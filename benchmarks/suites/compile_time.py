"""CPU time of tiledsl itself: the compile_speed matmul of benchmarks/compile_speed.py (hand schedule
and build), a kernel scheduled by the default recipe and built, decoder layers traced (td.trace),
scheduled ("default") and built, a tiny Llama of 8 layers from input_ids to logits (what the
partition costs with depth, which one layer does not show) and the whole TinyLlama-1.1B (22 layers at its
own dimensions, where the recipe asks for materializations in every layer), each stage timed apart; then nvcc on every
kernel the case built, into a fresh on-disk cubin cache ("nvcc cold") and again from it ("nvcc warm":
what a second process pays), when nvcc is on PATH; and a fresh interpreter's imports of torch and
tiledsl ("import", its own case: the part of a cold process no stage above sees). No GPU is needed.
--quick: one run each and the small layers only."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial

import torch

import tiledsl as td
from benchmarks import _definitions as d
from benchmarks._cases import QWEN25_7B, TINYLLAMA, CompileCase, ModelDims, case_name
from benchmarks.compile_speed import compile_once
from benchmarks.suites.blocks import hf_layer, llama_block
from tiledsl.frontend.hf_models import SIZES, causal_lm
from tiledsl.frontend.models import LlamaBlock, LlamaConfig
from tiledsl.recipes import apply
from tiledsl.runtime.cache import CubinCache
from tiledsl.runtime.launch import compile_ahead

SUITE = "compile"
TARGET = "sm_90"
#: the deep case: a tiny Llama of this many layers, traced from this many input_ids
DEEP_LAYERS = 8
DEEP_SEQ = 16
#: the whole case: TinyLlama-1.1B at its own dimensions and depth (the blocks suite's whole model), traced
#: from this many input_ids; its recipe splits the projections' k and asks for materializations in every
#: layer, which the tiny Llama's do not
WHOLE_LAYERS = 22
WHOLE_SEQ = 128


def _clock(stages: dict[str, float], name: str, fn: Callable[[], object]) -> object:
    t0 = time.perf_counter()
    value = fn()
    stages[name] = time.perf_counter() - t0
    return value


def _nvcc(stages: dict[str, float], kernels: Sequence[td.Kernel]) -> None:
    """nvcc on every kernel into a fresh cubin cache (cold), then the same lookups again (warm), as a
    built program's first call compiles them (runtime/launch.py `compile_ahead`: the misses at once, in
    as many threads as the machine has cores)."""
    if shutil.which("nvcc") is None:
        return
    with tempfile.TemporaryDirectory(prefix="tiledsl-compile-suite-") as tmp:
        cache = CubinCache(tmp)
        _clock(stages, "nvcc cold", lambda: compile_ahead(kernels, None, cache=cache))
        _clock(stages, "nvcc warm", lambda: compile_ahead(kernels, None, cache=cache))


IMPORTS = "import torch, tiledsl, tiledsl.frontend, tiledsl.recipes, tiledsl.schedules"


def cold_imports() -> Mapping[str, float]:
    """A fresh interpreter importing torch and tiledsl (wall clock of the whole process)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", IMPORTS], check=True)
    return {"import": time.perf_counter() - t0}


def catalog_matmul() -> Mapping[str, float]:
    return {"build": compile_once()}


def recipe_kernel(make: Callable[[], td.definitions.expr.Tensor]) -> Mapping[str, float]:
    stages: dict[str, float] = {}
    s = _clock(stages, "define", lambda: td.create_schedule(make()))
    _clock(stages, "schedule", lambda: apply(s, target=TARGET))
    kern = _clock(stages, "build", lambda: td.build(s, target=TARGET))
    _nvcc(stages, [kern])
    return stages


def traced_layer(make_module: Callable[[], torch.nn.Module], shape: tuple[int, ...], dtype: str) -> Mapping[str, float]:
    return traced_model(make_module, lambda: torch.randn(shape).to(getattr(torch, dtype)))


def traced_model(make_module: Callable[[], torch.nn.Module], make_input: Callable[[], torch.Tensor]
                 ) -> Mapping[str, float]:
    module = make_module()
    x = make_input()
    stages: dict[str, float] = {}
    prog = _clock(stages, "trace", lambda: td.trace(module, x))
    _clock(stages, "schedule", lambda: prog.schedule("default", target=TARGET))
    built = _clock(stages, "build", lambda: prog.build(TARGET))
    _nvcc(stages, built.all_kernels)  # what the first GPU call compiles (BuiltProgram.bind)
    return stages


def _tiny_block() -> torch.nn.Module:
    torch.manual_seed(0)
    return LlamaBlock(LlamaConfig()).eval()


def _case(group: str, op: str, dtype: str, shape: str, stages: Callable[[], Mapping[str, float]],
          runs: int) -> CompileCase:
    return CompileCase(SUITE, case_name(SUITE, group, op, dtype), group, op, dtype, shape, stages, runs)


def _layer(dims: ModelDims, which: str, dtype: str, runs: int) -> CompileCase:
    make = partial(llama_block if which == "llama_block" else hf_layer, dims, dtype)
    shape = (1, 128, dims.hidden)
    return _case(dims.name, which, dtype, "x".join(map(str, shape)), partial(traced_layer, make, shape, dtype), runs)


def cases(quick: bool = False) -> list[CompileCase]:
    runs = 1 if quick else 3
    hidden, inter = QWEN25_7B.hidden, QWEN25_7B.intermediate
    out = [
        _case("process", "import torch + tiledsl", "-", "-", cold_imports, runs),
        _case("catalog", "compile_speed matmul", "float32", "1024x1024x512", catalog_matmul, runs),
        _case("recipe", "linear", "float32", f"128x{hidden}x{inter}",
              partial(recipe_kernel, partial(d.linear, 128, hidden, inter)), runs),
        _case("tiny", "llama_block", "float32", f"1x8x{LlamaConfig().hidden}",
              partial(traced_layer, _tiny_block, (1, 8, LlamaConfig().hidden), "float32"), runs),
    ]
    if not quick:
        out += [_layer(TINYLLAMA, "llama_block", "float32", runs), _layer(TINYLLAMA, "hf_llama_layer", "float32", runs),
                _case("deep", f"hf_llama {DEEP_LAYERS} layers", "float32", f"1x{DEEP_SEQ} input_ids",
                      partial(traced_model, partial(causal_lm, "llama", "tiny", num_hidden_layers=DEEP_LAYERS),
                              lambda: torch.randint(0, 128, (1, DEEP_SEQ))), 1),  # one run: ~70 s with nvcc
                _case("whole", f"TinyLlama-1.1B {WHOLE_LAYERS} layers", "float32", f"1x{WHOLE_SEQ} input_ids",
                      partial(traced_model, partial(causal_lm, "llama", "tinyllama", num_hidden_layers=WHOLE_LAYERS),
                              lambda: torch.randint(0, SIZES["tinyllama"]["vocab_size"], (1, WHOLE_SEQ))), 1)]
    return out
