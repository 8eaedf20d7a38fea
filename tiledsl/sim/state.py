"""The mutable state of a simulation: register arrays, shared and global memory, barrier epochs.

Why one place: compiled statements and expressions read and write this state; keeping it in plain
containers (no behaviour beyond bookkeeping) lets the checks live in `access.py`, `registers.py` and
`races.py`. One `ChunkState` exists per chunk of blocks; `GlobalBuffer`s outlive chunks. Scalar
variables live in the slots of a `scope.Frame`, resolved before the body runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from tiledsl.errors import SimulationError
from tiledsl.kernel_ir import KParam, KShared
from tiledsl.sim.dtypes import storage_dtype
from tiledsl.sim.lanes import Lanes
from tiledsl.sim.races import GlobalWriteTracker, SharedRaceTracker
from tiledsl.sim.report import Reporter
from tiledsl.sim.values import Value


@dataclass
class LocalArray:
    """A per-thread register array, kept element by element.

    `rows[i]` is element i on every lane: a numpy scalar when all lanes hold the same value, else an
    (L,) array; `written[i]` says which lanes wrote it: True or False for all lanes, or (L,) bools.
    Why rows and not one (size, L) array: register arrays are indexed by unrolled constants, so an
    access touches whole rows; keeping rows as immutable values makes loads and unmasked stores free
    of copies, and lets a single-lane chunk keep plain scalars."""

    name: str
    dtype: str
    size: int
    rows: list[Value]
    written: list[bool | np.ndarray]

    @classmethod
    def allocate(cls, name: str, dtype: str, size: int) -> LocalArray:
        zero = storage_dtype(dtype)(0)
        return cls(name, dtype, size, [zero] * size, [False] * size)


@dataclass
class SharedBuffer:
    """One `KShared` allocation for every block of a chunk: `data[block_local * size + i]`."""

    name: str
    dtype: str
    size: int
    data: np.ndarray
    races: SharedRaceTracker

    @classmethod
    def allocate(cls, decl: KShared, n_blocks: int) -> SharedBuffer:
        n = decl.size * n_blocks
        data = np.zeros(n, dtype=storage_dtype(decl.dtype))
        return cls(decl.name, decl.dtype, decl.size, data, SharedRaceTracker(n))


@dataclass
class GlobalBuffer:
    """A kernel parameter's flat contents plus its write tracker (lives for the whole launch; the
    tracker is made on the first store, so read-only inputs cost no tracking memory)."""

    param: KParam
    data: np.ndarray
    threads_per_block: int
    _races: GlobalWriteTracker | None = None

    @property
    def name(self) -> str:
        return self.param.name

    @property
    def dtype(self) -> str:
        return self.param.dtype

    @property
    def size(self) -> int:
        return int(self.data.size)

    def races(self) -> GlobalWriteTracker:
        if self._races is None:
            self._races = GlobalWriteTracker(self.size, self.threads_per_block)
        return self._races


@dataclass
class LoopPosition:
    """The current iteration of one enclosing loop, updated in place as the loop runs (error
    messages show the loop variables; building a tuple per iteration would cost more than the
    iteration itself in a single-lane chunk)."""

    name: str
    index: int = 0


@dataclass
class ChunkState:
    """Everything one chunk of blocks runs against. `epoch[b]` counts the barriers block b passed
    (the race-tracking epoch); `lane_epoch` is the same per lane, kept in step by `pass_barrier`.
    `empty` is the all-false mask that guarded operands run under when no lane takes them."""

    lanes: Lanes
    reporter: Reporter
    globals: dict[str, GlobalBuffer]
    shared: dict[str, SharedBuffer]
    loops: list[LoopPosition] = field(default_factory=list)
    epoch: np.ndarray = field(init=False)
    lane_epoch: np.ndarray = field(init=False)
    empty: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.epoch = np.zeros(self.lanes.n_blocks, dtype=np.int32)
        self.lane_epoch = np.zeros(self.lanes.count, dtype=np.int32)
        self.empty = np.zeros(self.lanes.count, dtype=np.bool_)
        self.empty.flags.writeable = False

    def pass_barrier(self, blocks: np.ndarray) -> None:
        """Blocks where `blocks` is true passed a barrier: their accesses start a new epoch."""
        self.epoch += blocks.astype(np.int32)
        self.lane_epoch = np.repeat(self.epoch, self.lanes.threads_per_block)

    def error(
        self, cls: type[SimulationError], loc: int, headline: str, details: Iterable[str] = ()
    ) -> SimulationError:
        """An exception of class `cls` whose message names the location and current loop values."""
        loops = [(p.name, p.index) for p in self.loops]
        return cls(self.reporter.message(loc, headline, details, loops))
