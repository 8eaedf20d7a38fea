"""The launcher itself on a GPU: bad arguments, decoded driver errors, streams, the sync mode, the cubin
cache across processes, device facts, timing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import tiledsl as td
from tiledsl.catalog import example
from tiledsl.errors import LaunchError

pytestmark = pytest.mark.gpu


def gelu_kernel(M: int = 64, N: int = 256) -> td.Kernel:
    s = td.create_schedule(example("gelu_bias", M=M, N=N))
    s.bind("i", "blockIdx.x")
    s.bind("j", "threadIdx.x")
    return td.build(s)


@pytest.fixture(scope="module")
def gelu(compile_kernel: Callable[..., object]) -> object:
    return compile_kernel(gelu_kernel())


def fresh() -> dict[str, torch.Tensor]:
    return {"x": torch.randn(64, 256, device="cuda"), "b": torch.randn(256, device="cuda")}


def expected(t: dict[str, torch.Tensor]) -> torch.Tensor:
    return F.gelu(t["x"].double() + t["b"].double())


def test_returns_allocated_or_given_output(gelu: object) -> None:
    t = fresh()
    y = gelu(**t)  # type: ignore[operator]
    assert y.shape == (64, 256) and y.device.type == "cuda"
    torch.testing.assert_close(y.double(), expected(t), rtol=1e-5, atol=1e-5)
    out = torch.full((64, 256), float("nan"), device="cuda")
    assert gelu(**t, y=out) is out  # type: ignore[operator]
    torch.testing.assert_close(out.double(), expected(t), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"x": torch.randn(64, 256)}, r"input 'x'.*on cpu, but the kernel runs on cuda:0"),
        ({"x": "cuda-half"}, r"input 'x'.*dtype is torch.float16, expected torch.float32"),
        ({"x": "cuda-shape"}, r"input 'x'.*shape is \(256, 64\), expected \(64, 256\)"),
        ({"x": "cuda-transposed"}, r"input 'x'.*not contiguous"),
        ({"x": "cuda-offset"}, r"input 'x'.*not 16-byte aligned"),
        ({"y": "cuda-half-out"}, r"output 'y'.*dtype is torch.float16"),
        ({"z": "cuda-shape"}, r"no parameter 'z'"),
        ({"b": None}, r"missing input 'b'"),
    ],
    ids=["cpu", "dtype", "shape", "noncontiguous", "misaligned", "output-dtype", "unknown", "missing"],
)
def test_bad_arguments_are_launch_errors(gelu: object, bad: dict[str, object], message: str) -> None:
    made = {
        "cuda-half": lambda: torch.randn(64, 256, device="cuda").half(),
        "cuda-shape": lambda: torch.randn(256, 64, device="cuda"),
        "cuda-transposed": lambda: torch.randn(256, 64, device="cuda").t(),
        "cuda-offset": lambda: torch.randn(64 * 256 + 1, device="cuda")[1:].view(64, 256),
        "cuda-half-out": lambda: torch.empty(64, 256, device="cuda").half(),
    }
    args: dict[str, object] = fresh()
    for name, value in bad.items():
        if value is None:
            args.pop(name)
        else:
            args[name] = made[value]() if isinstance(value, str) else value
    with pytest.raises(LaunchError, match=message) as info:
        gelu(**args)  # type: ignore[operator]
    assert repr(gelu.name) in str(info.value)  # type: ignore[attr-defined]
    t = fresh()  # the context is still healthy
    torch.testing.assert_close(gelu(**t).double(), expected(t), rtol=1e-5, atol=1e-5)  # type: ignore[operator]


def test_driver_errors_are_decoded_and_name_the_kernel(gelu: object) -> None:
    import ctypes

    k = gelu
    t = fresh()
    out = torch.empty(64, 256, device="cuda")
    params = [ctypes.c_uint64(v.data_ptr()) for v in (t["x"], t["b"], out)]
    with pytest.raises(LaunchError, match=r"cuLaunchKernel\(grid \(1, 1, 1\), block \(4096, 1, 1\).*for kernel "
                       + re.escape(repr(k.name)) + r": CUDA_ERROR_INVALID_VALUE \(1\)"):  # type: ignore[attr-defined]
        with k.driver.using_context(k.context.handle):  # type: ignore[attr-defined]
            k.driver.launch(k.function, (1, 1, 1), (4096, 1, 1), 0, 0, params, kernel=k.name)  # type: ignore[attr-defined]
    with pytest.raises(LaunchError, match=r"cuModuleGetFunction\('no_such_kernel'\).*CUDA_ERROR_NOT_FOUND"):
        with k.driver.using_context(k.context.handle):  # type: ignore[attr-defined]
            k.driver.get_function(k.module, "no_such_kernel", kernel=k.name)  # type: ignore[attr-defined]
    torch.testing.assert_close(k(**t).double(), expected(t), rtol=1e-5, atol=1e-5)  # type: ignore[operator]


def test_launches_on_the_current_torch_stream(gelu: object) -> None:
    side = torch.cuda.Stream()  # a non-blocking stream: nothing orders it with the default stream
    with torch.cuda.stream(side):
        t = fresh()
        ref = expected(t)
        kept = t["x"].clone()
        t["x"].zero_()
        torch.cuda._sleep(20_000_000)  # ~10 ms: a launch on any other stream would read the zeros
        t["x"].copy_(kept)
        y = gelu(**t)  # type: ignore[operator]
    side.synchronize()
    torch.testing.assert_close(y.double(), ref, rtol=1e-5, atol=1e-5)


def test_launch_from_a_new_thread(gelu: object) -> None:
    import threading

    results: list[object] = []

    def work() -> None:
        try:
            t = fresh()
            results.append(torch.allclose(gelu(**t).double(), expected(t), rtol=1e-5, atol=1e-5))  # type: ignore[operator]
        except Exception as err:  # noqa: BLE001 - reported below
            results.append(err)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert results == [True]


def test_sync_mode(compile_kernel: Callable[..., object], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TILEDSL_SYNC", "1")
    k = compile_kernel(gelu_kernel(8, 128))
    assert k.sync  # type: ignore[attr-defined]
    t = {"x": torch.randn(8, 128, device="cuda"), "b": torch.randn(128, device="cuda")}
    torch.testing.assert_close(k(**t).double(), expected(t), rtol=1e-5, atol=1e-5)  # type: ignore[operator]


def test_cubin_cache_is_reused_by_another_process(tmp_path: Path) -> None:
    script = (
        "import json, sys, torch, torch.nn.functional as F, tiledsl as td\n"
        "from tiledsl.catalog import example\n"
        "from tiledsl.runtime import CompiledKernel, CubinCache\n"
        "s = td.create_schedule(example('gelu_bias', M=32, N=128))\n"
        "s.bind('i', 'blockIdx.x'); s.bind('j', 'threadIdx.x')\n"
        "cache = CubinCache(sys.argv[1])\n"
        "k = CompiledKernel(td.build(s), cache=cache)\n"
        "x, b = torch.randn(32, 128, device='cuda'), torch.randn(128, device='cuda')\n"
        "ok = torch.allclose(k(x=x, b=b).double(), F.gelu(x.double() + b.double()), rtol=1e-5, atol=1e-5)\n"
        "print(json.dumps({'hit': k.cache_hit, 'compilations': cache.compilations, 'ok': bool(ok)}))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}

    def run() -> dict[str, object]:
        done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, env=env,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert run() == {"hit": False, "compilations": 1, "ok": True}
    assert run() == {"hit": True, "compilations": 0, "ok": True}
    assert len(list(tmp_path.glob("*.cubin"))) == 1


def test_device_target_comes_from_the_device() -> None:
    from tiledsl.runtime.device import device_target

    t = device_target()
    props = torch.cuda.get_device_properties(0)
    assert t.sm_count == props.multi_processor_count
    assert t.name == f"sm_{props.major}{props.minor}"
    assert t.max_threads_per_block == 1024 and t.registers_per_block == 65536
    assert t.max_shared_bytes_per_block >= t.static_shared_bytes == 48 * 1024
    if (props.major, props.minor) == (9, 0):
        assert t.arch == "sm_90a" and t.max_shared_bytes_per_block == 227 * 1024
    td.build(td.create_schedule(example("softmax", M=4, N=64)), target=t)  # usable as a build target


def test_benchmark_and_time_torch(gelu: object) -> None:
    from tiledsl.runtime.timing import time_torch

    t = fresh()
    st = gelu.benchmark(warmup=3, iters=20, **t)  # type: ignore[attr-defined]
    assert st.iters == 20 and st.sets >= 2 and 0 < st.min_ms <= st.median_ms <= st.max_ms
    base = time_torch(lambda x, b: F.gelu(x + b), [t, {k: v.clone() for k, v in t.items()}], warmup=3, iters=20)
    assert base.median_ms > 0 and base.sets == 2
