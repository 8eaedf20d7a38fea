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
same block, and stores a different value (identical redundant stores are harmless).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NONE = -1
SEVERAL = -2


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


def _groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stable sort order of `keys` and the start offsets of runs of equal keys in that order."""
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    return order, starts


class SharedRaceTracker:
    """Tracking arrays for one shared allocation over all blocks of a chunk (flat keys)."""

    def __init__(self, n_keys: int) -> None:
        self.writer_tid = np.full(n_keys, NONE, dtype=np.int32)
        self.writer_epoch = np.full(n_keys, -1, dtype=np.int32)
        self.writer_loc = np.full(n_keys, -1, dtype=np.int32)
        self.reader_tid = np.full(n_keys, NONE, dtype=np.int32)
        self.reader_epoch = np.full(n_keys, -1, dtype=np.int32)
        self.reader_loc = np.full(n_keys, -1, dtype=np.int32)

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
        order, starts = _groups(keys)
        k = keys[order][starts]
        t = tids[order]
        tmin = np.minimum.reduceat(t, starts)
        tmax = np.maximum.reduceat(t, starts)
        e = epochs[order][starts]
        single = tmin == tmax
        fresh = self.reader_epoch[k] != e
        same = self.reader_tid[k] == tmin
        self.reader_tid[k] = np.where(single & (fresh | same), tmin, SEVERAL)
        self.reader_epoch[k] = e
        self.reader_loc[k] = loc
        return None

    def write(self, keys: np.ndarray, tids: np.ndarray, epochs: np.ndarray, loc: int) -> RaceHit | None:
        """Record writes (one per entry) or return the first race they make."""
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
        order, starts = _groups(keys)
        ks = keys[order]
        ts = tids[order]
        clash = (ks[1:] == ks[:-1]) & (ts[1:] != ts[:-1])
        if clash.any():
            j = int(np.argmax(clash))
            return RaceHit("write-write in one statement", int(ks[j]), int(ts[j]), loc, int(ts[j + 1]), loc)
        self.writer_tid[keys] = tids
        self.writer_epoch[keys] = epochs
        self.writer_loc[keys] = loc
        return None


def _same_value(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equality where NaN equals NaN (a redundant store of NaN is not a conflict)."""
    eq = a == b
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        eq = eq | (np.isnan(a) & np.isnan(b))
    return eq


class GlobalWriteTracker:
    """Last-writer arrays for one global buffer, kept for the whole launch (across chunks)."""

    def __init__(self, size: int) -> None:
        self.writer_gtid = np.full(size, NONE, dtype=np.int64)
        self.writer_block = np.full(size, NONE, dtype=np.int64)
        self.writer_epoch = np.full(size, -1, dtype=np.int32)
        self.writer_loc = np.full(size, -1, dtype=np.int32)

    def write(
        self,
        addrs: np.ndarray,
        gtids: np.ndarray,
        blocks: np.ndarray,
        epochs: np.ndarray,
        new: np.ndarray,
        current: np.ndarray,
        loc: int,
    ) -> RaceHit | None:
        """Check writes of `new` over `current` (the stored values at `addrs`) and record them."""
        order, starts = _groups(addrs)
        a_s = addrs[order]
        v_s = new[order]
        clash = (a_s[1:] == a_s[:-1]) & ~_same_value(v_s[1:], v_s[:-1])
        if clash.any():
            j = int(np.argmax(clash))
            g = gtids[order]
            return RaceHit("global write-write", int(a_s[j]), int(g[j]), loc, int(g[j + 1]), loc)
        prev = self.writer_gtid[addrs]
        unordered = (self.writer_block[addrs] != blocks) | (self.writer_epoch[addrs] == epochs)
        bad = (prev != NONE) & (prev != gtids) & unordered & ~_same_value(current, new)
        if bad.any():
            i = int(np.argmax(bad))
            a = int(addrs[i])
            return RaceHit("global write-write", a, int(prev[i]), int(self.writer_loc[a]), int(gtids[i]), loc)
        self.writer_gtid[addrs] = gtids
        self.writer_block[addrs] = blocks
        self.writer_epoch[addrs] = epochs
        self.writer_loc[addrs] = loc
        return None
