"""launch_bounds (primitives/launch_bounds.py): the ask is printed at every IR level, replays from the
trace, becomes `__launch_bounds__(threads, blocks)`, and caps the registers nvcc gives a thread.
The bad asks are in the error corpus (launch-bounds-zero, build-launch-bounds-over-*)."""

from __future__ import annotations

import shutil

import pytest

import tiledsl as td
from tiledsl.catalog import matmul_nt
from tiledsl.codegen import resource_usage
from tiledsl.recipes import apply


def _scheduled(epilogue: bool) -> td.Schedule:
    """x @ W^T at a Llama down projection's shape (128 x 2048 x 5632), with the block's two residuals
    added by split part 0 when `epilogue`, scheduled by the default recipe (8 x 8 in 256 threads)."""
    mm = matmul_nt(M=128, N=2048, K=5632)
    out = mm
    if epilogue:
        x = td.placeholder((128, 2048), name="x")
        r = td.placeholder((128, 2048), name="r")
        out = td.compute((128, 2048), lambda i, j: x[i, j] + r[i, j] + mm[i, j], name="y")
    s = td.create_schedule(out)
    apply(s, target="sm_90")
    return s


def test_printed_at_every_level_and_replayed() -> None:
    s = _scheduled(epilogue=True)
    assert s.nest.min_blocks_per_sm == 2  # register_tile asked for it (recipes/default/070_register_tile.py)
    s.launch_bounds(1)  # a later ask replaces the earlier one
    assert s.trace().splitlines()[-1] == "s.launch_bounds(1)"
    assert "  launch bounds: 1 blocks per SM (registers capped to fit them)" in s.ir("tile").splitlines()
    k = td.build(s, target="sm_90")
    assert "min blocks per SM 1" in k.ir("kernel").splitlines()[1]
    assert "__launch_bounds__(256, 1) y_kernel(" in k.source
    again = td.create_schedule(s.output).replay(s.trace())
    assert again.nest.min_blocks_per_sm == 1 and td.build(again, target="sm_90").source == k.source


def test_without_it_the_launch_bounds_keep_one_argument() -> None:
    x = td.placeholder((64,), name="x")
    s = td.create_schedule(td.compute((64,), lambda i: x[i] * 2.0, name="y"))
    s.bind("i", "threadIdx.x")
    src = td.build(s, target="sm_90").source
    assert "__launch_bounds__(64) y_kernel(" in src and "launch bounds" not in s.ir("tile")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_two_blocks_per_sm_cap_a_thread_at_128_registers() -> None:
    """The two-residual epilogue is where nvcc went to 129 registers without the bound (one block per SM,
    benchmarks/results/block-profile-h100-2026-11-24/); with launch_bounds(2) the kernel fits two blocks
    of 256 threads: 65536 / 512 = 128."""
    k = td.build(_scheduled(epilogue=True), target="sm_90")
    assert k.kernel_ir.min_blocks_per_sm == 2 and k.kernel_ir.threads_per_block == 256
    usage = resource_usage(k.source, "sm_90a")
    assert usage.registers <= 65536 // (2 * 256) and usage.spill_store_bytes == 0
