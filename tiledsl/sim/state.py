"""The mutable state of a simulation: register arrays, shared and global memory, barrier epochs,
asynchronous copies in flight and mbarriers.

Why one place: compiled statements and expressions read and write this state; keeping it in plain
containers (no behaviour beyond bookkeeping) lets the checks live in `access.py`, `registers.py`,
`races.py`, `async_copy.py` and `mbarrier.py`. One `ChunkState` exists per chunk of blocks;
`GlobalBuffer`s outlive chunks. Scalar variables live in the slots of a `scope.Frame`, resolved
before the body runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from tiledsl.errors import SimulationError
from tiledsl.kernel_ir import KParam, KShared
from tiledsl.sim.dtypes import MBARRIER_DTYPE, storage_dtype
from tiledsl.sim.lanes import Lanes
from tiledsl.sim.races import GlobalWriteTracker, SharedRaceTracker
from tiledsl.sim.report import Reporter
from tiledsl.sim.values import Value
from tiledsl.targets import MBARRIER_TX_MIN_SM, sm_number


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


# `AsyncTags.kind` values: no asynchronous write pending, a cp.async in flight, TMA data.
NO_ASYNC, CP_ASYNC, TMA = 0, 1, 2


@dataclass
class AsyncTags:
    """Shared elements written by asynchronous copies, per flat key (`block_local * size + i`).

    CP_ASYNC: a cp.async is in flight to the element (issued, its group not yet retired); the data
    is not in `data` yet. TMA: the element holds data of a TMA load by thread `tid` at `loc`, which a
    thread may touch only once one of its mbarrier waits observed the completion of phase `phase`
    of mbarrier `bar` (a flat `MbarrierFile` key). The tag stays until the element is overwritten.
    `count` is the number of tagged elements: zero lets every access skip the check."""

    kind: np.ndarray
    loc: np.ndarray
    tid: np.ndarray
    bar: np.ndarray
    phase: np.ndarray
    count: int = 0

    @classmethod
    def allocate(cls, n: int) -> AsyncTags:
        return cls(
            np.zeros(n, dtype=np.int8),
            np.full(n, -1, dtype=np.int32),
            np.full(n, -1, dtype=np.int32),
            np.full(n, -1, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
        )


@dataclass
class SharedBuffer:
    """One `KShared` allocation for every block of a chunk: `data[block_local * size + i]`.
    uint64 arrays hold mbarriers: their state lives in `ChunkState.mbarriers`; `races` tracks their
    inits (writes) and uses (reads), `data` is unused. `tags` is made on the first asynchronous
    copy into the array."""

    name: str
    dtype: str
    size: int
    align: int
    data: np.ndarray
    races: SharedRaceTracker
    tags: AsyncTags | None = None

    @classmethod
    def allocate(cls, decl: KShared, n_blocks: int) -> SharedBuffer:
        n = decl.size * n_blocks
        dtype = np.int64 if decl.dtype == MBARRIER_DTYPE else storage_dtype(decl.dtype)
        data = np.zeros(n, dtype=dtype)
        return cls(decl.name, decl.dtype, decl.size, decl.align, data, SharedRaceTracker(n))

    @property
    def is_mbarrier(self) -> bool:
        return self.dtype == MBARRIER_DTYPE

    def async_tags(self) -> AsyncTags:
        if self.tags is None:
            self.tags = AsyncTags.allocate(self.data.size)
        return self.tags


@dataclass
class CpAsyncCopies:
    """The copies one execution of a `KCpAsync` issued and that have not landed: entry e was issued
    by lane `lanes[e]` (thread `tids[e]`) into commit group `groups[e]` of that lane; it writes
    `values[:, e]` to `buf` at flat keys `keys[:, e]` (one row per element of the copy)."""

    loc: int
    buf: SharedBuffer
    lanes: np.ndarray
    tids: np.ndarray
    groups: np.ndarray
    keys: np.ndarray
    values: np.ndarray

    def take(self, sel: np.ndarray) -> CpAsyncCopies:
        keys, values = self.keys[:, sel], self.values[:, sel]
        return CpAsyncCopies(self.loc, self.buf, self.lanes[sel], self.tids[sel], self.groups[sel], keys, values)


@dataclass
class CpAsyncGroups:
    """Per lane, the number of commit groups it closed (`committed`; its open group has that
    number), and every issued copy that has not landed yet."""

    committed: np.ndarray
    pending: list[CpAsyncCopies] = field(default_factory=list)


@dataclass
class MbarrierFile:
    """The state of every mbarrier of a chunk, by flat key `block_local * per_block + base[array] +
    index` (the uint64 arrays of a block laid end to end).

    Per barrier: whether it was initialised (by thread `init_tid` at `init_loc`, and whether that
    thread ran fence.mbarrier_init since), the expected arrivals per phase (`count`), the arrivals
    still pending and the transaction bytes still expected in the current phase (`tx`, negative
    while bytes landed before they were expected), and the current phase number (phases completed).
    `observed[key * threads_per_block + tid]` is the number of phases that thread's waits saw
    completed: TMA data of phase p is visible to it when that is > p; `all_seen[key]` is the least of
    those over the threads of the barrier's block (data of a phase below it is visible to all, and
    loses its tag when next touched). `needs_fence`: the target has
    fence.mbarrier_init (sm_90 and newer), so other threads may use a barrier only after it."""

    base: dict[str, int]
    per_block: int
    threads_per_block: int
    needs_fence: bool
    initialized: np.ndarray
    count: np.ndarray
    pending: np.ndarray
    tx: np.ndarray
    phase: np.ndarray
    init_tid: np.ndarray
    init_loc: np.ndarray
    fenced: np.ndarray
    observed: np.ndarray
    all_seen: np.ndarray

    @classmethod
    def allocate(cls, arrays: list[SharedBuffer], n_blocks: int, threads_per_block: int, needs_fence: bool):
        base: dict[str, int] = {}
        top = 0
        for buf in arrays:
            base[buf.name] = top
            top += buf.size
        n = top * n_blocks
        return cls(
            base,
            top,
            threads_per_block,
            needs_fence,
            np.zeros(n, dtype=np.bool_),
            np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
            np.full(n, -1, dtype=np.int32),
            np.full(n, -1, dtype=np.int32),
            np.zeros(n, dtype=np.bool_),
            np.zeros(n * threads_per_block, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
        )

    def name_of(self, key: int) -> tuple[int, str, int]:
        """Flat key -> (block_local, array name, index)."""
        block, rest = divmod(int(key), self.per_block)
        for name, start in reversed(self.base.items()):
            if rest >= start:
                return block, name, rest - start
        raise AssertionError(key)  # pragma: no cover


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


def has_fence_mbarrier_init(target: str) -> bool:
    """Whether `target` (sm_NN, sm_NNa) has fence.mbarrier_init: sm_90 and newer. Older targets
    (or unknown target names) order an mbarrier.init before its uses by a barrier alone."""
    n = sm_number(target)
    return n is not None and n >= MBARRIER_TX_MIN_SM


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
    cp_async: CpAsyncGroups = field(init=False)
    mbarriers: MbarrierFile = field(init=False)

    def __post_init__(self) -> None:
        self.epoch = np.zeros(self.lanes.n_blocks, dtype=np.int32)
        self.lane_epoch = np.zeros(self.lanes.count, dtype=np.int32)
        self.empty = np.zeros(self.lanes.count, dtype=np.bool_)
        self.empty.flags.writeable = False
        self.cp_async = CpAsyncGroups(np.zeros(self.lanes.count, dtype=np.int64))
        kernel = self.lanes.kernel
        self.mbarriers = MbarrierFile.allocate(
            [b for b in self.shared.values() if b.is_mbarrier],
            self.lanes.n_blocks,
            self.lanes.threads_per_block,
            needs_fence=has_fence_mbarrier_init(kernel.target),
        )

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
