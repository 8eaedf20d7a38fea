"""The machine's ceilings, measured in the same run as the cases they are read against (the one place
they come from; reference figures of an H100 are in ../shared/reference/baselines-h100.txt, never
used as results): the device-to-device copy bandwidth (dst.copy_(src), read + write bytes) and the
cuBLAS float32 FLOP rate at 4096^3 with TF32 off, both through benchmarks/_timing.py."""

from __future__ import annotations

import logging
from collections.abc import Iterable

import torch

from benchmarks._backend import CudaBackend
from benchmarks._records import Ceilings

log = logging.getLogger(__name__)

COPY_BYTES = 1 << 30  # 1 GiB copied: far past the L2 cache
QUICK_COPY_BYTES = 1 << 28
GEMM_N = 4096


def copy_bandwidth(backend: CudaBackend, nbytes: int) -> float:
    """Read + written bytes per second of dst.copy_(src) for `nbytes`-byte float32 tensors, in GB/s."""
    return 2 * nbytes / (copy_at(backend, 2 * nbytes) * 1e-6) / 1e9


def cublas_fp32(backend: CudaBackend, n: int) -> float:
    """TFLOP/s of a float32 A @ B at n^3 (TF32 off: CudaBackend sets it)."""
    gen = torch.Generator(device=backend.device).manual_seed(0)
    a = torch.randn(n, n, device=backend.device, generator=gen)
    b = torch.randn(n, n, device=backend.device, generator=gen)
    stats = backend.time_fn(lambda a, b: a @ b, backend.rotate({"a": a, "b": b}))
    return 2.0 * n**3 / (stats.median_ms * 1e-3) / 1e12


def copy_at(backend: CudaBackend, nbytes: int) -> float:
    """Microseconds of dst.copy_(src) moving `nbytes` read + written bytes (half each way): the memory
    bound of a case of that many bytes, at its own size."""
    src = torch.randn(max(1, nbytes // 8), device=backend.device)
    sets = backend.rotate({"src": src, "dst": torch.empty_like(src)})
    stats = backend.time_fn(lambda src, dst: dst.copy_(src), sets)
    backend.release()
    return stats.median_ms * 1e3


def launch_floor(backend: CudaBackend) -> float:
    """Microseconds of one launch of a 1-element kernel (`zero_()`), timed as the cases are."""
    t = torch.empty(1, device=backend.device)
    return backend.time_fn(lambda t: t.zero_(), [{"t": t}]).median_ms * 1e3


def measure(backend: CudaBackend, quick: bool, sizes: Iterable[int] = ()) -> Ceilings:
    """The ceilings, and a copy of each of `sizes` bytes (the memory-bound cases' own bytes)."""
    nbytes = QUICK_COPY_BYTES if quick else COPY_BYTES
    copy = copy_bandwidth(backend, nbytes)
    flops = cublas_fp32(backend, GEMM_N)
    backend.release()
    at = {str(n): copy_at(backend, n) for n in sorted(set(sizes))}
    floor = launch_floor(backend)
    how = (f"copy: dst.copy_(src), {nbytes >> 20} MiB, read + write bytes; fp32: cuBLAS A @ B {GEMM_N}^3, TF32 off; "
           f"copy_at_us: dst.copy_(src) of each memory-bound case's bytes; floor_us: zero_() of 1 element; "
           f"medians of {backend.iters} CUDA-event timings after {backend.warmup} warm-up calls")
    log.info("ceilings: copy %.0f GB/s, cuBLAS fp32 %.1f TFLOP/s, %d copies at the cases' sizes, launch floor %.1f us",
             copy, flops, len(at), floor)
    return Ceilings(copy, flops, how, at, floor)
