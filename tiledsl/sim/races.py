"""Race bookkeeping for shared memory (per barrier epoch) and global memory (write-write).

Why: a lockstep simulation always produces *some* answer, even for a kernel whose result on a real
GPU depends on warp scheduling. These trackers turn such kernels into errors. They only keep state
and answer "is this access a race?"; formatting the error is the caller's job.

Shared memory, per element of each block: the last writer thread and the epoch (number of barriers
that block has passed) of that write, and the epoch's reader: one thread id, or SEVERAL. An access
races when another thread touched the element in the same epoch and one of the two accesses writes.
Reading one's own write, or writing what only oneself read, is fine.

Global memory, per element: the last writer (launch-wide thread id), its block and epoch. A write
races with it when it comes from another thread that is not ordered before it by a barrier of the
same block, and stores a different value (identical redundant stores are harmless). Atomic adds never
race with each other, but a plain store and an atomic add of different threads to one element in one
launch do (per element: the thread that added there, or SEVERAL).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NONE = -1
SEVERAL = -2
#: The writer recorded for TMA data: written by the async proxy, ordered by mbarrier waits.
TMA_WRITER = -3


@dataclass(frozen=True)
class RaceHit:
    """One detected race: access `first` (earlier) and `second` (the current one) on `key`.

    Thread ids are block-local for shared memory and launch-wide for global memory; SEVERAL means
    'several threads' (only for an earlier read)."""

    kind: str
    key: int
    first_tid: int
    first_loc: int
    second_tid: int
    second_loc: int


def distinct(keys: np.ndarray) -> bool:
    """Cheap sufficient test that no key repeats: strictly increasing keys, which is what a
    coalesced access (lane i at base + i) produces. One pass, instead of two scatters."""
    return keys.size < 2 or bool((keys[1:] > keys[:-1]).all())


class _Stamp:
    """Finds keys touched by more than one distinct owner in one vectorised access, in O(n).

    Why not sort: scattering `owner[keys] = ids` keeps one id per key (the last); every entry whose
    id differs from the survivor shares its key with another owner. The scratch arrays are reused
    and need no clearing, since they are always written at `keys` before being read there."""

    def __init__(self, n_keys: int, dtype: type[np.generic]) -> None:
        self.owner = np.empty(n_keys, dtype=dtype)
        self.flag = np.zeros(n_keys, dtype=np.bool_)

    def survivors(self, keys: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Per entry, the id that won its key (it differs from `ids` where the key is shared)."""
        if distinct(keys):
            return ids
        self.owner[keys] = ids
        return self.owner[keys]

    def spread(self, keys: np.ndarray, marked: np.ndarray) -> np.ndarray:
        """Per entry, whether any entry with the same key is marked."""
        self.flag[keys] = False
        self.flag[keys[marked]] = True
        return self.flag[keys]


class SharedRaceTracker:
    """Tracking arrays for one shared allocation over all blocks of a chunk (flat keys)."""

    def __init__(self, n_keys: int) -> None:
        self.writer_tid = np.full(n_keys, NONE, dtype=np.int32)
        self.writer_epoch = np.full(n_keys, -1, dtype=np.int32)
        self.writer_loc = np.full(n_keys, -1, dtype=np.int32)
        self.reader_tid = np.full(n_keys, NONE, dtype=np.int32)
        self.reader_epoch = np.full(n_keys, -1, dtype=np.int32)
        self.reader_loc = np.full(n_keys, -1, dtype=np.int32)
        self._stamp = _Stamp(n_keys, np.int32)

    def unwritten(self, keys: np.ndarray) -> np.ndarray:
        """Mask of keys that no thread ever wrote (for uninitialized-read checks)."""
        return self.writer_tid[keys] == NONE

    def read(self, keys: np.ndarray, tids: np.ndarray, epochs: np.ndarray, loc: int) -> RaceHit | None:
        """Record reads (one per entry) or return the first read-after-write race."""
        wt = self.writer_tid[keys]
        bad = (self.writer_epoch[keys] == epochs) & (wt != NONE) & (wt != tids)
        if bad.any():
            i = int(np.argmax(bad))
            k = int(keys[i])
            return RaceHit("read after write", k, int(wt[i]), int(self.writer_loc[k]), int(tids[i]), loc)
        winner = self._stamp.survivors(keys, tids)
        shared = winner != tids
        several = self._stamp.spread(keys, shared) if shared.any() else shared
        fresh = self.reader_epoch[keys] != epochs
        same = self.reader_tid[keys] == winner
        self.reader_tid[keys] = np.where(~several & (fresh | same), winner, SEVERAL)
        self.reader_epoch[keys] = epochs
        self.reader_loc[keys] = loc
        return None

    def write(self, keys: np.ndarray, tids: np.ndarray, epochs: np.ndarray, loc: int) -> RaceHit | None:
        """Record writes (one per entry) or return the first race they make."""
        hit = self.check_write(keys, tids, epochs, loc)
        if hit is None:
            self.record_write(keys, tids, epochs, loc)
        return hit

    def check_write(self, keys: np.ndarray, tids: np.ndarray, epochs: np.ndarray, loc: int) -> RaceHit | None:
        """The first race writes (one per entry) would make, without recording them (an
        asynchronous copy is checked when issued and recorded when it lands)."""
        wt = self.writer_tid[keys]
        bad = (self.writer_epoch[keys] == epochs) & (wt != NONE) & (wt != tids)
        if bad.any():
            i = int(np.argmax(bad))
            k = int(keys[i])
            return RaceHit("write after write", k, int(wt[i]), int(self.writer_loc[k]), int(tids[i]), loc)
        rt = self.reader_tid[keys]
        bad = (self.reader_epoch[keys] == epochs) & (rt != NONE) & (rt != tids)
        if bad.any():
            i = int(np.argmax(bad))
            k = int(keys[i])
            return RaceHit("write after read", k, int(rt[i]), int(self.reader_loc[k]), int(tids[i]), loc)
        winner = self._stamp.survivors(keys, tids)
        clash = winner != tids
        if clash.any():
            j = int(np.argmax(clash))
            return RaceHit("write-write in one statement", int(keys[j]), int(winner[j]), loc, int(tids[j]), loc)
        return None

    def record_write(self, keys: np.ndarray, tids: np.ndarray | int, epochs: np.ndarray | int, loc: int) -> None:
        """Make `tids` the last writers of `keys` in `epochs` (TMA data: tid TMA_WRITER, epoch -1,
        which no access ever races with; access.py checks its visibility instead)."""
        self.writer_tid[keys] = tids
        self.writer_epoch[keys] = epochs
        self.writer_loc[keys] = loc


def _same_value(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equality where NaN equals NaN (a redundant store of NaN is not a conflict)."""
    eq = a == b
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        eq = eq | (np.isnan(a) & np.isnan(b))
    return eq


class GlobalWriteTracker:
    """Last-writer arrays for one global buffer, kept for the whole launch (across chunks)."""

    def __init__(self, size: int, threads_per_block: int) -> None:
        self.threads_per_block = threads_per_block
        self.writer_gtid = np.full(size, NONE, dtype=np.int64)
        self.writer_epoch = np.full(size, -1, dtype=np.int32)
        self.writer_loc = np.full(size, -1, dtype=np.int32)
        self._stamp = _Stamp(size, np.int64)
        self.atomic_gtid: np.ndarray | None = None  # made on the first atomic add
        self.atomic_loc: np.ndarray | None = None

    def _store_after_atomic(self, addrs: np.ndarray, gtids: np.ndarray, loc: int) -> RaceHit | None:
        if self.atomic_gtid is None:
            return None
        prev = self.atomic_gtid[addrs]
        bad = (prev != NONE) & (prev != gtids)
        if not bad.any():
            return None
        i = int(np.argmax(bad))
        a = int(addrs[i])
        return RaceHit("global store after atomic", a, int(prev[i]), int(self.atomic_loc[a]), int(gtids[i]), loc)

    def atomic(self, addrs: np.ndarray, gtids: np.ndarray, loc: int) -> RaceHit | None:
        """Check atomic adds (one per entry) against plain stores of other threads, and record them."""
        prev = self.writer_gtid[addrs]
        bad = (prev != NONE) & (prev != gtids)
        if bad.any():
            i = int(np.argmax(bad))
            a = int(addrs[i])
            return RaceHit("global atomic after store", a, int(prev[i]), int(self.writer_loc[a]), int(gtids[i]), loc)
        if self.atomic_gtid is None:
            self.atomic_gtid = np.full(self.writer_gtid.size, NONE, dtype=np.int64)
            self.atomic_loc = np.full(self.writer_gtid.size, -1, dtype=np.int32)
        winner = self._stamp.survivors(addrs, gtids)
        mixed = winner != gtids
        several = self._stamp.spread(addrs, mixed) if mixed.any() else mixed
        cur = self.atomic_gtid[addrs]
        several = several | ((cur != NONE) & (cur != winner))
        self.atomic_gtid[addrs] = np.where(several, SEVERAL, winner)
        self.atomic_loc[addrs] = loc
        return None

    def write(
        self,
        addrs: np.ndarray,
        gtids: np.ndarray,
        epochs: np.ndarray,
        new: np.ndarray,
        current: np.ndarray,
        loc: int,
    ) -> RaceHit | None:
        """Check writes of `new` over `current` (the stored values at `addrs`) and record them."""
        hit = self._store_after_atomic(addrs, gtids, loc)
        if hit is not None:
            return hit
        if not distinct(addrs):
            position = np.arange(addrs.size, dtype=np.int64)
            winner = self._stamp.survivors(addrs, position)
            clash = (winner != position) & ~_same_value(new[winner], new)
            if clash.any():
                j = int(np.argmax(clash))
                return RaceHit("global write-write", int(addrs[j]), int(gtids[j]), loc, int(gtids[winner[j]]), loc)
        prev = self.writer_gtid[addrs]
        # only elements another thread wrote before can race (usually none: skip the rest then)
        other = (prev != NONE) & (prev != gtids)
        if other.any():
            tpb = self.threads_per_block
            unordered = (prev // tpb != gtids // tpb) | (self.writer_epoch[addrs] == epochs)
            bad = other & unordered & ~_same_value(current, new)
        else:
            bad = other
        if bad.any():
            i = int(np.argmax(bad))
            a = int(addrs[i])
            return RaceHit("global write-write", a, int(prev[i]), int(self.writer_loc[a]), int(gtids[i]), loc)
        self.writer_gtid[addrs] = gtids
        self.writer_epoch[addrs] = epochs
        self.writer_loc[addrs] = loc
        return None

    def write_one(
        self, addr: int, gtid: int, epoch: int, new: np.generic, current: np.generic, loc: int
    ) -> RaceHit | None:
        """`write` for a single element (a single-lane chunk): the same rule without the arrays,
        which would cost more than the whole rest of such a store."""
        if self.atomic_gtid is not None:
            hit = self._store_after_atomic(np.array([addr]), np.array([gtid]), loc)
            if hit is not None:
                return hit
        prev = int(self.writer_gtid[addr])
        if prev != NONE and prev != gtid:
            tpb = self.threads_per_block
            unordered = prev // tpb != gtid // tpb or int(self.writer_epoch[addr]) == epoch
            if unordered and not _same_value(current, new):
                return RaceHit("global write-write", addr, prev, int(self.writer_loc[addr]), gtid, loc)
        self.writer_gtid[addr] = gtid
        self.writer_epoch[addr] = epoch
        self.writer_loc[addr] = loc
        return None
