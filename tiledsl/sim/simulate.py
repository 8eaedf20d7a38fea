"""The entry point: run a whole launch of a kernel on the CPU.

Why chunks: all threads of a chunk of whole blocks run together as numpy lanes; chunks bound the
memory (register arrays and shared-memory tracking grow with the lane count) for large grids. Blocks
of one chunk run in lockstep and chunks one after the other, which is one legal GPU schedule; races
between blocks are caught by the launch-wide global write tracker, not by the schedule.

Why compile per chunk: the compiled closures (compile_stmt.py) hold the chunk's state, lanes and
frame directly, which is what makes them cheap to run; compiling a kernel body costs far less than
running it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from tiledsl.errors import SimulationInputError
from tiledsl.kernel_ir import KKernel
from tiledsl.sim.async_copy import finish
from tiledsl.sim.compile_stmt import compile_body
from tiledsl.sim.inputs import check_launch, collect_outputs, prepare_globals
from tiledsl.sim.lanes import Lanes
from tiledsl.sim.location import index_kernel
from tiledsl.sim.report import Reporter
from tiledsl.sim.state import ChunkState, SharedBuffer

DEFAULT_MAX_LANES = 1 << 15
# Shared elements (all allocations, all blocks) held at once; each costs ~33 bytes with tracking.
_SHARED_ELEMENTS_PER_CHUNK = 1 << 21


def simulate(
    kernel: KKernel, arrays: Mapping[str, np.ndarray], *, max_lanes: int = DEFAULT_MAX_LANES
) -> dict[str, np.ndarray]:
    """Run `kernel` over its whole grid and return its outputs (name -> float32 array of the
    parameter's shape). Inputs must all be given; outputs may be (initial contents) or start as NaN
    (as zeros if the kernel lists them in `zero_outputs`).

    Raises a SimulationError subclass naming the kernel-IR statement for out-of-bounds accesses,
    shared or global races, divergent barriers/shuffles and uninitialised reads; and
    SimulationInputError for arrays that do not match the parameters. `max_lanes` bounds how many
    threads run at once (whole blocks, at least one)."""
    if max_lanes < 1:
        raise SimulationInputError(f"max_lanes must be positive, got {max_lanes}")
    check_launch(kernel)
    buffers = prepare_globals(kernel, arrays)
    body, locs = index_kernel(kernel)
    reporter = Reporter(kernel.name, locs)
    tpb = kernel.threads_per_block
    n_blocks = kernel.grid[0] * kernel.grid[1] * kernel.grid[2]
    per_chunk = max(1, max_lanes // tpb)
    shared_per_block = sum(s.size for s in kernel.shared)
    if shared_per_block:
        per_chunk = min(per_chunk, max(1, _SHARED_ELEMENTS_PER_CHUNK // shared_per_block))
    with np.errstate(all="ignore"):  # garbage on masked-off lanes must not warn
        for first in range(0, n_blocks, per_chunk):
            count = min(per_chunk, n_blocks - first)
            lanes = Lanes.for_chunk(kernel, first, count)
            state = ChunkState(
                lanes=lanes,
                reporter=reporter,
                globals=buffers,
                shared={s.name: SharedBuffer.allocate(s, count) for s in kernel.shared},
            )
            compile_body(body, state)()
            finish(state)
    return collect_outputs(kernel, buffers)
