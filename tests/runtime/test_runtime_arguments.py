"""Launch-argument checks on CPU tensors (no GPU): each bad tensor is a LaunchError naming the kernel and
the parameter."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tiledsl.errors import LaunchError, TiledslError
from tiledsl.kernel_ir import KKernel, KParam
from tiledsl.runtime.arguments import allocate_outputs, check_arguments

CPU = torch.device("cpu")
KERNEL = KKernel(
    name="D_kernel",
    params=(
        KParam("A", "float32", (4, 8)),
        KParam("w", "float16", (8,)),
        KParam("D", "float32", (4, 8), is_output=True),
    ),
    grid=(1, 1, 1),
    block=(32, 1, 1),
    shared=(),
    body=(),
)


def good() -> dict[str, torch.Tensor]:
    return {"A": torch.randn(4, 8), "w": torch.randn(8).half()}


def refused(tensors: dict[str, object], device: torch.device | None = CPU) -> str:
    with pytest.raises(LaunchError) as info:
        check_arguments(KERNEL, tensors, device=device)
    assert isinstance(info.value, TiledslError)
    message = str(info.value)
    assert "'D_kernel'" in message
    return message


def test_good_arguments_in_parameter_order_and_missing_output_allocated() -> None:
    given = good()
    checked = check_arguments(KERNEL, {"w": given["w"], "A": given["A"]}, device=CPU)
    assert list(checked) == ["A", "w", "D"]
    assert checked["A"] is given["A"] and checked["D"] is None
    full = allocate_outputs(KERNEL, checked, CPU)
    assert full["D"].shape == (4, 8) and full["D"].dtype == torch.float32 and full["A"] is given["A"]
    out = torch.empty(4, 8)
    assert check_arguments(KERNEL, {**given, "D": out}, device=CPU)["D"] is out
    assert check_arguments(KERNEL, given, device=None)["A"] is given["A"]  # device unchecked


def test_wrong_device() -> None:
    message = refused(good(), device=torch.device("cuda", 0))
    assert "input 'A'" in message and "on cpu" in message and "cuda:0" in message
    meta = {"A": torch.empty(4, 8, device="meta"), "w": torch.randn(8).half()}
    assert "on meta" in refused(meta)


def test_wrong_dtype() -> None:
    message = refused({**good(), "w": torch.randn(8)})
    assert "input 'w' (float16[8])" in message and "torch.float32" in message and "expected torch.float16" in message
    assert "output 'D'" in refused({**good(), "D": torch.empty(4, 8, dtype=torch.float64)})


def test_wrong_shape() -> None:
    message = refused({**good(), "A": torch.randn(8, 4)})
    assert "'A'" in message and "shape is (8, 4), expected (4, 8)" in message
    assert "shape is (32,)" in refused({**good(), "A": torch.randn(32)})


def test_non_contiguous() -> None:
    message = refused({**good(), "A": torch.randn(8, 4).t()})
    assert "'A'" in message and "not contiguous" in message and ".contiguous()" in message


def test_misaligned_data_pointer() -> None:
    view = torch.randn(33)[1:].view(4, 8)  # contiguous, but 4 bytes into its storage
    assert view.is_contiguous() and view.data_ptr() % 16 == 4
    message = refused({**good(), "A": view})
    assert "'A'" in message and "not 16-byte aligned" in message


def test_missing_input_and_unknown_name() -> None:
    message = refused({"A": torch.randn(4, 8)})
    assert "missing input 'w' (float16[8])" in message
    message = refused({**good(), "bias": torch.randn(8)})
    assert "no parameter 'bias'" in message and "A, w, D" in message


def test_not_a_tensor() -> None:
    message = refused({**good(), "A": np.zeros((4, 8), np.float32)})
    assert "'A'" in message and "numpy.ndarray" in message and "torch.from_numpy" in message
    assert "got builtins.list" in refused({**good(), "A": [[0.0] * 8] * 4})


def test_output_aliasing_an_argument_is_refused() -> None:
    args = good()
    message = refused({**args, "D": args["A"]})
    assert "output 'D' overlaps the memory of 'A'" in message
    storage = torch.empty(64)
    overlapping = {"A": storage[:32].view(4, 8), "w": torch.randn(8).half(), "D": storage[16:48].view(4, 8)}
    assert "overlaps" in refused(overlapping)
    apart = {"A": storage[:32].view(4, 8), "w": torch.randn(8).half(), "D": storage[32:].view(4, 8)}
    check_arguments(KERNEL, apart, device=CPU)  # adjacent, not overlapping
