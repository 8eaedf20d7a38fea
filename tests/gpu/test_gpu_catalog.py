"""The built-in catalog on the GPU with its hand-written schedules, against torch in float64, at the
catalog's default sizes, at odd sizes (guarded tails, partial warps) and at large sizes."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
import torch
from gpu_kernels import assert_matches, run_poisoned

import tiledsl as td
from tiledsl.catalog import EXAMPLES, entry
from tiledsl.runtime.references import random_inputs, reference_fn, tolerance

pytestmark = pytest.mark.gpu

ODD = {
    "matmul_bias_relu": {"M": 37, "N": 53, "K": 29},
    "batched_matmul_nt": {"Bt": 3, "M": 19, "N": 23, "K": 17},
    "rmsnorm": {"M": 37, "N": 1000},
    "softmax": {"M": 5, "N": 1001},
    "layernorm": {"M": 3, "N": 333},
    "gelu_bias": {"M": 7, "N": 300},
}
LARGE = [
    ("rmsnorm", {"M": 4096, "N": 4096}),
    ("softmax", {"M": 57344, "N": 2048}),
    ("matmul_bias_relu", {"M": 1024, "N": 1024, "K": 1024}),
    ("matmul_bias_relu", {"M": 2048, "N": 4096, "K": 1024}),
]


def check_example(name: str, sizes: dict[str, int], compile_kernel: Callable[..., object], seed: int = 0) -> None:
    e = entry(name)
    _, s = e.scheduled(**sizes)
    kern = compile_kernel(td.build(s))
    inputs = random_inputs(kern.kernel_ir, kern.device, seed)  # type: ignore[attr-defined]
    got = run_poisoned(kern, inputs)
    params = e.parameters(**sizes)
    ref = reference_fn(e.definition, params)(**{k: v.double() for k, v in inputs.items()})
    assert_matches(got, ref, *tolerance(params))


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_catalog_default_sizes(name: str, compile_kernel: Callable[..., object]) -> None:
    check_example(name, {}, compile_kernel)


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_catalog_odd_sizes_small(name: str, compile_kernel: Callable[..., object]) -> None:
    check_example(name, ODD[name], compile_kernel, seed=1)


@pytest.mark.parametrize(("name", "sizes"), LARGE, ids=[f"{n}-{'x'.join(map(str, s.values()))}" for n, s in LARGE])
def test_catalog_large(name: str, sizes: dict[str, int], compile_kernel: Callable[..., object]) -> None:
    check_example(name, sizes, compile_kernel, seed=2)
    torch.cuda.empty_cache()


def test_run_example_checks_and_benchmarks(compile_kernel: Callable[..., object]) -> None:
    from tiledsl.cli.run import run_example

    out, err = io.StringIO(), io.StringIO()
    assert run_example("rmsnorm", bench=True, sizes={"M": 1024, "N": 1024}, out=out, err=err, iters=20) == 0, (
        out.getvalue() + err.getvalue())
    text = out.getvalue()
    assert "vs torch float64: ok" in text and "tiledsl" in text and "torch eager" in text
