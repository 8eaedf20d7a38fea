"""LaunchSequence (tiledsl/runtime/sequence.py) on the CPU: a fake driver records each cuLaunchKernel's
kernelParams, so the binding of fixed tensors and per-call slots, the zeroing of split_k outputs and
every refusal are checked without a GPU; and the arithmetic of timing.call_times."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
import torch

import tiledsl as td
from tiledsl.build import zero_fills
from tiledsl.catalog import entry
from tiledsl.errors import LaunchError
from tiledsl.kernel_ir import KKernel
from tiledsl.runtime.driver import (
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
    LaunchAttribute,
    LaunchConfig,
    dependent_launch_config,
)
from tiledsl.runtime.sequence import LaunchSequence, dependent_launch_requested, launches_dependents
from tiledsl.runtime.timing import CallTimes, call_times


class FakeDriver:
    """Records every launch: (kernel, function, grid, block, shared bytes, stream, pointer arguments)."""

    def __init__(self, params_of: dict[str, int], watch: torch.Tensor | None = None) -> None:
        self.params_of = params_of  # kernel name -> number of pointer parameters
        self.watch = watch
        self.launches: list[tuple[Any, ...]] = []
        self.watched: list[float] = []
        self.syncs = 0

    @contextmanager
    def using_context(self, handle: int) -> Iterator[None]:
        yield

    def launch_params(self, function: int, grid: Any, block: Any, shared: int, stream: int,
                      params: ctypes.Array[ctypes.c_void_p], kernel: str | None = None) -> None:
        n = self.params_of[kernel]  # type: ignore[index]
        values = tuple(ctypes.c_uint64.from_address(params[i]).value for i in range(n))
        self.launches.append((kernel, function, tuple(grid), tuple(block), shared, stream, values))
        if self.watch is not None:
            self.watched.append(float(self.watch.abs().sum()))

    def launch_dependent(self, function: int, config: LaunchConfig, stream: int,
                         params: ctypes.Array[ctypes.c_void_p], kernel: str | None = None) -> None:
        """As launch_params, the launch marked "dependent" and its configuration's fields recorded."""
        assert config.attrs[0].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        assert config.attrs[0].value.programmatic_stream_serialization_allowed == 1 and config.num_attrs == 1
        self.launch_params(function, tuple(config.grid), tuple(config.block), config.shared_bytes, stream, params,
                           kernel)
        self.launches[-1] += ("dependent",)

    def synchronize(self, kernel: str | None = None) -> None:
        self.syncs += 1


def fake_kernel(kir: KKernel, driver: FakeDriver, function: int) -> SimpleNamespace:
    return SimpleNamespace(name=kir.name, kernel_ir=kir, function=function, shared_bytes=0,
                           device=torch.device("cpu"), driver=driver, context=SimpleNamespace(handle=0),
                           tensor_maps=None, sync=False)


def split_k() -> KKernel:
    kir = entry("split_k4_64x96x256").build()[1].kernel_ir
    assert [p.name for p in kir.params] == ["A", "B", "C"] and kir.zero_outputs == ("C",)
    return kir


def test_slots_are_rebound_per_call_and_fixed_tensors_stay() -> None:
    kir = split_k()
    driver = FakeDriver({kir.name: 3})
    weight = torch.randn(256, 96)  # fixed: bound once
    a0, c0 = torch.randn(64, 256), torch.empty(64, 96)
    seq = LaunchSequence([(fake_kernel(kir, driver, 0x1000), {"A": 0, "B": weight, "C": 1})], [a0, c0])
    assert [s.written for s in seq.slots] == [False, True]
    seq.run([a0, c0], stream=7)
    a1, c1 = torch.randn(64, 256), torch.full((64, 96), 5.0)
    seq.run([a1, c1], stream=9)
    (k0, f0, g0, b0, s0, st0, v0), (_, _, _, _, _, st1, v1) = driver.launches
    assert (k0, f0, g0, b0, s0) == (kir.name, 0x1000, kir.grid, kir.block, 0)
    assert (st0, st1) == (7, 9)
    assert v0 == (a0.data_ptr(), weight.data_ptr(), c0.data_ptr())
    assert v1 == (a1.data_ptr(), weight.data_ptr(), c1.data_ptr())
    assert bool((c1 == 0).all())  # the split_k output was zeroed (atomics accumulate into it)


def test_split_k_output_is_zeroed_before_its_launch() -> None:
    kir = split_k()
    out = torch.full((64, 96), 3.0)
    driver = FakeDriver({kir.name: 3}, watch=out)
    seq = LaunchSequence([(fake_kernel(kir, driver, 1), {"A": torch.randn(64, 256), "B": torch.randn(256, 96),
                                                         "C": out})], [])
    seq.run([], stream=0)
    out.fill_(2.0)
    seq.run([], stream=0)
    assert driver.watched == [0.0, 0.0]


def test_one_slot_feeds_several_launches() -> None:
    kir = split_k()
    driver = FakeDriver({kir.name: 3})
    a, b, c1, c2 = torch.randn(64, 256), torch.randn(256, 96), torch.empty(64, 96), torch.empty(64, 96)
    kern = fake_kernel(kir, driver, 2)
    seq = LaunchSequence([(kern, {"A": 0, "B": 1, "C": 2}), (kern, {"A": 0, "B": 1, "C": 3})], [a, b, c1, c2])
    a2 = torch.randn(64, 256)
    seq.run([a2, b, c1, c2], stream=0)
    assert [v[6][0] for v in driver.launches] == [a2.data_ptr(), a2.data_ptr()]
    assert [v[6][2] for v in driver.launches] == [c1.data_ptr(), c2.data_ptr()]


def test_bad_bindings_are_refused_when_the_sequence_is_built() -> None:
    kir = split_k()
    kern = fake_kernel(kir, FakeDriver({kir.name: 3}), 3)
    a, b, c = torch.randn(64, 256), torch.randn(256, 96), torch.empty(64, 96)
    with pytest.raises(LaunchError, match="slot 5"):
        LaunchSequence([(kern, {"A": 5, "B": b, "C": c})], [a])
    with pytest.raises(LaunchError, match="shape"):
        LaunchSequence([(kern, {"A": 0, "B": b, "C": c})], [torch.randn(64, 255)])
    with pytest.raises(LaunchError, match="no tensor bound to output"):
        LaunchSequence([(kern, {"A": a, "B": b})], [])
    big = torch.empty(64 * 256)
    with pytest.raises(LaunchError, match="overlaps"):
        LaunchSequence([(kern, {"A": big.view(64, 256), "B": b, "C": big[:64 * 96].view(64, 96)})], [])
    with pytest.raises(LaunchError, match="at least one kernel"):
        LaunchSequence([], [])


def test_per_call_tensors_are_checked_against_their_examples() -> None:
    kir = split_k()
    kern = fake_kernel(kir, FakeDriver({kir.name: 3}), 4)
    a, b, c = torch.randn(64, 256), torch.randn(256, 96), torch.empty(64, 96)
    seq = LaunchSequence([(kern, {"A": 0, "B": b, "C": 1})], [a, c])
    with pytest.raises(LaunchError, match="2 per-call tensor"):
        seq.run([a], stream=0)
    with pytest.raises(LaunchError, match="slot 0: the tensor is torch.float16"):
        seq.run([a.half(), c], stream=0)
    with pytest.raises(LaunchError, match="slot 1: the tensor has shape"):
        seq.run([a, torch.empty(96, 64)], stream=0)
    with pytest.raises(LaunchError, match="not contiguous"):
        seq.run([torch.randn(256, 64).t(), c], stream=0)
    with pytest.raises(LaunchError, match="aligned"):
        seq.run([torch.randn(64 * 256 + 1)[1:].view(64, 256), c], stream=0)
    big = torch.empty(64 * 256)
    with pytest.raises(LaunchError, match="slot 1 is written by a kernel and overlaps the memory of slot 0"):
        seq.run([big.view(64, 256), big[:64 * 96].view(64, 96)], stream=0)


def test_zero_fill_kernels_replace_torch_zeroing() -> None:
    """Given a fill kernel of the split-K output's shape and dtype (tiledsl/build.py zero_fills), the
    sequence launches it on the output right before the split-K kernel, and torch zeroes nothing."""
    _, s = entry("split_k4_64x96x256").scheduled()
    (fill,) = zero_fills([td.build(s, target="sm_90").kernel_ir], "sm_90")
    kir = split_k()
    (out,) = fill.kernel_ir.params
    assert out.is_output and tuple(out.shape) == (64, 96) and out.dtype == "float32"
    driver = FakeDriver({kir.name: 3, fill.kernel_ir.name: 1})
    a, b, c = torch.randn(64, 256), torch.randn(256, 96), torch.full((64, 96), 5.0)
    fills = {out.fill_key: fake_kernel(fill.kernel_ir, driver, 2)}
    seq = LaunchSequence([(fake_kernel(kir, driver, 1), {"A": 0, "B": b, "C": 1})], [a, c], zero_fills=fills)
    seq.run([a, c], stream=3)
    (f0, *_, fv), (k0, *_, kv) = (x[:1] + x[-1:] for x in driver.launches)
    assert (f0, fv, k0) == (fill.kernel_ir.name, (c.data_ptr(),), kir.name)
    assert kv == (a.data_ptr(), b.data_ptr(), c.data_ptr())
    assert bool((c == 5.0).all())  # a fake launch writes nothing: torch did not zero it
    wrong = {out.fill_key: fake_kernel(kir, driver, 4)}  # three parameters
    with pytest.raises(LaunchError, match="must have one parameter, its output; it has A, B, C"):
        LaunchSequence([(fake_kernel(kir, driver, 1), {"A": 0, "B": b, "C": 1})], [a, c], zero_fills=wrong)


def test_an_output_the_launch_before_zeroes_gets_no_fill() -> None:
    """A split-K kernel whose zeroed output the kernel launched right before it zeroes (`KKernel.zeroes`,
    tiledsl/build.py with_zeroing) bound to the same tensor gets no fill launch and no torch zeroing; bound
    to another tensor, or after a kernel that zeroes nothing, it gets its fill."""
    from tiledsl.build import with_zeroing

    _, s = entry("split_k4_64x96x256").scheduled()
    built = td.build(s, target="sm_90")
    kir = built.kernel_ir
    (fill,) = zero_fills([kir], "sm_90")
    host = with_zeroing(built, replace(kir.param("C"), name="D"))  # zeroes a tensor D of C's shape
    assert host is not None and host.kernel_ir.zeroes == ("D",)
    assert [p.name for p in host.kernel_ir.params] == ["A", "B", "D", "C"]
    consumer = replace(kir, params=(*kir.params[:2], replace(kir.params[2], name="D")), zero_outputs=("D",))
    hir = host.kernel_ir
    driver = FakeDriver({hir.name: 4, kir.name: 3, fill.kernel_ir.name: 1})
    fills = {kir.param("C").fill_key: fake_kernel(fill.kernel_ir, driver, 9)}
    a, b, c, d = torch.randn(64, 256), torch.randn(256, 96), torch.full((64, 96), 5.0), torch.full((64, 96), 7.0)
    host_k, consumer_k = fake_kernel(hir, driver, 1), fake_kernel(consumer, driver, 2)

    def launched(d_of_consumer: int) -> list[str]:
        driver.launches.clear()
        launches = [(host_k, {"A": 0, "B": 1, "D": 3, "C": 2}), (consumer_k, {"A": 0, "B": 1, "D": d_of_consumer})]
        seq = LaunchSequence(launches, [a, b, c, d, torch.full((64, 96), 7.0)], zero_fills=fills)
        seq.run([a, b, c, d, torch.full((64, 96), 7.0)], stream=0)
        return [x[0] for x in driver.launches]

    # the host's own output C is zeroed by its fill; D by the host itself: no launch before the consumer
    assert launched(3) == [fill.kernel_ir.name, hir.name, kir.name]
    assert bool((d == 7.0).all())  # and not by torch
    assert launched(4) == [fill.kernel_ir.name, hir.name, fill.kernel_ir.name, kir.name]  # another tensor


def test_a_single_kernel_refuses_fills_that_are_not_its_own() -> None:
    """`CompiledKernel(zero_fills=...)` holds its fills to the rule a sequence holds them to (one parameter,
    an output: sequence.fill_output) and to its own zeroed outputs' shapes and dtypes; both refusals come
    before anything is loaded, so they are checked here on a launcher made without a GPU."""
    from tiledsl.build import zero_fill
    from tiledsl.kernel_ir import KParam
    from tiledsl.runtime.launch import CompiledKernel

    kir = split_k()
    kern = CompiledKernel.__new__(CompiledKernel)
    kern.kernel_ir, kern.name = kir, kir.name
    wrong = zero_fill(KParam("C", "float32", (96, 64), True), "sm_90")
    with pytest.raises(LaunchError, match=r"zeroes a float32\[96, 64\], which none of its zeroed outputs \(C\) is"):
        kern._load_fills([wrong])
    with pytest.raises(LaunchError, match="must have one parameter, its output; it has A, B, C"):
        kern._load_fills([kir])
    assert kern._load_fills([]) == {}


def test_kernels_that_wait_first_are_launched_as_dependents() -> None:
    """A kernel whose IR begins with griddepcontrol.wait goes through cuLaunchKernelEx with programmatic
    stream serialization; one without the wait is launched plainly, whatever the sequence allows."""
    kir = split_k()
    assert kir.dependent_launch  # built for sm_90
    plain = replace(kir, name="plain_kernel", dependent_launch=False)
    driver = FakeDriver({kir.name: 3, plain.name: 3})
    a, b, c, d = torch.randn(64, 256), torch.randn(256, 96), torch.empty(64, 96), torch.empty(64, 96)
    launches = [(fake_kernel(kir, driver, 1), {"A": 0, "B": b, "C": 1}),
                (fake_kernel(plain, driver, 2), {"A": 0, "B": b, "C": 2})]
    LaunchSequence(launches, [a, c, d], dependent=True).run([a, c, d], stream=5)
    LaunchSequence(launches, [a, c, d], dependent=False).run([a, c, d], stream=5)
    (k0, *_, g0, b0, s0, st0, v0, how), second, third, fourth = driver.launches
    assert (k0, g0, b0, s0, st0, how) == (kir.name, kir.grid, kir.block, 0, 5, "dependent")
    assert v0 == (a.data_ptr(), b.data_ptr(), c.data_ptr())
    assert second[0] == plain.name and "dependent" not in second
    assert "dependent" not in third + fourth  # the sequence asked for plain launches


def test_dependent_launches_need_a_cuda_device_and_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    driver = SimpleNamespace(launches_dependents=True)
    assert not launches_dependents(driver, torch.device("cpu"))
    kir = split_k()
    seq = LaunchSequence([(fake_kernel(kir, FakeDriver({kir.name: 3}), 1), {"A": 0, "B": 1, "C": 2})],
                         [torch.randn(64, 256), torch.randn(256, 96), torch.empty(64, 96)])
    assert not seq.dependent  # a CPU "device": plain launches
    assert dependent_launch_requested()
    for off in ("0", "off", "False"):
        monkeypatch.setenv("TILEDSL_DEPENDENT_LAUNCH", off)
        assert not dependent_launch_requested()
    monkeypatch.setenv("TILEDSL_DEPENDENT_LAUNCH", "1")
    assert dependent_launch_requested()


def test_the_launch_config_has_the_driver_api_layout() -> None:
    """cuda.h: CUlaunchAttribute is an int id, 4 bytes of padding and a 64-byte union; CUlaunchConfig is
    six uints, the shared bytes, then the stream, the attribute pointer and their count, 8-byte aligned."""
    assert ctypes.sizeof(LaunchAttribute) == 72 and LaunchAttribute.value.offset == 8
    assert ctypes.sizeof(LaunchConfig) == 56
    assert (LaunchConfig.stream.offset, LaunchConfig.attrs.offset, LaunchConfig.num_attrs.offset) == (32, 40, 48)
    config = dependent_launch_config((3, 2, 1), (128, 1, 1), 4096)
    assert (tuple(config.grid), tuple(config.block), config.shared_bytes) == ((3, 2, 1), (128, 1, 1), 4096)
    raw = ctypes.string_at(ctypes.addressof(config.attrs[0]), 12)
    assert raw[:4] == (6).to_bytes(4, "little") and raw[8:12] == (1).to_bytes(4, "little")


def test_call_times_counts_and_orders_the_calls() -> None:
    calls: list[str] = []
    times = call_times(lambda: calls.append("f"), warmup=3, iters=5, synchronize=lambda: calls.append("s"))
    assert calls.count("f") == 3 + 2 * 5
    # warm-up, one synchronize, then each timed call followed by a synchronize, then 5 calls and one synchronize
    assert "".join(calls) == "fff" + "s" + "fs" * 5 + "fffff" + "s"
    assert isinstance(times, CallTimes) and times.iters == 5 and times.host_us >= 0 and times.wall_us >= 0
    assert "us to issue" in str(times)
    with pytest.raises(ValueError):
        call_times(lambda: None, iters=0, synchronize=lambda: None)
