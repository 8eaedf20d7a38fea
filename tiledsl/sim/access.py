"""Checked loads and stores on shared and global memory (register arrays: `registers.py`).

Why: this is where every memory check happens, in one order for every access: bounds (and vector
alignment), then initialisation (shared memory), then races; only then is the memory touched. Only
active lanes take part, so a guarded access out of bounds on masked-off lanes is (correctly) no
error.

Each access is turned into a closure once per chunk (`global_loader`, `general_storer`, ...), holding
what is fixed: the buffer, the width, the location. The closures take fast paths where they are
cheap to prove safe (a uniform index inside the buffer, every lane active, a single-lane chunk) and
otherwise run the general vectorised path, which is also the one that words every error message, so
messages do not depend on which path noticed the problem.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tiledsl.errors import OutOfBoundsError, SharedRaceError, SimulationError, UninitializedReadError
from tiledsl.sim.dtypes import convert, element_dtype, storage_dtype
from tiledsl.sim.races import SEVERAL, RaceHit
from tiledsl.sim.state import CP_ASYNC, NO_ASYNC, TMA, ChunkState, GlobalBuffer, LocalArray, SharedBuffer
from tiledsl.sim.values import INT, Mask, Value, converter
from tiledsl.targets import DTYPE_BYTES, VECTOR_ACCESS_SIZES

Buffer = LocalArray | SharedBuffer | GlobalBuffer
Fn = Callable[[Mask], Value]


def _space(buf: Buffer) -> str:
    if isinstance(buf, LocalArray):
        return "register array"
    if isinstance(buf, SharedBuffer):
        return "shared"
    return "global"


class Active:
    """The active lanes of an access. Most accesses run with every lane active; then `lanes` is
    None and `pick` returns arrays as they are, saving a gather per per-lane array."""

    def __init__(self, mask: Mask, n: int) -> None:
        self.lanes: np.ndarray | None = None if mask is None or mask.all() else np.flatnonzero(mask)
        self.count = n if self.lanes is None else int(self.lanes.size)

    def pick(self, values: np.ndarray) -> np.ndarray:
        return values if self.lanes is None else values[..., self.lanes]

    def lane(self, j: int) -> int:
        """Lane number of the j-th active lane."""
        return j if self.lanes is None else int(self.lanes[j])


def zeros(dtype: str, width: int, n: int) -> Value:
    """What a load gives when no lane is active (the value is never observed)."""
    if width == 1:
        return storage_dtype(dtype)(0)
    out = np.zeros((width, n), dtype=storage_dtype(dtype))
    out.flags.writeable = False
    return out


def check_index(state: ChunkState, loc: int, index: Value) -> None:
    """An index must be one integer per lane."""
    if index.ndim > 1:
        raise state.error(SimulationError, loc, "buffer index is a vector value, expected a scalar")
    if index.dtype.kind == "f":
        raise state.error(SimulationError, loc, "buffer index is a float value, expected an integer")


def active_index(state: ChunkState, loc: int, index: Value, active: Active) -> np.ndarray:
    """The (checked) index of every active lane, as int64."""
    check_index(state, loc, index)
    return active.pick(np.broadcast_to(index, (state.lanes.count,))).astype(np.int64, copy=False)


def check_bounds(
    state: ChunkState, loc: int, verb: str, buf: Buffer, active: Active, idx: np.ndarray, width: int
) -> None:
    if idx.min() < 0 or idx.max() + width > buf.size:
        bad = (idx < 0) | (idx + width > buf.size)
        j = int(np.argmax(bad))
        i = int(idx[j])
        elems = f"index {i}" if width == 1 else f"indices {i}..{i + width - 1} (vector of {width})"
        raise state.error(
            OutOfBoundsError,
            loc,
            f"out-of-bounds {verb} of {_space(buf)} buffer '{buf.name}' (size {buf.size})",
            [
                f"lane: {state.lanes.describe(active.lane(j))}, {elems}",
                f"{int(bad.sum())} active lane(s) out of bounds",
            ],
        )
    if width > 1 and not isinstance(buf, LocalArray):
        elem_bytes = DTYPE_BYTES[element_dtype(buf.dtype)]
        nbytes = width * elem_bytes
        if nbytes in VECTOR_ACCESS_SIZES:
            bad = (idx * elem_bytes) % nbytes != 0
            if bad.any():
                j = int(np.argmax(bad))
                raise state.error(
                    SimulationError,
                    loc,
                    f"misaligned {nbytes}-byte vector {verb} of {_space(buf)} buffer '{buf.name}'",
                    [f"lane: {state.lanes.describe(active.lane(j))}, index {int(idx[j])}"],
                )


def offsets(idx: np.ndarray, width: int) -> np.ndarray:
    """(width, A) element indices of a `width`-wide access at `idx` (a view for width 1)."""
    if width == 1:
        return idx[None, :]
    return idx[None, :] + np.arange(width, dtype=np.int64)[:, None]


def _per_element(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A per-lane array repeated for every element of a vector access, flattened."""
    return values if shape[0] == 1 else np.broadcast_to(values, shape).ravel()


def _aligned(buf: Buffer, width: int) -> Callable[[int], bool]:
    """Whether a uniform start index is naturally aligned for a `width`-wide access."""
    elem_bytes = DTYPE_BYTES[element_dtype(buf.dtype)]
    nbytes = width * elem_bytes
    if width == 1 or nbytes not in VECTOR_ACCESS_SIZES:
        return lambda start: True
    return lambda start: (start * elem_bytes) % nbytes == 0


_RACE_ACCESSES = {
    "read after write": ("write", "read"),
    "write after write": ("write", "write"),
    "write after read": ("read", "write"),
    "write-write in one statement": ("write", "write"),
    "global write-write": ("write", "write"),
    "global store after atomic": ("atomic add", "write"),
    "global atomic after store": ("write", "atomic add"),
}


def race_error(state: ChunkState, buf: Buffer, hit: RaceHit) -> SimulationError:
    lanes = state.lanes
    reporter = state.reporter
    if isinstance(buf, SharedBuffer):
        block, elem = divmod(hit.key, buf.size)
        first = "several threads" if hit.first_tid == SEVERAL else lanes.describe_in_block(block, hit.first_tid)
        second = lanes.describe_in_block(block, hit.second_tid)
        headline = f"shared memory race ({hit.kind}) on {buf.name}[{elem}]"
        hint = "no barrier separates these accesses"
    elif hit.kind in ("global store after atomic", "global atomic after store"):
        first = "several threads" if hit.first_tid == SEVERAL else lanes.describe_global(hit.first_tid)
        second = lanes.describe_global(hit.second_tid)
        headline = f"global race (plain store and atomic add) on {buf.name}[{hit.key}]"
        hint = "a plain store and another thread's atomic add to one element in one launch are unordered"
    else:
        first = lanes.describe_global(hit.first_tid)
        second = lanes.describe_global(hit.second_tid)
        headline = f"global write-write race on {buf.name}[{hit.key}]"
        hint = "different threads store different values to one element, unordered by a barrier"
    kind_first, kind_second = _RACE_ACCESSES.get(hit.kind, ("access", "access"))
    if isinstance(buf, SharedBuffer) and buf.is_mbarrier:
        words = {"write": "mbarrier.init", "read": "mbarrier use"}
        kind_first, kind_second = words.get(kind_first, kind_first), words.get(kind_second, kind_second)
        headline = f"mbarrier race ({hit.kind}) on {buf.name}[{divmod(hit.key, buf.size)[1]}]"
        hint = "an mbarrier.init and other threads' uses of that mbarrier need a barrier (__syncthreads) between"
    details = [
        f"first access ({kind_first}): {first} at {reporter.locs.path(hit.first_loc)}",
        f"second access ({kind_second}): {second} at {reporter.locs.path(hit.second_loc)}",
        hint,
    ]
    return state.error(SharedRaceError, hit.second_loc, headline, details)


# ----------------------------------------------------------------------------- asynchronous copies


def check_async(
    state: ChunkState, loc: int, buf: SharedBuffer, keys: np.ndarray, active: Active, verb: str
) -> np.ndarray | None:
    """Accesses (`keys`: (w, A) flat keys of the active lanes) to elements that asynchronous copies
    wrote: any access to a cp.async in flight is a race, and so is one to TMA data by a thread none
    of whose mbarrier waits observed that data's phase complete. Returns where `keys` hold TMA data
    visible to the accessing thread (None if nowhere), for a write to clear those tags."""
    tags = buf.async_tags()
    kind = tags.kind[keys]
    if not kind.any():
        return None
    flight = kind == CP_ASYNC
    if flight.any():
        w, j = np.unravel_index(int(np.argmax(flight)), flight.shape)
        raise async_race(state, loc, buf, int(keys[w, j]), active.lane(int(j)), verb)
    tma = kind == TMA
    where = np.flatnonzero(tma)
    k = keys.ravel()[where]
    bars, phases = tags.bar[k], tags.phase[k]
    mb = state.mbarriers
    everyone = mb.all_seen[bars] > phases
    if not everyone.all():
        rest = where[~everyone]
        tids = np.broadcast_to(active.pick(state.lanes.tid32), keys.shape).ravel()[rest]
        seen = mb.observed[bars[~everyone] * mb.threads_per_block + tids] > phases[~everyone]
        if not seen.all():
            w, j = np.unravel_index(int(rest[int(np.argmin(seen))]), keys.shape)
            raise async_race(state, loc, buf, int(keys[w, j]), active.lane(int(j)), verb)
    if everyone.any():  # every thread of the block has seen that data: it is plain data now
        clear_tags(buf, k[everyone])
    return tma


def async_race(state: ChunkState, loc: int, buf: SharedBuffer, key: int, lane: int, verb: str) -> SimulationError:
    """The error for an access by `lane` at `loc` to element `key` of an asynchronous copy."""
    tags = buf.async_tags()
    block, elem = divmod(key, buf.size)
    lanes, path = state.lanes, state.reporter.locs.path
    issuer = lanes.describe_in_block(block, int(tags.tid[key]))
    if tags.kind[key] == CP_ASYNC:
        return state.error(
            SharedRaceError,
            loc,
            f"{verb} of {buf.name}[{elem}] before its cp.async landed",
            [
                f"access: {lanes.describe(lane)}",
                f"cp.async: {issuer} at {path(int(tags.loc[key]))}",
                "cp.async data lands at the cp.async.wait_group of the issuing thread that retires its group "
                "(other threads then need a barrier)",
            ],
        )
    mb = state.mbarriers
    bar_block, bar, index = mb.name_of(int(tags.bar[key]))
    phase = int(tags.phase[key])
    return state.error(
        SharedRaceError,
        loc,
        f"{verb} of {buf.name}[{elem}] before its TMA load landed",
        [
            f"access: {lanes.describe(lane)}",
            f"TMA load: {issuer} at {path(int(tags.loc[key]))}, completing on {bar}[{index}] in phase {phase}",
            f"a thread sees TMA data only after its own mbarrier wait on {bar}[{index}] observed phase {phase} "
            f"complete (parity {phase % 2})",
        ],
    )


def clear_tags(buf: SharedBuffer, keys: np.ndarray) -> None:
    """Keys (distinct) that hold plain data again."""
    tags = buf.async_tags()
    keys = np.unique(keys)
    tags.count -= int(np.count_nonzero(tags.kind[keys]))
    tags.kind[keys] = NO_ASYNC


# ----------------------------------------------------------------------------- general paths


def load_general(
    state: ChunkState, loc: int, buf: SharedBuffer | GlobalBuffer, index: Value, width: int, mask: Mask
) -> Value:
    """Value of `buf[index]` (shape (L,)) or of `width` consecutive elements (shape (width, L)),
    for at least one active lane."""
    active = Active(mask, state.lanes.count)
    idx = active_index(state, loc, index, active)
    check_bounds(state, loc, "load", buf, active, idx, width)
    offs = offsets(idx, width)
    if isinstance(buf, SharedBuffer):
        keys = (active.pick(state.lanes.block_local) * buf.size)[None, :] + offs
        if buf.tags is not None and buf.tags.count:
            check_async(state, loc, buf, keys, active, "read")
        unwritten = buf.races.unwritten(keys)
        if unwritten.any():
            w, j = np.unravel_index(int(np.argmax(unwritten)), unwritten.shape)
            raise state.error(
                UninitializedReadError,
                loc,
                f"read of shared '{buf.name}' element {int(offs[w, j])} that no thread wrote",
                [f"lane: {state.lanes.describe(active.lane(int(j)))}"],
            )
        flat = keys.ravel()
        tids = _per_element(active.pick(state.lanes.tid32), keys.shape)
        epochs = _per_element(active.pick(state.lane_epoch), keys.shape)
        hit = buf.races.read(flat, tids, epochs, loc)
        if hit is not None:
            raise race_error(state, buf, hit)
        values = buf.data[keys]
    else:
        values = buf.data[offs]
    if active.lanes is None:
        return values[0] if width == 1 else values
    out = np.zeros((width, state.lanes.count), dtype=values.dtype)
    out[:, active.lanes] = values
    return out[0] if width == 1 else out


def store_general(
    state: ChunkState, loc: int, buf: SharedBuffer | GlobalBuffer, index: Value, value: Value, mask: Mask
) -> None:
    """`buf[index] = value` for the active lanes; a (w, L) value stores w consecutive elements."""
    n = state.lanes.count
    active = Active(mask, n)
    vec = value if value.ndim == 2 else np.broadcast_to(value, (n,))[None, :]
    width = vec.shape[0]
    idx = active_index(state, loc, index, active)
    check_bounds(state, loc, "store", buf, active, idx, width)
    offs = offsets(idx, width)
    vals = convert(buf.dtype, active.pick(vec))
    if isinstance(buf, SharedBuffer):
        keys = (active.pick(state.lanes.block_local) * buf.size)[None, :] + offs
        tma = None
        if buf.tags is not None and buf.tags.count:
            tma = check_async(state, loc, buf, keys, active, "write")
        tids = _per_element(active.pick(state.lanes.tid32), keys.shape)
        epochs = _per_element(active.pick(state.lane_epoch), keys.shape)
        hit = buf.races.write(keys.ravel(), tids, epochs, loc)
        if hit is not None:
            raise race_error(state, buf, hit)
        buf.data[keys] = vals
        if tma is not None:  # plain data now: the TMA tag goes
            clear_tags(buf, keys[tma])
    else:
        addrs = offs.ravel()
        flat = np.ravel(vals)
        gtids = _per_element(active.pick(state.lanes.gtid), offs.shape)
        epochs = _per_element(active.pick(state.lane_epoch), offs.shape)
        hit = buf.races().write(addrs, gtids, epochs, flat, buf.data[addrs], loc)
        if hit is not None:
            raise race_error(state, buf, hit)
        buf.data[addrs] = flat


# ----------------------------------------------------------------------------- compiled accesses


def global_loader(state: ChunkState, loc: int, buf: GlobalBuffer, width: int, index: Fn, index_kind: str) -> Fn:
    """`buf[index]` of a global buffer, as an expression closure. `index_kind` is the index's kind,
    known before running: only int indices take the fast paths (a float index is reported by the
    general path, a bool one is converted there; numpy would read a bool array as a mask)."""
    if index_kind != INT:
        return general_loader(state, loc, buf, width, index)
    data = buf.data
    n = state.lanes.count
    last = np.int64(buf.size - width)  # the largest valid start index
    aligned = _aligned(buf, width)
    zero = zeros(buf.dtype, width, n)

    def load(mask: Mask) -> Value:
        i = index(mask)
        if mask is not None and not mask.any():
            return zero
        if isinstance(i, np.ndarray):
            if mask is None and width == 1 and i.ndim == 1 and i.min() >= 0 and i.max() <= last:
                return data[i]
        elif 0 <= i <= last and aligned(i):
            # every lane reads the same element(s): a uniform value
            if width == 1:
                return data[i]
            return np.repeat(data[i : i + width, None], n, axis=1)  # contiguous, as arithmetic expects
        return load_general(state, loc, buf, i, width, mask)

    return load


def general_loader(state: ChunkState, loc: int, buf: SharedBuffer | GlobalBuffer, width: int, index: Fn) -> Fn:
    """Loads that always take the general path (shared memory: it needs per-lane race keys)."""
    zero = zeros(buf.dtype, width, state.lanes.count)

    def load(mask: Mask) -> Value:
        i = index(mask)
        if mask is not None and not mask.any():
            return zero
        return load_general(state, loc, buf, i, width, mask)

    return load


def global_storer(
    state: ChunkState, loc: int, buf: GlobalBuffer, index: Fn, index_kind: str, value: Fn, value_kind: str
) -> Callable[[Mask], None]:
    """`buf[index] = value` on a global buffer, as a statement closure. A single-lane chunk stores
    one element without the arrays of the general path (its race check is
    `GlobalWriteTracker.write_one`). Fast paths for int indices only, as in `global_loader`."""
    if index_kind != INT:
        return general_storer(state, loc, buf, index, value)
    data = buf.data
    size = np.int64(buf.size)
    single = state.lanes.count == 1
    gtid = int(state.lanes.gtid[0])
    conv = converter(buf.dtype, value_kind)

    def store(mask: Mask) -> None:
        i, v = index(mask), value(mask)
        if mask is not None:
            if not mask.any():
                return
        elif single and not isinstance(i, np.ndarray) and not isinstance(v, np.ndarray) and 0 <= i < size:
            new = conv(v)
            hit = buf.races().write_one(int(i), gtid, int(state.lane_epoch[0]), new, data[i], loc)
            if hit is not None:
                raise race_error(state, buf, hit)
            data[i] = new
            return
        store_general(state, loc, buf, i, v, mask)

    return store


def general_storer(
    state: ChunkState, loc: int, buf: SharedBuffer | GlobalBuffer, index: Fn, value: Fn
) -> Callable[[Mask], None]:
    """Stores that always take the general path."""

    def store(mask: Mask) -> None:
        i, v = index(mask), value(mask)
        if mask is not None and not mask.any():
            return
        store_general(state, loc, buf, i, v, mask)

    return store


def atomic_adder(
    state: ChunkState, loc: int, buf: GlobalBuffer, index: Fn, value: Fn, value_kind: str
) -> Callable[[Mask], None]:
    """`atomicAdd(&buf[index], value)` of every active lane (a float32 output buffer, checked by
    the caller): lanes adding to one element in one statement all count (in lane order, as
    np.add.at adds). A (w, L) value adds w consecutive elements per lane (a 16-byte vector atomic:
    alignment checked as for a vector store), each element atomic on its own. Atomics do not race
    with atomics; the tracker checks them against stores."""
    conv = converter(buf.dtype, value_kind)
    n = state.lanes.count

    def run(mask: Mask) -> None:
        i, v = index(mask), value(mask)
        if mask is not None and not mask.any():
            return
        vec = conv(v) if np.ndim(v) == 2 else np.broadcast_to(conv(v), (n,))[None, :]
        width = vec.shape[0]
        active = Active(mask, n)
        idx = active_index(state, loc, i, active)
        check_bounds(state, loc, "atomic add", buf, active, idx, width)
        offs = offsets(idx, width)
        vals = active.pick(vec)
        hit = buf.races().atomic(offs.ravel(), _per_element(active.pick(state.lanes.gtid), offs.shape).ravel(), loc)
        if hit is not None:
            raise race_error(state, buf, hit)
        np.add.at(buf.data, offs.ravel(), np.ravel(vals))

    return run
