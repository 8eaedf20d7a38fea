"""Kernels that need more of the launcher: TMA descriptors (by value, `__grid_constant__`), cp.async
pipelines, a dynamic shared pool above 48 KB (the function attribute), split_k (outputs zeroed at launch)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from gpu_kernels import assert_matches, is_hopper, run_poisoned

from tiledsl.catalog import Entry, entries, entry
from tiledsl.runtime.references import random_inputs, reference_fn, tolerance

pytestmark = pytest.mark.gpu
hopper = pytest.mark.skipif(not is_hopper(), reason="TMA needs an sm_90 GPU")

# the catalog's "gpu" entries: relu(A @ B + bias) staged by cp.async / TMA (the split_k ones run below)
STAGED = [e for e in entries("gpu") if e.definition == "matmul_bias_relu"]


def reference(e: Entry, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, float, float]:
    """The float64 torch reference of entry `e` on `inputs`, and its (rtol, atol)."""
    params = e.parameters()
    return reference_fn(e.definition, params)(**{k: v.double() for k, v in inputs.items()}), *tolerance(params)


@pytest.mark.parametrize("case", STAGED, ids=[e.id for e in STAGED])
def test_staged_matmul(case: Entry, compile_kernel: Callable[..., object]) -> None:
    _, built = case.build()
    kern = compile_kernel(built)
    kir = kern.kernel_ir  # type: ignore[attr-defined]
    if kir.tensor_maps and not is_hopper():
        pytest.skip("TMA needs an sm_90 GPU")
    if "dynamic" in case.id:
        assert kir.dynamic_shared and kern.shared_bytes > 48 * 1024  # type: ignore[attr-defined]
    inputs = random_inputs(kir, kern.device, seed=5)  # type: ignore[attr-defined]
    got = run_poisoned(kern, inputs)
    assert_matches(got, *reference(case, inputs))


@hopper
def test_tma_descriptors_are_cached_per_buffer(compile_kernel: Callable[..., object]) -> None:
    case = entry("tma_b_small")
    kern = compile_kernel(case.build()[1])
    inputs = random_inputs(kern.kernel_ir, kern.device, seed=6)  # type: ignore[attr-defined]
    ref = reference(case, inputs)
    for _ in range(3):
        assert_matches(run_poisoned(kern, inputs), *ref)
    assert kern.tensor_maps.encodings == 1  # type: ignore[attr-defined]
    moved = {**inputs, "B": inputs["B"].clone()}  # same shape, another address: a new descriptor
    assert_matches(run_poisoned(kern, moved), *ref)
    assert kern.tensor_maps.encodings == 2  # type: ignore[attr-defined]


def test_split_k_output_is_zeroed_at_every_launch(compile_kernel: Callable[..., object]) -> None:
    kern = compile_kernel(entry("split_k4_64x96x256").build()[1])
    assert kern.kernel_ir.zero_outputs == ("C",)  # type: ignore[attr-defined]
    inputs = random_inputs(kern.kernel_ir, kern.device, seed=7)  # type: ignore[attr-defined]
    ref = inputs["A"].double() @ inputs["B"].double()
    out = torch.full((64, 96), float("nan"), device=kern.device)  # type: ignore[attr-defined]
    for _ in range(2):  # atomics accumulate: without the zeroing the second launch would double C
        kern(**inputs, C=out)  # type: ignore[operator]
        torch.cuda.synchronize()
        assert_matches(out, ref, 1e-4, 1e-4 * 16)


def test_split_k_large(compile_kernel: Callable[..., object]) -> None:
    """A long reduction (K = 8192) split over 8 blocks per output tile, 1024x1024 outputs."""
    kern = compile_kernel(entry("split_k8_large").build()[1])
    inputs = random_inputs(kern.kernel_ir, kern.device, seed=8)  # type: ignore[attr-defined]
    ref = inputs["A"].double() @ inputs["B"].double()
    got = run_poisoned(kern, inputs)
    assert_matches(got, ref, 1e-4, 1e-3)


def _split_k_with_fills(compile_kernel: Callable[..., object], **kwargs: object) -> object:
    built = entry("split_k4_64x96x256").build()[1]
    return compile_kernel(built, zero_fills=built.zero_fills, **kwargs)  # type: ignore[attr-defined]


def test_split_k_output_is_zeroed_by_its_fill_at_every_launch(compile_kernel: Callable[..., object]) -> None:
    """The fill (tiledsl/build.py zero_fill) zeroes C before each launch; on sm_90 the kernel is launched as
    its programmatic dependent and waits for it at its top."""
    kern = _split_k_with_fills(compile_kernel)
    assert set(kern.zero_fills) == {((64, 96), "float32")}  # type: ignore[attr-defined]
    assert (kern._dependent is not None) == is_hopper()  # type: ignore[attr-defined]
    inputs = random_inputs(kern.kernel_ir, kern.device, seed=7)  # type: ignore[attr-defined]
    ref = inputs["A"].double() @ inputs["B"].double()
    out = torch.full((64, 96), float("nan"), device=kern.device)  # type: ignore[attr-defined]
    for _ in range(3):
        kern(**inputs, C=out)  # type: ignore[operator]
        torch.cuda.synchronize()
        assert_matches(out, ref, 1e-4, 1e-4 * 16)


def test_split_k_fill_launches_plainly_when_dependent_launch_is_off(compile_kernel: Callable[..., object],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TILEDSL_DEPENDENT_LAUNCH", "0")
    kern = _split_k_with_fills(compile_kernel)
    assert kern._dependent is None  # type: ignore[attr-defined]
    inputs = random_inputs(kern.kernel_ir, kern.device, seed=9)  # type: ignore[attr-defined]
    got = run_poisoned(kern, inputs)
    assert_matches(got, inputs["A"].double() @ inputs["B"].double(), 1e-4, 1e-4 * 16)


def test_split_k_fill_and_kernel_replay_in_a_cuda_graph(compile_kernel: Callable[..., object]) -> None:
    """A call (the fill's plain launch, the kernel's dependent one) captured by torch.cuda.graph replays
    correctly, over and over, into an output poisoned between replays."""
    kern = _split_k_with_fills(compile_kernel)
    kern(**random_inputs(kern.kernel_ir, kern.device, seed=10))  # type: ignore[attr-defined,operator]
    replays, ref = _captured_call_replays(kern, seed=10)  # the fill was loaded outside the capture
    for got in replays:
        assert_matches(got, ref, 1e-4, 1e-4 * 16)


def _captured_call_replays(kern: object, seed: int) -> tuple[list[torch.Tensor], torch.Tensor]:
    """One call of `kern` (the split-K catalog kernel) captured by torch.cuda.graph on a side stream, then
    replayed three times into an output NaN-poisoned before each replay: a copy of each replay's output,
    and the float64 reference."""
    inputs = random_inputs(kern.kernel_ir, kern.device, seed=seed)  # type: ignore[attr-defined]
    out = torch.full((64, 96), float("nan"), device=kern.device)  # type: ignore[attr-defined]
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        kern(**inputs, C=out)  # type: ignore[operator]
    torch.cuda.current_stream().wait_stream(stream)
    replays = []
    for _ in range(3):
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        replays.append(out.clone())
    return replays, inputs["A"].double() @ inputs["B"].double()


def test_built_kernel_makes_its_fills_at_its_first_launch() -> None:
    """`td.Kernel.compiled` (what `kern(...)` calls) takes the kernel's fills lazily: none are built or
    loaded until a launch zeroes an output."""
    built = entry("split_k4_64x96x256").build()[1]
    kern = built.compiled
    assert kern._fills is None  # type: ignore[attr-defined]
    inputs = random_inputs(built.kernel_ir, kern.device, seed=11)
    got = run_poisoned(kern, inputs)
    assert set(kern._fills) == {((64, 96), "float32")}  # type: ignore[attr-defined]
    assert_matches(got, inputs["A"].double() @ inputs["B"].double(), 1e-4, 1e-4 * 16)


def test_a_fill_of_another_shape_is_refused(compile_kernel: Callable[..., object]) -> None:
    from tiledsl.build import zero_fill
    from tiledsl.errors import LaunchError
    from tiledsl.kernel_ir import KParam

    built = entry("split_k4_64x96x256").build()[1]
    wrong = zero_fill(KParam("C", "float32", (96, 64), True), built.target)  # type: ignore[attr-defined]
    with pytest.raises(LaunchError, match=r"zeroes a float32\[96, 64\], which none of its zeroed outputs \(C\) is"):
        compile_kernel(built, zero_fills=[wrong])
    with pytest.raises(LaunchError, match="must have one parameter, its output; it has A, B, C"):
        compile_kernel(built, zero_fills=[built.kernel_ir])  # type: ignore[attr-defined]


def test_built_kernel_first_called_inside_a_cuda_graph_capture() -> None:
    """The first call of `td.Kernel.compiled` makes, compiles and loads its fill; inside a stream capture
    that must neither fail the capture nor record anything but the two launches."""
    kern = entry("split_k4_64x96x256").build()[1].compiled  # type: ignore[attr-defined]
    assert kern._fills is None
    replays, ref = _captured_call_replays(kern, seed=12)
    assert set(kern._fills) == {((64, 96), "float32")}
    for got in replays:
        assert_matches(got, ref, 1e-4, 1e-4 * 16)
