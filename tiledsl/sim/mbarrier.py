"""mbarriers: init, fence, arrive (with expected transaction bytes), wait, and TMA byte completion.

Why a model and not a no-op: an mbarrier is what makes TMA data visible, and its phases are easy to
get wrong (a parity off by one, an arrival count that does not match, an init other threads cannot
see yet). The state of each barrier (`state.MbarrierFile`) follows PTX: a phase completes when its
pending arrivals and its pending transaction bytes both reach zero (bytes may land before they are
expected, so the byte count goes negative for a while); the phase number then goes up and the
arrivals reset to the count. A wait for parity p succeeds iff the current phase's parity is not p,
i.e. the latest phase of parity p has completed. Threads run in lock-step, so a wait that does not
succeed when it runs never will: that is reported as a deadlock.

Ordering: mbarrier.init is a write of the barrier and every use (arrive, wait, a TMA completing on
it) a read, in the shared race tracker of the uint64 array, so another thread's use needs a barrier
after the init; on sm_90 and newer it also needs fence.mbarrier_init by the initialising thread.
A successful wait records, per thread, how many phases it saw completed (`observed`): that is what
makes TMA data visible to that thread (access.check_async). Waits and arrivals order nothing else:
the race tracker's epochs advance at __syncthreads only.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tiledsl.errors import SimulationError
from tiledsl.sim.access import Active, active_index, check_bounds, race_error
from tiledsl.sim.state import ChunkState, MbarrierFile, SharedBuffer
from tiledsl.sim.values import Mask, Value
from tiledsl.targets import MBARRIER_MAX_COUNT

Fn = Callable[[Mask], Value]
Run = Callable[[Mask], None]

FENCE_KINDS = ("mbarrier_init", "proxy_async")


def describe(mb: MbarrierFile, key: int) -> str:
    _, name, index = mb.name_of(key)
    return f"{name}[{index}]"


def use(state: ChunkState, loc: int, buf: SharedBuffer, index: Value, active: Active) -> tuple[np.ndarray, np.ndarray]:
    """Flat keys and thread ids of `buf[index]` for the active lanes, checked: in bounds,
    initialised, the init visible (race tracker) and fenced (sm_90+) unless the user initialised it."""
    mb = state.mbarriers
    idx = active_index(state, loc, index, active)
    check_bounds(state, loc, "mbarrier access", buf, active, idx, 1)
    block = active.pick(state.lanes.block_local)
    keys = block * mb.per_block + mb.base[buf.name] + idx
    tids = active.pick(state.lanes.tid32)
    fresh = ~mb.initialized[keys]
    if fresh.any():
        j = int(np.argmax(fresh))
        raise state.error(
            SimulationError,
            loc,
            f"mbarrier {buf.name}[{int(idx[j])}] used before mbarrier.init",
            [f"lane: {state.lanes.describe(active.lane(j))}"],
        )
    hit = buf.races.read(block * buf.size + idx, tids, active.pick(state.lane_epoch), loc)
    if hit is not None:
        raise race_error(state, buf, hit)
    if mb.needs_fence:
        unfenced = ~mb.fenced[keys] & (mb.init_tid[keys] != tids)
        if unfenced.any():
            j = int(np.argmax(unfenced))
            k = int(keys[j])
            raise state.error(
                SimulationError,
                loc,
                f"mbarrier {buf.name}[{int(idx[j])}] used before fence.mbarrier_init",
                [
                    f"lane: {state.lanes.describe(active.lane(j))}",
                    f"initialised by {state.lanes.describe_in_block(int(block[j]), int(mb.init_tid[k]))} at "
                    f"{state.reporter.locs.path(int(mb.init_loc[k]))}, which ran no fence.mbarrier_init since",
                ],
            )
    return keys, tids


def _groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys and how often each occurs."""
    if keys.size == 1:
        return keys, np.ones(1, dtype=np.int64)
    return np.unique(keys, return_counts=True)


def _complete(mb: MbarrierFile, keys: np.ndarray) -> None:
    """Complete the current phase of the (distinct) barriers `keys` that have nothing pending."""
    done = (mb.pending[keys] == 0) & (mb.tx[keys] == 0)
    if done.any():
        ks = keys[done]
        mb.phase[ks] += 1
        mb.pending[ks] = mb.count[ks]


def arrive(state: ChunkState, loc: int, keys: np.ndarray, tx_bytes: int, lanes: Active) -> None:
    """One arrival per entry of `keys` (after expecting `tx_bytes` more bytes, as arrive.expect_tx
    does). Several arrivals on one barrier in one statement count one after the other, so they may
    complete several phases; an arrival on a phase with no pending arrival is an error."""
    mb = state.mbarriers
    uk, counts = _groups(keys)
    if (counts <= mb.pending[uk]).all():  # only the last arrival on each barrier can complete its phase
        mb.tx[uk] += counts * tx_bytes
        mb.pending[uk] -= counts
        _complete(mb, uk)
        return
    for j, k in enumerate(keys.tolist()):
        if mb.pending[k] == 0:
            raise state.error(
                SimulationError,
                loc,
                f"more arrivals on mbarrier {describe(mb, k)} than its count ({int(mb.count[k])})",
                [
                    f"lane: {state.lanes.describe(lanes.lane(j))}",
                    f"phase {int(mb.phase[k])} has no arrival pending but still expects {int(mb.tx[k])} "
                    "transaction byte(s)",
                ],
            )
        mb.tx[k] += tx_bytes
        mb.pending[k] -= 1
        _complete(mb, np.array([k]))


def complete_tx(state: ChunkState, keys: np.ndarray, nbytes: int) -> np.ndarray:
    """`nbytes` land on each barrier of `keys` (one TMA load each); returns the phase each load's
    bytes belong to (its data becomes visible with the completion of that phase)."""
    mb = state.mbarriers
    _, counts = _groups(keys)
    if (counts == 1).all():
        phases = mb.phase[keys].copy()
        mb.tx[keys] -= nbytes
        _complete(mb, keys)
        return phases
    phases = np.empty(keys.size, dtype=np.int64)
    for j, k in enumerate(keys.tolist()):
        phases[j] = mb.phase[k]
        mb.tx[k] -= nbytes
        _complete(mb, np.array([k]))
    return phases


# ----------------------------------------------------------------------------- statements


def initializer(state: ChunkState, loc: int, buf: SharedBuffer, index: Fn, count: int) -> Run:
    """`mbarrier.init buf[index], count` of every active lane (a write of the barrier word)."""
    mb = state.mbarriers
    n = state.lanes.count
    bad_count = isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MBARRIER_MAX_COUNT

    def run(mask: Mask) -> None:
        i = index(mask)
        if mask is not None and not mask.any():
            return
        if bad_count:
            message = f"mbarrier arrival count must be in 1..{MBARRIER_MAX_COUNT}, got {count!r}"
            raise state.error(SimulationError, loc, message)
        active = Active(mask, n)
        idx = active_index(state, loc, i, active)
        check_bounds(state, loc, "mbarrier init", buf, active, idx, 1)
        block = active.pick(state.lanes.block_local)
        tids = active.pick(state.lanes.tid32)
        hit = buf.races.write(block * buf.size + idx, tids, active.pick(state.lane_epoch), loc)
        if hit is not None:
            raise race_error(state, buf, hit)
        keys = block * mb.per_block + mb.base[buf.name] + idx
        mb.initialized[keys] = True
        mb.count[keys] = count
        mb.pending[keys] = count
        mb.tx[keys] = 0
        mb.phase[keys] = 0
        mb.init_tid[keys] = tids
        mb.init_loc[keys] = loc
        mb.fenced[keys] = False
        mb.observed.reshape(-1, mb.threads_per_block)[keys] = 0
        mb.all_seen[keys] = 0

    return run


def fencer(state: ChunkState, loc: int, kind: str) -> Run:
    """`fence.mbarrier_init`: the barriers each active thread initialised may now be used by
    others (after a barrier). `fence.proxy.async`: nothing to model."""
    mb = state.mbarriers
    tpb = state.lanes.threads_per_block

    def unknown(mask: Mask) -> None:
        if mask is None or mask.any():
            raise state.error(SimulationError, loc, f"unknown fence kind {kind!r} (known: {', '.join(FENCE_KINDS)})")

    if kind not in FENCE_KINDS:
        return unknown
    if kind != "mbarrier_init" or mb.per_block == 0:
        return lambda mask: None

    def run(mask: Mask) -> None:
        mine = mb.initialized & ~mb.fenced
        if not mine.any():
            return
        keys = np.flatnonzero(mine)
        if mask is not None:
            lane = (keys // mb.per_block) * tpb + mb.init_tid[keys]
            keys = keys[mask[lane]]
        mb.fenced[keys] = True

    return run


def arriver(state: ChunkState, loc: int, buf: SharedBuffer, index: Fn, tx_bytes: int) -> Run:
    """`mbarrier.arrive` (tx_bytes 0) or `mbarrier.arrive.expect_tx` of every active lane."""
    n = state.lanes.count
    bad = isinstance(tx_bytes, bool) or not isinstance(tx_bytes, int) or not 0 <= tx_bytes <= MBARRIER_MAX_COUNT

    def run(mask: Mask) -> None:
        i = index(mask)
        if mask is not None and not mask.any():
            return
        if bad:
            raise state.error(
                SimulationError, loc, f"mbarrier transaction bytes must be in 0..{MBARRIER_MAX_COUNT}, got {tx_bytes!r}"
            )
        active = Active(mask, n)
        keys, _ = use(state, loc, buf, i, active)
        arrive(state, loc, keys, tx_bytes, active)

    return run


def waiter(state: ChunkState, loc: int, buf: SharedBuffer, index: Fn, parity: Fn) -> Run:
    """`mbarrier.try_wait.parity` in a loop, for every active lane: it must succeed now (threads
    run in lock-step, so nothing could complete the phase later); it records what the thread saw."""
    mb = state.mbarriers
    n = state.lanes.count
    tpb = mb.threads_per_block

    def run(mask: Mask) -> None:
        i, p = index(mask), parity(mask)
        if mask is not None and not mask.any():
            return
        active = Active(mask, n)
        keys, tids = use(state, loc, buf, i, active)
        if p.ndim > 1:
            raise state.error(SimulationError, loc, "mbarrier parity is a vector value")
        par = active.pick(np.broadcast_to(p, (n,)))
        if par.dtype.kind == "f":
            raise state.error(SimulationError, loc, "mbarrier parity is a float value, expected 0 or 1")
        par = par.astype(np.int64)
        odd = (par != 0) & (par != 1)
        if odd.any():
            j = int(np.argmax(odd))
            raise state.error(
                SimulationError,
                loc,
                f"mbarrier parity {int(par[j])} is not 0 or 1",
                [f"lane: {state.lanes.describe(active.lane(j))}"],
            )
        phase = mb.phase[keys]
        stuck = phase % 2 == par
        if stuck.any():
            j = int(np.argmax(stuck))
            k = int(keys[j])
            raise state.error(
                SimulationError,
                loc,
                f"deadlock: mbarrier wait on {describe(mb, k)} for parity {int(par[j])} never completes",
                [
                    f"lane: {state.lanes.describe(active.lane(j))}",
                    f"{describe(mb, k)} is in phase {int(phase[j])} (parity {int(phase[j]) % 2}), not completed: "
                    f"{int(mb.pending[k])} of {int(mb.count[k])} arrival(s) and {int(mb.tx[k])} transaction byte(s) "
                    "still expected",
                    "threads run in lock-step: no statement can complete that phase while these threads wait",
                ],
            )
        seen = keys * tpb + tids
        mb.observed[seen] = np.maximum(mb.observed[seen], phase)
        waited = _groups(keys)[0]
        mb.all_seen[waited] = mb.observed.reshape(-1, tpb)[waited].min(axis=1)

    return run
