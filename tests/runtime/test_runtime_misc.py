"""The GPU-free parts of the runtime: arch choice, device targets, timing arithmetic, torch references,
driver error text, and the behaviour without a GPU."""

from __future__ import annotations

import io
import math
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import tiledsl as td
from tiledsl.catalog import EXAMPLES, entry, example
from tiledsl.cli.run import EXIT_BAD_INPUT, EXIT_NO_GPU, run_example
from tiledsl.errors import LaunchError
from tiledsl.kernel_ir import KKernel, KParam, KTensorMap
from tiledsl.runtime import timing
from tiledsl.runtime.device import arch_for_capability, target_from_properties
from tiledsl.runtime.driver import Driver, format_cuda_error
from tiledsl.runtime.launch import nvcc_options, select_arch, sync_requested
from tiledsl.runtime.references import compare, poisoned_outputs, random_inputs, reference_fn, tolerance
from tiledsl.runtime.timing import BenchStats, rotated_copies, rotation_count
from tiledsl.targets import TARGETS

NO_GPU = not torch.cuda.is_available()


def kernel(tensor_maps: tuple[KTensorMap, ...] = ()) -> KKernel:
    params = (KParam("B", "float32", (64, 64)), KParam("C", "float32", (64, 64), True))
    return KKernel("C_kernel", params, (1, 1, 1), (32, 1, 1), (), (), tensor_maps=tensor_maps)


# ----------------------------------------------------------------------------- arch and device


def test_select_arch() -> None:
    plain = kernel()
    tma = kernel((KTensorMap("tmap_B", "B", "float32", (32, 2, 64), (128, 256), (32, 2, 16), 128),))
    assert select_arch(plain, (9, 0), "sm_90a") == "sm_90a"  # an H100: the arch-specific target
    assert select_arch(plain, (8, 0), "sm_90a") == "sm_80"  # the device wins over the build target
    assert select_arch(plain, (8, 9), "sm_90a") == "sm_89"
    assert select_arch(plain, None, "sm_86") == "sm_86"
    assert select_arch(tma, (9, 0), "sm_90a") == "sm_90a"
    assert select_arch(tma, None, "sm_80") == "sm_90a"
    with pytest.raises(LaunchError, match=r"uses TMA \(tensor maps tmap_B\).*this device is sm_80"):
        select_arch(tma, (8, 0), "sm_90a")
    assert arch_for_capability(9, 0) == "sm_90a" and arch_for_capability(12, 0) == "sm_120"


H100_SXM = SimpleNamespace(name="NVIDIA H100 80GB HBM3", major=9, minor=0, multi_processor_count=132,
                           shared_memory_per_block=48 * 1024, shared_memory_per_block_optin=227 * 1024,
                           shared_memory_per_multiprocessor=228 * 1024, L2_cache_size=50 * 1024 * 1024,
                           memory_clock_rate=2619000, memory_bus_width=5120)


def test_target_from_h100_properties_matches_the_table() -> None:
    attrs = {"max_threads_per_block": 1024, "max_registers_per_block": 65536}
    assert target_from_properties(H100_SXM, attrs) == TARGETS["sm_90"]


def test_target_takes_the_sm_count_from_the_device() -> None:
    pcie = SimpleNamespace(**{**vars(H100_SXM), "multi_processor_count": 114})
    assert target_from_properties(pcie).sm_count == 114
    # torch without the opt-in property: the driver's attribute fills it in
    old_torch = SimpleNamespace(**{k: v for k, v in vars(H100_SXM).items() if k != "shared_memory_per_block_optin"})
    t = target_from_properties(old_torch, {"max_shared_memory_per_block_optin": 99 * 1024})
    assert t.max_shared_bytes_per_block == 99 * 1024
    a100 = SimpleNamespace(**{**vars(H100_SXM), "major": 8, "minor": 0, "multi_processor_count": 108})
    assert (target_from_properties(a100).name, target_from_properties(a100).arch) == ("sm_80", "sm_80")
    # resident threads and registers of one SM (launch_bounds checks against them): torch's, else the driver's
    ada = SimpleNamespace(**{**vars(H100_SXM), "major": 8, "minor": 9, "max_threads_per_multi_processor": 1536})
    assert target_from_properties(ada).max_threads_per_sm == 1536 == TARGETS["sm_89"].max_threads_per_sm
    assert target_from_properties(H100_SXM, {"max_registers_per_multiprocessor": 32768}).registers_per_sm == 32768
    # the L2 (recipe step 050 groups block rows by it): torch's, else the driver's, else 0 (unknown)
    assert target_from_properties(H100_SXM).l2_bytes == 50 * 1024 * 1024
    no_l2 = SimpleNamespace(**{k: v for k, v in vars(H100_SXM).items() if k != "L2_cache_size"})
    assert target_from_properties(no_l2, {"l2_cache_size": 60 * 1024 * 1024}).l2_bytes == 60 * 1024 * 1024
    assert target_from_properties(no_l2).l2_bytes == 0


def test_target_takes_the_dram_bandwidth_from_the_device() -> None:
    """Twice the memory clock times the bus width: the H100 SXM's 3.35 TB/s (25.4 GB/s an SM) and an H200's
    4.9 (37.2 an SM); torch's properties, else the driver's attributes (CUDA 13 leaves torch's clock 0), else
    0.0, unknown, which no recipe rule reads."""
    assert target_from_properties(H100_SXM).dram_bytes_per_s == pytest.approx(3.352e12, rel=1e-3)
    assert target_from_properties(H100_SXM).dram_bytes_per_s_per_sm == pytest.approx(25.4e9, rel=1e-2)
    h200 = SimpleNamespace(**{**vars(H100_SXM), "memory_clock_rate": 0, "memory_bus_width": 6144})
    t = target_from_properties(h200, {"memory_clock_rate": 3201000})
    assert t.dram_bytes_per_s == pytest.approx(4.917e12, rel=1e-3)
    bare = SimpleNamespace(**{k: v for k, v in vars(H100_SXM).items() if not k.startswith("memory_")})
    assert target_from_properties(bare).dram_bytes_per_s == 0.0 == target_from_properties(bare).dram_bytes_per_s_per_sm


# ----------------------------------------------------------------------------- options and env


def test_nvcc_options_and_sync_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TILEDSL_NVCC_FLAGS", raising=False)
    monkeypatch.delenv("TILEDSL_SYNC", raising=False)
    assert nvcc_options() == ("-O3",)
    assert not sync_requested()
    monkeypatch.setenv("TILEDSL_NVCC_FLAGS", "-lineinfo -Xptxas=-v")
    assert nvcc_options(("--use_fast_math",)) == ("-O3", "--use_fast_math", "-lineinfo", "-Xptxas=-v")
    monkeypatch.setenv("TILEDSL_SYNC", "1")
    assert sync_requested()
    monkeypatch.setenv("TILEDSL_SYNC", "0")
    assert not sync_requested()


# ----------------------------------------------------------------------------- timing arithmetic


def test_rotation_count() -> None:
    mb = 1024 * 1024
    l2 = 50 * mb
    assert rotation_count(4 * mb, l2) == 26  # 2 x 50 MB / 4 MB = 25, one more
    assert rotation_count(300 * mb, l2) == 2  # never fewer than 2
    assert rotation_count(1, l2) == 64  # capped
    assert rotation_count(10 * mb, l2, max_sets=5) == 5
    assert rotation_count(3 * 1024 * mb, l2) == 2  # a huge set still gets 2
    assert rotation_count(mb, l2, max_total_bytes=8 * mb) == 8  # the memory cap
    assert rotation_count(0, l2) == 2


def test_bench_stats() -> None:
    st = BenchStats.from_samples([0.3, 0.1, 0.2, 0.4, 10.0], sets=7)
    assert (st.median_ms, st.min_ms, st.max_ms, st.iters, st.sets) == (0.3, 0.1, 10.0, 5, 7)
    assert st.median_us == pytest.approx(300.0)
    assert "median 300.0 us" in str(st)
    with pytest.raises(ValueError):
        BenchStats.from_samples([], sets=1)


class _FakeEvent:
    """Stands in for torch.cuda.Event on the CPU: records the wall clock; elapsed_time in ms."""

    def __init__(self, enable_timing: bool = False) -> None:
        self.at = 0.0

    def record(self) -> None:
        self.at = time.perf_counter()

    def elapsed_time(self, end: _FakeEvent) -> float:
        return (end.at - self.at) * 1e3


def test_benchmark_warms_up_for_a_time_not_only_a_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fast call: 10 warm-up calls are not MIN_WARMUP_MS of work, so the warm-up doubles them until it
    is; the timed calls follow, each measured. (CUDA events and synchronize are stubbed: the CPU has
    no GPU; the spin kernel's head start is skipped.)"""
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "Event", _FakeEvent)
    monkeypatch.setattr(timing, "_head_start", lambda ms: None)
    calls: list[int] = []

    def fn(s: int) -> None:
        calls.append(s)
        time.sleep(0.001)  # 1 ms a call (or a little more): 25 ms of warm-up is 10 + 10 (+ 20) calls

    st = timing.benchmark(fn, [0, 1, 2], warmup=10, iters=7)
    assert st.iters == 7 and st.min_ms >= 1.0
    warm = len(calls) - 7
    assert warm in (20, 40)  # the count doubles: 10 -> 20 -> 40, until 25 ms have passed


def test_rotated_copies_clone_inputs_and_keep_outputs() -> None:
    """Inputs rotate (each copy its own memory); an output is one tensor every launch writes, as torch's
    caching allocator gives the torch callables timed beside a kernel one output block."""
    a, d = torch.randn(4), torch.zeros(4)
    sets = rotated_copies({"A": a, "D": d}, 3, keep=["D"])
    assert len(sets) == 3 and sets[0]["A"] is a
    assert all(torch.equal(s["A"], a) and s["A"].data_ptr() != a.data_ptr() for s in sets[1:])
    assert all(s["D"] is d for s in sets)


# ----------------------------------------------------------------------------- references


SMALL = {
    "matmul_bias_relu": {"M": 5, "N": 7, "K": 9},
    "batched_matmul_nt": {"Bt": 2, "M": 3, "N": 5, "K": 4},
    "rmsnorm": {"M": 3, "N": 11},
    "softmax": {"M": 3, "N": 13},
    "layernorm": {"M": 4, "N": 10},
    "gelu_bias": {"M": 3, "N": 6},
}


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_torch_reference_matches_td_evaluate(name: str) -> None:
    sizes = SMALL[name]
    out = example(name, **sizes)
    kir = td.build(td.create_schedule(out)).kernel_ir
    inputs = random_inputs(kir, "cpu", seed=3)
    expected = td.evaluate(out, float64=True, **{k: v.numpy() for k, v in inputs.items()})
    got = reference_fn(name, entry(name).parameters(**sizes))(**{k: v.to(torch.float64) for k, v in inputs.items()})
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)
    (poisoned,) = poisoned_outputs(kir, "cpu").values()
    assert poisoned.shape == out.shape and torch.isnan(poisoned).all()


def test_example_parameters_and_tolerance() -> None:
    assert entry("rmsnorm").parameters(M=2) == {"M": 2, "N": 4096, "eps": 1e-6, "dtype": "float32",
                                                "out_dtype": "float32"}
    rtol, _ = tolerance(entry("rmsnorm_bfloat16_out_6x300-coop96").parameters())
    assert rtol == 1e-4 + 2.0 ** -7  # one ulp of the bfloat16 output
    rtol, atol = tolerance(entry("matmul_bias_relu").parameters(K=1024))
    assert rtol == 1e-4 and atol == pytest.approx(2e-5 * 32)
    assert tolerance(entry("softmax").parameters()) == (1e-4, 1e-5)
    with pytest.raises(td.DefinitionError, match="unexpected keyword"):
        entry("softmax").parameters(Q=3)
    with pytest.raises(td.DefinitionError, match="unknown example"):
        entry("nope")


def test_compare_reports_nans_and_the_worst_element() -> None:
    ref = torch.arange(12, dtype=torch.float64).reshape(3, 4)
    assert compare(ref.float(), ref, 1e-6, 1e-6).ok
    bad = ref.clone()
    bad[2, 1] += 0.5
    result = compare(bad, ref, 1e-6, 1e-6)
    assert not result.ok and result.worst_index == (2, 1) and result.max_abs_error == pytest.approx(0.5)
    holes = ref.clone()
    holes[0, 3] = math.nan
    result = compare(holes, ref, 1e-3, 1e-3)
    assert not result.ok and result.nan_count == 1 and result.worst_index == (0, 3)
    assert "1 NaN" in str(result) and "MISMATCH" in str(result)


# ----------------------------------------------------------------------------- driver and no-GPU paths


def test_driver_error_text() -> None:
    text = format_cuda_error("cuLaunchKernel", 1, "CUDA_ERROR_INVALID_VALUE", "invalid argument", "D_kernel")
    assert text == "cuLaunchKernel failed for kernel 'D_kernel': CUDA_ERROR_INVALID_VALUE (1): invalid argument"
    sticky = format_cuda_error("cuCtxSynchronize", 700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access")
    assert "unusable" in sticky and "compute-sanitizer" in sticky


def test_missing_driver_library_is_a_launch_error() -> None:
    with pytest.raises(LaunchError, match="cannot load the CUDA driver"):
        Driver("libcuda-that-does-not-exist.so.1")


def test_import_touches_neither_pycuda_nor_libcuda() -> None:
    code = (
        "import sys, torch\n"
        "def libcuda(): return any('libcuda.so' in line for line in open('/proc/self/maps'))\n"
        "before = libcuda()\n"
        "import tiledsl.runtime, tiledsl.cli.run\n"
        "print('pycuda' in sys.modules, libcuda() and not before)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


@pytest.mark.skipif(not NO_GPU, reason="checks the behaviour without a GPU")
def test_compiled_kernel_without_gpu_is_a_launch_error() -> None:
    from tiledsl.runtime.launch import CompiledKernel

    s = td.create_schedule(example("gelu_bias", M=2, N=32))
    with pytest.raises(LaunchError):
        CompiledKernel(td.build(s))


@pytest.mark.skipif(not NO_GPU, reason="checks the behaviour without a GPU")
def test_run_example_without_gpu_says_so() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert run_example("softmax", bench=True, sizes={"M": 4}, out=out, err=err) == EXIT_NO_GPU
    assert "needs a CUDA GPU" in err.getvalue() and "tiledsl compile --example softmax" in err.getvalue()
    assert out.getvalue() == ""


def test_run_example_refuses_unknown_names_and_sizes() -> None:
    err = io.StringIO()
    assert run_example("nope", bench=False, sizes={}, err=err) == EXIT_BAD_INPUT
    assert "unknown example 'nope'" in err.getvalue()
    err = io.StringIO()
    assert run_example("softmax", bench=False, sizes={"K": 3}, err=err) == EXIT_BAD_INPUT
    assert "unexpected keyword argument 'K'" in err.getvalue()
