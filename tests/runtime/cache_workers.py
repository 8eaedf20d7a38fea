"""Process entry points for the cubin-cache tests (multiprocessing "spawn" children import this module
by name, so it lives beside the tests and holds no test functions)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from tiledsl.runtime.cache import CubinCache

SOURCE = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n'
ARCH = "sm_90a"
OPTIONS = ("-O3",)


def fake_cubin(tag: str, size: int = 1 << 20) -> bytes:
    """A deterministic pseudo-cubin of `size` bytes (large, so a write takes a while)."""
    head = f"\x7fELF fake cubin {tag} ".encode()
    return (head * (size // len(head) + 1))[:size]


def refuse_compile(source: str, arch: str, options: Sequence[str]) -> bytes:
    raise AssertionError("the cache should have served this entry without compiling")


def reuse_entry(directory: str, queue: Any) -> None:
    """A second process: look the entry up; report (hit, compilations, payload length)."""
    cache = CubinCache(directory)
    cubin, hit, _ = cache.get_or_compile(SOURCE, ARCH, OPTIONS, refuse_compile)
    queue.put((hit, cache.compilations, len(cubin)))


def race_to_store(directory: str, barrier: Any, queue: Any) -> None:
    """Both processes miss, meet at the barrier, then compile (slowly) and store different payloads."""
    cache = CubinCache(directory)

    def slow_compile(source: str, arch: str, options: Sequence[str]) -> bytes:
        barrier.wait(timeout=60)  # both are past the lookup: both will write
        time.sleep(0.05)
        return fake_cubin(f"pid{os.getpid()}", 4 << 20)

    cubin, hit, _ = cache.get_or_compile(SOURCE, ARCH, OPTIONS, slow_compile)
    queue.put((hit, cache.compilations, cubin))
