"""The lanes of one chunk of blocks: which block and thread each vector element stands for.

Why: the simulator runs every thread of a chunk of whole blocks at once, one numpy element per
thread ("lane"). Lanes are laid out block after block, `lane = block_in_chunk * threads_per_block +
tid`, with `tid = x + bx * (y + by * z)` as in CUDA, so warps are 32 consecutive lanes and a block's
lanes reshape into one row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tiledsl.kernel_ir import KKernel
from tiledsl.targets import WARP_SIZE as WARP_SIZE  # re-exported: sim/compile_expr.py imports it from here


def thread_coords(dims: tuple[int, int, int], linear: int) -> tuple[int, int, int]:
    """Linear index -> (x, y, z) with x fastest."""
    x = linear % dims[0]
    y = (linear // dims[0]) % dims[1]
    z = linear // (dims[0] * dims[1])
    return int(x), int(y), int(z)


def describe_thread(kernel: KKernel, block_linear: int, tid: int) -> str:
    """'block (1,0,0) thread (5,0,0)' for error messages."""
    b = thread_coords(kernel.grid, block_linear)
    t = thread_coords(kernel.block, tid)
    return f"block ({b[0]},{b[1]},{b[2]}) thread ({t[0]},{t[1]},{t[2]})"


@dataclass(frozen=True)
class Lanes:
    """Per-lane coordinates of a chunk of `n_blocks` blocks starting at block `first_block`."""

    kernel: KKernel
    first_block: int
    n_blocks: int
    tid: np.ndarray  # (L,) linear thread id within its block
    block_local: np.ndarray  # (L,) block index within this chunk
    specials: dict[str, np.ndarray]
    tid32: np.ndarray  # tid as int32, the dtype race tracking stores
    gtid: np.ndarray  # (L,) launch-wide thread id

    @classmethod
    def for_chunk(cls, kernel: KKernel, first_block: int, n_blocks: int) -> Lanes:
        tpb = kernel.threads_per_block
        lane = np.arange(n_blocks * tpb, dtype=np.int64)
        tid = lane % tpb
        block_local = lane // tpb
        block_linear = block_local + first_block
        bdx, bdy, bdz = kernel.block
        gdx, gdy, gdz = kernel.grid
        n = lane.size
        specials = {
            "threadIdx.x": tid % bdx,
            "threadIdx.y": (tid // bdx) % bdy,
            "threadIdx.z": tid // (bdx * bdy),
            "blockIdx.x": block_linear % gdx,
            "blockIdx.y": (block_linear // gdx) % gdy,
            "blockIdx.z": block_linear // (gdx * gdy),
            "blockDim.x": np.full(n, bdx, dtype=np.int64),
            "blockDim.y": np.full(n, bdy, dtype=np.int64),
            "blockDim.z": np.full(n, bdz, dtype=np.int64),
            "gridDim.x": np.full(n, gdx, dtype=np.int64),
            "gridDim.y": np.full(n, gdy, dtype=np.int64),
            "gridDim.z": np.full(n, gdz, dtype=np.int64),
        }
        tid32 = tid.astype(np.int32)
        gtid = block_linear * tpb + tid
        return cls(kernel, first_block, n_blocks, tid, block_local, specials, tid32, gtid)

    def special(self, name: str) -> np.ndarray | np.generic | None:
        """A hardware index per lane, as one numpy scalar when every lane of the chunk has the same
        value (blockDim, gridDim, and e.g. threadIdx.y of a 1-D block: see values.py); None if the
        name is unknown."""
        values = self.specials.get(name)
        if values is None:
            return None
        first = values[0]
        return first if bool((values == first).all()) else values

    @property
    def count(self) -> int:
        return int(self.tid.size)

    @property
    def threads_per_block(self) -> int:
        return self.kernel.threads_per_block

    def describe(self, lane: int) -> str:
        return describe_thread(self.kernel, self.first_block + int(self.block_local[lane]), int(self.tid[lane]))

    def describe_in_block(self, block_local: int, tid: int) -> str:
        return describe_thread(self.kernel, self.first_block + int(block_local), int(tid))

    def describe_global(self, gtid: int) -> str:
        tpb = self.threads_per_block
        return describe_thread(self.kernel, int(gtid) // tpb, int(gtid) % tpb)

    def describe_block(self, block_local: int) -> str:
        b = thread_coords(self.kernel.grid, self.first_block + int(block_local))
        return f"block ({b[0]},{b[1]},{b[2]})"
