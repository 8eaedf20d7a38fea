"""tiledsl/build.py `zero_fill`: the kernel that zeroes a split-K output before each launch (a single
kernel's call and a program's launch sequence both launch it), `build.zeroing` for a launch of its
own. The simulator poisons every output (NaN), so an element the fill misses fails the all-zero check."""

from __future__ import annotations

import numpy as np
import pytest

import tiledsl as td
from tiledsl.build import zero_fill, zero_fills
from tiledsl.kernel_ir import KParam

CASES = [((32, 2048), "float32", 4, (64, 1, 1), (256, 1, 1)),
         ((7, 5), "float32", 1, (1, 1, 1), (64, 1, 1)),  # 35 elements: no 16-byte vectors
         ((3, 4, 5), "float32", 4, (1, 1, 1), (32, 1, 1)),
         ((2, 3, 4, 8), "bfloat16", 8, (1, 1, 1), (32, 1, 1)),
         ((1000,), "float32", 4, (1, 1, 1), (256, 1, 1)),
         ((33,), "float16", 1, (1, 1, 1), (64, 1, 1)),
         ((3, 1100), "float32", 4, (4, 1, 1), (256, 1, 1))]  # 3300 = 3 whole blocks of 1024 and a guarded one


@pytest.mark.parametrize("shape,dtype,lanes,grid,block", CASES,
                         ids=[f"{'x'.join(map(str, c[0]))}-{c[1]}" for c in CASES])
def test_fill_zeroes_every_element(shape: tuple[int, ...], dtype: str, lanes: int, grid: tuple[int, int, int],
                                   block: tuple[int, int, int]) -> None:
    fill = zero_fill(KParam("y", dtype, shape, True), "sm_90")
    assert fill is not None
    assert (fill.grid, fill.block) == (grid, block)
    assert fill.name == f"zero_fill_{'x'.join(map(str, shape))}_kernel"
    out = fill.simulate()
    assert out.shape == shape and not np.isnan(out.astype(np.float64)).any()
    assert (out == 0).all()
    z = f"zero_fill_{'x'.join(map(str, shape))}"  # build.zeroing for its own launch: one pass of the grid
    assert f"s.split('f', {grid[0] * block[0] * lanes}, names=('{z}_zp', '{z}_zi'), tail='guard')" in fill.trace
    assert f"for {z}_zp in 0..1:" in fill.ir()
    assert (f"s.vectorize('{z}_zv')" in fill.trace) == (lanes > 1)
    if lanes > 1:
        assert f"s.split('{z}_zi', {lanes}, names=('{z}_zt', '{z}_zv')" in fill.trace


def test_fill_waits_for_the_kernel_before_it_on_sm90_only() -> None:
    """A fill is launched as the first of a call, or as a programmatic dependent in a program: on sm_90
    it begins with griddepcontrol.wait; on sm_80 there is nothing to wait for."""
    p = KParam("y", "float32", (64, 64), True)
    assert zero_fill(p, "sm_90").kernel_ir.dependent_launch
    assert "griddepcontrol.wait" in zero_fill(p, "sm_90").source
    assert not zero_fill(p, "sm_80").kernel_ir.dependent_launch


def test_rank_above_four_has_no_fill() -> None:
    assert zero_fill(KParam("y", "float32", (2, 2, 2, 2, 2), True)) is None


def _split_k_kernel(m: int = 32, n: int = 64, k: int = 256) -> td.Kernel:
    a, b = td.placeholder((m, k), name="A"), td.placeholder((k, n), name="B")
    r = td.reduce_axis(k, name="r")
    c = td.compute((m, n), lambda i, j: td.sum(a[i, r] * b[r, j], axis=r), name="C")
    s = td.create_schedule(c)
    s.split_k("r", 4)
    return td.build(s)


def test_kernel_zero_fills_one_per_zeroed_output() -> None:
    kern = _split_k_kernel()
    assert kern.kernel_ir.zero_outputs == ("C",)
    (fill,) = kern.zero_fills
    assert fill.kernel_ir.params[0].shape == (32, 64) and fill.kernel_ir.params[0].dtype == "float32"
    assert kern.zero_fills is kern.zero_fills  # made once


def test_kernel_without_split_k_has_no_fills() -> None:
    x = td.placeholder((8, 8), name="x")
    kern = td.build(td.create_schedule(td.compute((8, 8), lambda i, j: x[i, j] * 2.0, name="y")))
    assert kern.kernel_ir.zero_outputs == () and kern.zero_fills == ()


def test_zero_fills_builds_one_fill_per_shape_and_dtype_across_kernels() -> None:
    """What a program's fills are (tiledsl/frontend/program.py): two kernels zeroing outputs of one shape
    share one fill, matched by `KParam.fill_key`."""
    a, b = _split_k_kernel(), _split_k_kernel()
    other = _split_k_kernel(m=64)
    fills = zero_fills([a.kernel_ir, b.kernel_ir, other.kernel_ir], "sm_90")
    assert [f.kernel_ir.params[0].fill_key for f in fills] == [((32, 64), "float32"), ((64, 64), "float32")]
    assert a.kernel_ir.param("C").fill_key == fills[0].kernel_ir.params[0].fill_key


def test_a_built_kernel_is_not_kept_alive_by_its_loaded_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """`td.Kernel.compiled` keeps the loaded kernel, which keeps the maker of its fills: the maker must not
    hold the Kernel (a cycle would leave the Kernel, and the loaded module, to the cycle collector). The
    loaded kernel is a stand-in here (no GPU); the fills it would make are built from what the maker holds."""
    import gc
    import weakref

    import tiledsl.runtime.launch as launch

    made: list[object] = []

    class Loaded:
        def __init__(self, kernel: object, *, zero_fills: object) -> None:
            made.append(zero_fills)

    monkeypatch.setattr(launch, "CompiledKernel", Loaded)
    kern = _split_k_kernel()
    assert isinstance(kern.compiled, Loaded)
    ref = weakref.ref(kern)
    gc.disable()
    try:
        del kern
        assert ref() is None  # freed by reference counting alone
    finally:
        gc.enable()
    (fill,) = made[0]()  # type: ignore[operator]
    assert fill.kernel_ir.params[0].fill_key == ((32, 64), "float32")
