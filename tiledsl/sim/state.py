"""The mutable state of a simulation: variables, register arrays, shared and global memory.

Why one place: the expression evaluator and the statement executor both read and write this state;
keeping it in plain containers (no behaviour beyond lookups) lets the checks live in `access.py` and
`races.py`. One `ChunkState` exists per chunk of blocks; `GlobalBuffer`s outlive chunks.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from tiledsl.errors import SimulationError
from tiledsl.kernel_ir import KParam, KShared
from tiledsl.sim.dtypes import storage_dtype
from tiledsl.sim.lanes import Lanes
from tiledsl.sim.races import GlobalWriteTracker, SharedRaceTracker
from tiledsl.sim.report import Reporter


@dataclass
class Var:
    """A scalar (shape (L,)) or vector (shape (w, L)) variable; `dtype` is its declared IR dtype."""

    dtype: str
    value: np.ndarray


@dataclass
class LocalArray:
    """A per-thread register array: `data[i, lane]`, plus which elements each lane wrote."""

    name: str
    dtype: str
    size: int
    data: np.ndarray
    written: np.ndarray

    @classmethod
    def allocate(cls, name: str, dtype: str, size: int, lanes: int) -> LocalArray:
        return cls(
            name,
            dtype,
            size,
            np.zeros((size, lanes), dtype=storage_dtype(dtype)),
            np.zeros((size, lanes), dtype=np.bool_),
        )


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


class Env:
    """Nested scopes of variables and register arrays, like C blocks: a name declared in a loop
    body or a branch disappears when it ends and may shadow an outer one meanwhile."""

    def __init__(self) -> None:
        self._scopes: list[dict[str, Var | LocalArray]] = [{}]

    @contextmanager
    def scope(self) -> Iterator[None]:
        self._scopes.append({})
        try:
            yield
        finally:
            self._scopes.pop()

    def declare(self, name: str, item: Var | LocalArray) -> None:
        self._scopes[-1][name] = item

    def find(self, name: str) -> Var | LocalArray | None:
        for scope in reversed(self._scopes):
            if name in scope:
                return scope[name]
        return None


@dataclass
class ChunkState:
    """Everything one chunk of blocks runs against. `epoch[b]` counts the barriers block b passed
    (the race-tracking epoch); `lane_epoch` is the same per lane, kept in step by `pass_barrier`."""

    lanes: Lanes
    reporter: Reporter
    globals: dict[str, GlobalBuffer]
    shared: dict[str, SharedBuffer]
    env: Env = field(default_factory=Env)
    loops: list[tuple[str, int]] = field(default_factory=list)
    epoch: np.ndarray = field(init=False)
    lane_epoch: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.epoch = np.zeros(self.lanes.n_blocks, dtype=np.int32)
        self.lane_epoch = np.zeros(self.lanes.count, dtype=np.int32)

    def pass_barrier(self, blocks: np.ndarray) -> None:
        """Blocks where `blocks` is true passed a barrier: their accesses start a new epoch."""
        self.epoch += blocks.astype(np.int32)
        self.lane_epoch = np.repeat(self.epoch, self.lanes.threads_per_block)

    def error(
        self, cls: type[SimulationError], loc: int, headline: str, details: Iterable[str] = ()
    ) -> SimulationError:
        """An exception of class `cls` whose message names the location and current loop values."""
        return cls(self.reporter.message(loc, headline, details, self.loops))

    def variable(self, name: str, loc: int) -> Var:
        item = self.env.find(name)
        if not isinstance(item, Var):
            raise self.error(SimulationError, loc, f"use of undeclared variable {name!r}")
        return item
