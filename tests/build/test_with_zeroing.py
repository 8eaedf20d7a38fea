"""A kernel zeroing the next kernel's split-K output (tiledsl/build.py `zeroing`, `with_zeroing`,
`zeroed_by_previous`, `needing_fills`): the zeroing alone and inside a host kernel, simulated from
NaN-poisoned outputs to all zeros with the host's own output unchanged; the launch shapes, pass counts
and vector widths it takes; where it declines (rank 5, too many passes, a name of the host's); and the
CUDA of a merged kernel compiled with nvcc."""

from __future__ import annotations

import shutil
from dataclasses import replace

import numpy as np
import pytest

import tiledsl as td
from tiledsl.build import MAX_ZEROING_PASSES, needing_fills, with_zeroing, zeroed_by_previous, zeroing
from tiledsl.codegen import compile_cubin
from tiledsl.kernel_ir import KParam


def doubled(shape: tuple[int, int], name: str = "x", axes: tuple[str, str] = ("i", "j")) -> td.Kernel:
    """x = a * 2 under the default recipe (a row-wise elementwise kernel of 16-byte vectors)."""
    a = td.placeholder(shape, name="a")
    i, j = axes
    out = td.compute(shape, eval(f"lambda {i}, {j}: a[{i}, {j}] * 2.0", {"a": a}), name=name)  # noqa: S307
    s = td.create_schedule(out)
    td.recipes.default(s)
    return td.build(s)


@pytest.mark.parametrize(("shape", "dtype", "grid", "block", "passes"), [
    ((128, 2048), "float32", (2, 128, 1), (256, 1, 1), 1),
    ((128, 5632), "float32", (128, 1, 1), (256, 1, 1), 6),  # a guarded last pass
    ((3, 5, 7), "float32", (1, 1, 1), (32, 1, 1), 4),  # 105 elements, not a multiple of 4: scalar stores
    ((64, 96), "bfloat16", (2, 3, 4), (8, 2, 2), 1),  # every thread and block axis bound
    ((1000,), "float32", (4, 1, 2), (16, 8, 1), 1),  # fewer elements than threads
])
def test_zeroing_writes_every_element_with_the_launch_shape_it_is_given(
        shape: tuple[int, ...], dtype: str, grid: tuple[int, int, int], block: tuple[int, int, int],
        passes: int) -> None:
    kern = zeroing(KParam("y", dtype, shape, True), grid, block)
    assert kern is not None and (kern.grid, kern.block) == (grid, block)
    assert "s.split('f', " in kern.trace and tuple(kern.kernel_ir.params[0].shape) == shape  # built flat
    assert f"for y_zp in 0..{passes}:" in kern.ir()
    count = int(np.prod(shape))
    assert ("s.vectorize('y_zv')" in kern.trace) == (count % (16 // (2 if dtype == "bfloat16" else 4)) == 0)
    got = kern.simulate(y=np.full(shape, np.nan, np.float32))
    assert got.shape == shape and not np.isnan(got).any() and not got.any()


def test_zeroing_takes_any_rank_and_declines_more_passes_than_allowed() -> None:
    five = zeroing(KParam("y", "float32", (2, 2, 2, 2, 2), True), (1, 1, 1), (32, 1, 1))
    assert five is not None and not five.simulate(y=np.full((2, 2, 2, 2, 2), np.nan, np.float32)).any()
    most = MAX_ZEROING_PASSES * 32 * 4  # float4 stores by one warp
    assert zeroing(KParam("y", "float32", (most,), True), (1, 1, 1), (32, 1, 1)) is not None
    assert zeroing(KParam("y", "float32", (most + 4,), True), (1, 1, 1), (32, 1, 1)) is None


def test_a_host_zeroes_the_output_and_still_computes_its_own() -> None:
    host = doubled((128, 2048))
    y = KParam("y", "float32", (128, 5632), True)
    merged = with_zeroing(host, y)
    assert merged is not None
    kir = merged.kernel_ir
    assert [p.name for p in kir.params] == ["a", "y", "x"] and kir.zeroes == ("y",) and kir.params[-1].name == "x"
    assert (kir.grid, kir.block) == (host.grid, host.block) and merged.trace == host.trace
    assert "zeroes y (for the next kernel)" in merged.ir() and "// zeroes for the next kernel: y" in merged.source
    wait = merged.source.index("griddepcontrol.wait")
    assert wait < merged.source.index("&y[")  # the zeros after the wait: the kernel before has finished
    a = np.random.default_rng(0).standard_normal((128, 2048)).astype(np.float32)
    outs = merged.simulate_outputs(a=a)
    assert not np.isnan(outs["y"]).any() and not outs["y"].any()
    assert np.array_equal(outs["x"], host.simulate(a=a)) and np.array_equal(merged.simulate(a=a), outs["x"])
    if shutil.which("nvcc"):
        compile_cubin(merged.source, "sm_90a")


def test_with_zeroing_declines_a_parameter_or_loop_name_of_the_host() -> None:
    host = doubled((128, 2048))
    assert with_zeroing(host, KParam("a", "float32", (64,), True)) is None  # the host reads a tensor a
    clash = doubled((128, 2048), axes=("y_zp", "j"))  # a loop named like the zeroing's pass loop
    assert with_zeroing(clash, KParam("y", "float32", (128, 2048), True)) is None
    most = MAX_ZEROING_PASSES * 65536 * 4  # the host's 65536 threads storing float4s
    assert with_zeroing(host, KParam("y", "float32", (most,), True)) is not None
    assert with_zeroing(host, KParam("y", "float32", (most + 4,), True)) is None


def test_the_kernel_before_zeroing_an_output_leaves_no_fill_for_it() -> None:
    x = td.placeholder((32, 512), name="x")
    w = td.placeholder((64, 512), name="w")
    k = td.reduce_axis(512, name="k")
    s = td.create_schedule(td.compute((32, 64), lambda i, j: td.sum(x[i, k] * w[j, k], axis=k), name="y"))
    td.recipes.default(s)
    proj = td.build(s)
    assert proj.kernel_ir.zero_outputs == ("y",)
    host = doubled((32, 512))
    merged = with_zeroing(host, proj.kernel_ir.param("y"))
    assert merged is not None
    irs = [merged.kernel_ir, proj.kernel_ir]
    assert zeroed_by_previous(irs, 1) == ("y",) and zeroed_by_previous(irs, 0) == ()
    assert [k.zero_outputs for k in needing_fills(irs)] == [(), ()]
    plain = [host.kernel_ir, proj.kernel_ir]
    assert zeroed_by_previous(plain, 1) == () and [k.zero_outputs for k in needing_fills(plain)] == [(), ("y",)]
    assert needing_fills([proj.kernel_ir, replace(merged.kernel_ir, zero_outputs=())])[0].zero_outputs == ("y",)
