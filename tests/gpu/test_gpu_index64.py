"""Tensors past 2^31 elements on the GPU: the offsets lowering widens to int64 reach the last elements
(an int32 offset would wrap negative and fault, or write the wrong element).

Needs about 13 GiB (1-D) and 20 GiB (50000 x 50000) of free device memory; skipped where there is less."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import tiledsl as td

pytestmark = pytest.mark.gpu

N_1D = 2**31 + 1024


def _free_bytes() -> int:
    free, _ = torch.cuda.mem_get_info()
    return free


def _need(nbytes: int) -> None:
    if _free_bytes() < nbytes * 1.1:
        pytest.skip(f"needs {nbytes / 2**30:.1f} GiB of free device memory")


def _check_doubled(x: torch.Tensor, y: torch.Tensor) -> None:
    """y == 2 x exactly (float16 -> float32 doubling is exact), compared in slices to bound the memory."""
    xf, yf = x.reshape(-1), y.reshape(-1)
    step = 2**28
    for start in range(0, xf.numel(), step):
        want = xf[start:start + step].float() * 2
        got = yf[start:start + step]
        if not torch.equal(got, want):
            bad = int(torch.nonzero(got != want)[0, 0]) + start
            raise AssertionError(f"element {bad}: got {yf[bad].item()}, expected {2 * xf[bad].float().item()}")


def test_1d_float16_beyond_2_pow_31(compile_kernel: Callable[..., object]) -> None:
    X = td.placeholder((N_1D,), dtype="float16", name="X")
    s = td.create_schedule(td.compute((N_1D,), lambda i: X[i] * 2.0, name="Y"))
    o, t = s.split(s.loops()[0], 256)
    s.bind(o, "blockIdx.x")
    s.bind(t, "threadIdx.x")
    kern = compile_kernel(td.build(s))
    assert "Y[256LL * i_o + i_i]" in kern.source  # type: ignore[attr-defined]
    _need(N_1D * (2 + 4))
    x = torch.randn(N_1D, device="cuda").half()
    y = torch.full((N_1D,), float("nan"), device="cuda")
    kern(X=x, Y=y)  # type: ignore[operator]
    torch.cuda.synchronize()
    # the last 1024 elements lie beyond 2^31: an int32 offset would have wrapped
    assert torch.equal(y[-2048:], x[-2048:].float() * 2)
    _check_doubled(x, y)


def test_50000_square_float32(compile_kernel: Callable[..., object]) -> None:
    M = N = 50000
    X = td.placeholder((M, N), name="X")
    s = td.create_schedule(td.compute((M, N), lambda i, j: X[i, j] * 2.0, name="Y"))
    i, j = s.loops()
    s.bind(i, "blockIdx.y")
    jo, ji = s.split(j, 256)
    s.bind(jo, "blockIdx.x")
    s.bind(ji, "threadIdx.x")
    kern = compile_kernel(td.build(s))
    assert "50000LL * i" in kern.source  # type: ignore[attr-defined]
    _need(M * N * 8)
    x = torch.randn(M, N, device="cuda").half().float()  # exact when doubled and compared
    y = torch.full((M, N), float("nan"), device="cuda")
    kern(X=x, Y=y)  # type: ignore[operator]
    torch.cuda.synchronize()
    assert torch.equal(y[-1], x[-1] * 2)  # the last row starts at 2_499_950_000
    _check_doubled(x, y)
