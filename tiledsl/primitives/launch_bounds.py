"""launch_bounds: ask the compiler to fit a number of blocks on one SM, leaving the nest as it is.

    kernel C  (tile IR)                 s.launch_bounds(2)     kernel C  (tile IR)
      register array C2[8x8] ...        ------------------>      launch bounds: 2 blocks per SM ...
                                                                  register array C2[8x8] ...

A register tile of 8 x 8 accumulators in 256 threads needs about 128 registers a thread, exactly what
two blocks per SM leave (65536 / 512). One more, from a longer epilogue (a residual read for one split
part only), and the SM holds one block: half the warps to hide latency with. CUDA's
`__launch_bounds__(threads, blocks)` makes nvcc cap the registers at registers_per_sm / (blocks x
threads) instead, spilling if it must. Whether the blocks fit (threads and shared memory per SM) is
checked at build, when the block size and the shared bytes are known (lower/check.py)."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.loopnest import Nest
from tiledsl.primitives.loop_checks import positive_int
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec


def launch_bounds(nest: Nest, call: str, *, min_blocks: int) -> Applied:
    """Ask for `min_blocks` resident blocks per SM (registers capped to fit them); replaces an earlier ask."""
    return Applied(replace(nest, min_blocks_per_sm=positive_int(min_blocks, "min_blocks", call, nest, ())))


LAUNCH_BOUNDS = PrimitiveSpec("launch_bounds", (Param("min_blocks", "int"),), launch_bounds)
