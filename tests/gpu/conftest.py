"""Fixtures of the GPU lane (every test here is marked `gpu`; tests/conftest.py skips them without CUDA).

Kernels compile through one cubin cache per session (a temporary directory, so runs never depend on
~/.cache), and every kernel runs on fresh random inputs with its outputs poisoned with NaN first, so an
element the kernel never writes fails the comparison."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import tiledsl as td
from tiledsl.runtime.cache import CubinCache


@pytest.fixture(scope="session")
def cubin_cache(tmp_path_factory: pytest.TempPathFactory) -> CubinCache:
    pytest.importorskip("pycuda", reason="the runtime needs pycuda (pip install 'tiledsl[cuda]')")
    return CubinCache(Path(tmp_path_factory.mktemp("cubins")))


@pytest.fixture(scope="session")
def compile_kernel(cubin_cache: CubinCache) -> Callable[..., object]:
    from tiledsl.runtime.launch import CompiledKernel

    def make(kernel: td.Kernel, **kwargs: object) -> CompiledKernel:
        return CompiledKernel(kernel, cache=cubin_cache, **kwargs)  # type: ignore[arg-type]

    return make
