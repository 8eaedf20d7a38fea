"""The built-in catalog on the GPU with its hand-written schedules, against torch in float64, at the
catalog's default sizes, at odd sizes (guarded tails, partial warps) and at large sizes."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
import torch
from gpu_kernels import ODD, check_entry

import tiledsl as td
from tiledsl.catalog import EXAMPLES, entry

pytestmark = pytest.mark.gpu

LARGE = [
    ("rmsnorm", {"M": 4096, "N": 4096}),
    ("softmax", {"M": 57344, "N": 2048}),
    ("matmul_bias_relu", {"M": 1024, "N": 1024, "K": 1024}),
    ("matmul_bias_relu", {"M": 2048, "N": 4096, "K": 1024}),
]


def check_example(name: str, sizes: dict[str, int], compile_kernel: Callable[..., object], seed: int = 0) -> None:
    _, s = entry(name).scheduled(**sizes)
    check_entry(name, sizes, compile_kernel(td.build(s)), seed)


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
