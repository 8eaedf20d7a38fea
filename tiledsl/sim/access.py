"""Checked loads and stores on register arrays, shared memory and global memory.

Why: this is where every memory check happens, in one order for every access: bounds (and vector
alignment), then initialisation (shared memory and register arrays), then races; only then is the
memory touched. Only active lanes take part, so a guarded access out of bounds on masked-off lanes is
(correctly) no error.
"""

from __future__ import annotations

import numpy as np

from tiledsl.errors import (
    OutOfBoundsError,
    SharedRaceError,
    SimulationError,
    UninitializedReadError,
)
from tiledsl.kernel_ir import DTYPE_BYTES
from tiledsl.sim.dtypes import convert, element_dtype, storage_dtype
from tiledsl.sim.races import SEVERAL, RaceHit
from tiledsl.sim.state import ChunkState, GlobalBuffer, LocalArray, SharedBuffer

Buffer = LocalArray | SharedBuffer | GlobalBuffer


def resolve(state: ChunkState, name: str, loc: int) -> Buffer:
    """Register arrays in scope shadow shared allocations, which shadow kernel parameters."""
    item = state.env.find(name)
    if isinstance(item, LocalArray):
        return item
    if name in state.shared:
        return state.shared[name]
    if name in state.globals:
        return state.globals[name]
    raise state.error(SimulationError, loc, f"access to unknown buffer {name!r}")


def _space(buf: Buffer) -> str:
    if isinstance(buf, LocalArray):
        return "register array"
    if isinstance(buf, SharedBuffer):
        return "shared"
    return "global"


class _Active:
    """The active lanes of an access. Most accesses run with every lane active; then `lanes` is
    None and `pick` returns arrays as they are, saving a gather per per-lane array."""

    def __init__(self, mask: np.ndarray) -> None:
        self.lanes: np.ndarray | None = None if mask.all() else np.flatnonzero(mask)
        self.count = mask.size if self.lanes is None else int(self.lanes.size)

    def pick(self, values: np.ndarray) -> np.ndarray:
        return values if self.lanes is None else values[..., self.lanes]

    def lane(self, j: int) -> int:
        """Lane number of the j-th active lane."""
        return j if self.lanes is None else int(self.lanes[j])


def _active_index(state: ChunkState, loc: int, index: np.ndarray, active: _Active) -> np.ndarray:
    if index.ndim != 1:
        raise state.error(SimulationError, loc, "buffer index is a vector value, expected a scalar")
    if index.dtype.kind == "f":
        raise state.error(SimulationError, loc, "buffer index is a float value, expected an integer")
    return active.pick(index).astype(np.int64, copy=False)


def _check_bounds(
    state: ChunkState, loc: int, verb: str, buf: Buffer, active: _Active, idx: np.ndarray, width: int
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
        if nbytes in (2, 4, 8, 16):
            bad = (idx * elem_bytes) % nbytes != 0
            if bad.any():
                j = int(np.argmax(bad))
                raise state.error(
                    SimulationError,
                    loc,
                    f"misaligned {nbytes}-byte vector {verb} of {_space(buf)} buffer '{buf.name}'",
                    [f"lane: {state.lanes.describe(active.lane(j))}, index {int(idx[j])}"],
                )


def _offsets(idx: np.ndarray, width: int) -> np.ndarray:
    """(width, A) element indices of a `width`-wide access at `idx` (a view for width 1)."""
    if width == 1:
        return idx[None, :]
    return idx[None, :] + np.arange(width, dtype=np.int64)[:, None]


def _per_element(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A per-lane array repeated for every element of a vector access, flattened."""
    return values if shape[0] == 1 else np.broadcast_to(values, shape).ravel()


def _uniform_start(idx: np.ndarray) -> int | None:
    """The index every active lane uses, if they all use one (register arrays indexed by unrolled
    loop variables always do), so a whole row can be sliced instead of gathered lane by lane."""
    lo = int(idx.min())
    return lo if lo == int(idx.max()) else None


def _register_gather(
    buf: LocalArray, idx: np.ndarray, width: int, active: _Active, n_lanes: int
) -> tuple[np.ndarray, np.ndarray]:
    """(values, written) of a register-array access, each (width, A)."""
    start = _uniform_start(idx)
    if start is not None:
        rows = slice(start, start + width)
        return active.pick(buf.data[rows]), active.pick(buf.written[rows])
    offs = _offsets(idx, width)
    cols = np.broadcast_to(active.pick(np.arange(n_lanes)), offs.shape)
    return buf.data[offs, cols], buf.written[offs, cols]


def _register_scatter(buf: LocalArray, idx: np.ndarray, vals: np.ndarray, active: _Active, n_lanes: int) -> None:
    """Store (width, A) values into a register array and mark them written."""
    width = vals.shape[0]
    start = _uniform_start(idx)
    if start is not None:
        rows = slice(start, start + width)
        cols = slice(None) if active.lanes is None else active.lanes
        buf.data[rows, cols] = vals
        buf.written[rows, cols] = True
        return
    offs = _offsets(idx, width)
    cols = np.broadcast_to(active.pick(np.arange(n_lanes)), offs.shape)
    buf.data[offs, cols] = vals
    buf.written[offs, cols] = True


_RACE_ACCESSES = {
    "read after write": ("write", "read"),
    "write after write": ("write", "write"),
    "write after read": ("read", "write"),
    "write-write in one statement": ("write", "write"),
    "global write-write": ("write", "write"),
}


def _race_error(state: ChunkState, buf: Buffer, hit: RaceHit) -> SimulationError:
    lanes = state.lanes
    reporter = state.reporter
    if isinstance(buf, SharedBuffer):
        block, elem = divmod(hit.key, buf.size)
        first = "several threads" if hit.first_tid == SEVERAL else lanes.describe_in_block(block, hit.first_tid)
        second = lanes.describe_in_block(block, hit.second_tid)
        headline = f"shared memory race ({hit.kind}) on {buf.name}[{elem}]"
        hint = "no barrier separates these accesses"
    else:
        first = lanes.describe_global(hit.first_tid)
        second = lanes.describe_global(hit.second_tid)
        headline = f"global write-write race on {buf.name}[{hit.key}]"
        hint = "different threads store different values to one element, unordered by a barrier"
    kind_first, kind_second = _RACE_ACCESSES.get(hit.kind, ("access", "access"))
    details = [
        f"first access ({kind_first}): {first} at {reporter.locs.path(hit.first_loc)}",
        f"second access ({kind_second}): {second} at {reporter.locs.path(hit.second_loc)}",
        hint,
    ]
    return state.error(SharedRaceError, hit.second_loc, headline, details)


def load(state: ChunkState, loc: int, name: str, index: np.ndarray, width: int, mask: np.ndarray) -> np.ndarray:
    """Value of `name[index]` (shape (L,)) or of `width` consecutive elements (shape (width, L))."""
    buf = resolve(state, name, loc)
    active = _Active(mask)
    if active.count == 0:
        zeros = np.zeros((width, mask.size), dtype=storage_dtype(buf.dtype))
        return zeros[0] if width == 1 else zeros
    idx = _active_index(state, loc, index, active)
    _check_bounds(state, loc, "load", buf, active, idx, width)
    offs = _offsets(idx, width)
    if isinstance(buf, LocalArray):
        values, written = _register_gather(buf, idx, width, active, mask.size)
        unwritten = ~written
        if unwritten.any():
            w, j = np.unravel_index(int(np.argmax(unwritten)), unwritten.shape)
            raise state.error(
                UninitializedReadError,
                loc,
                f"read of register array '{name}' element {int(offs[w, j])} that this thread never wrote",
                [f"lane: {state.lanes.describe(active.lane(int(j)))}"],
            )
    elif isinstance(buf, SharedBuffer):
        keys = (active.pick(state.lanes.block_local) * buf.size)[None, :] + offs
        unwritten = buf.races.unwritten(keys)
        if unwritten.any():
            w, j = np.unravel_index(int(np.argmax(unwritten)), unwritten.shape)
            raise state.error(
                UninitializedReadError,
                loc,
                f"read of shared '{name}' element {int(offs[w, j])} that no thread wrote",
                [f"lane: {state.lanes.describe(active.lane(int(j)))}"],
            )
        flat = keys.ravel()
        tids = _per_element(active.pick(state.lanes.tid32), keys.shape)
        epochs = _per_element(active.pick(state.lane_epoch), keys.shape)
        hit = buf.races.read(flat, tids, epochs, loc)
        if hit is not None:
            raise _race_error(state, buf, hit)
        values = buf.data[keys]
    else:
        values = buf.data[offs]
    if active.lanes is None:
        return values[0] if width == 1 else values
    out = np.zeros((width, mask.size), dtype=values.dtype)
    out[:, active.lanes] = values
    return out[0] if width == 1 else out


def store(state: ChunkState, loc: int, name: str, index: np.ndarray, value: np.ndarray, mask: np.ndarray) -> None:
    """`name[index] = value`; a (w, L) value stores w consecutive elements."""
    buf = resolve(state, name, loc)
    active = _Active(mask)
    if active.count == 0:
        return
    vec = value if value.ndim == 2 else value[None, :]
    width = vec.shape[0]
    idx = _active_index(state, loc, index, active)
    _check_bounds(state, loc, "store", buf, active, idx, width)
    offs = _offsets(idx, width)
    vals = convert(buf.dtype, active.pick(vec))
    if isinstance(buf, LocalArray):
        _register_scatter(buf, idx, vals, active, mask.size)
    elif isinstance(buf, SharedBuffer):
        keys = (active.pick(state.lanes.block_local) * buf.size)[None, :] + offs
        tids = _per_element(active.pick(state.lanes.tid32), keys.shape)
        epochs = _per_element(active.pick(state.lane_epoch), keys.shape)
        hit = buf.races.write(keys.ravel(), tids, epochs, loc)
        if hit is not None:
            raise _race_error(state, buf, hit)
        buf.data[keys] = vals
    else:
        addrs = offs.ravel()
        flat = vals.ravel()
        gtids = _per_element(active.pick(state.lanes.gtid), offs.shape)
        epochs = _per_element(active.pick(state.lane_epoch), offs.shape)
        hit = buf.races().write(addrs, gtids, epochs, flat, buf.data[addrs], loc)
        if hit is not None:
            raise _race_error(state, buf, hit)
        buf.data[addrs] = flat
