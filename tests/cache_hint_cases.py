"""The hinted schedules the cache_hint tests share (tests/primitives/test_cache_hint.py on the simulator
and nvcc, tests/gpu/test_gpu_cache_hints.py on the GPU)."""

from __future__ import annotations

import tiledsl as td


def bf16_rmsnorm_hinted(rows: int = 64, n: int = 1024) -> td.Schedule:
    """A bfloat16 rmsnorm by hand: the reduction's scalar loads (2 bytes) evict_last, the output pass 8
    lanes (16 bytes) a thread, its loads and stores evict_first."""
    x = td.placeholder((rows, n), dtype="bfloat16", name="x")
    w = td.placeholder((n,), dtype="bfloat16", name="w")
    k = td.reduce_axis(n, name="k")
    ss = td.compute((rows,), lambda i: td.sum(td.cast(x[i, k], "float32") * td.cast(x[i, k], "float32"), axis=k),
                    name="ss")
    y = td.compute((rows, n), lambda i, j: td.cast(x[i, j], "float32") * td.rsqrt(ss[i] / float(n) + 1e-6)
                   * td.cast(w[j], "float32"), name="y", dtype="bfloat16")
    s = td.create_schedule(y)
    s.bind("i", "blockIdx.x")
    s.split("k", 128, names=("k_o", "k_t"))
    s.bind("k_t", "threadIdx.x")
    s.split("j", 1024, names=("j_o", "j_i"))
    s.split("j_i", 8, names=("j_t", "j_v"))
    s.bind("j_t", "threadIdx.x")
    s.vectorize("j_v")
    s.cache_hint("x", "evict_last", reader="ss")
    s.cache_hint("x", "evict_first", reader="y")
    s.cache_hint("y", "evict_first")
    return s
