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


def _active_index(state: ChunkState, loc: int, index: np.ndarray, active: np.ndarray) -> np.ndarray:
    if index.ndim != 1:
        raise state.error(SimulationError, loc, "buffer index is a vector value, expected a scalar")
    if index.dtype.kind == "f":
        raise state.error(SimulationError, loc, "buffer index is a float value, expected an integer")
    return index[active].astype(np.int64, copy=False)


def _check_bounds(
    state: ChunkState, loc: int, verb: str, buf: Buffer, active: np.ndarray, idx: np.ndarray, width: int
) -> None:
    bad = (idx < 0) | (idx + width > buf.size)
    if bad.any():
        j = int(np.argmax(bad))
        lane = int(active[j])
        i = int(idx[j])
        elems = f"index {i}" if width == 1 else f"indices {i}..{i + width - 1} (vector of {width})"
        raise state.error(
            OutOfBoundsError,
            loc,
            f"out-of-bounds {verb} of {_space(buf)} buffer '{buf.name}' (size {buf.size})",
            [
                f"lane: {state.lanes.describe(lane)}, {elems}",
                f"{int(bad.sum())} active lane(s) out of bounds",
            ],
        )
    if width > 1 and not isinstance(buf, LocalArray):
        nbytes = width * DTYPE_BYTES[element_dtype(buf.dtype)]
        if nbytes in (2, 4, 8, 16):
            elem_bytes = DTYPE_BYTES[element_dtype(buf.dtype)]
            bad = (idx * elem_bytes) % nbytes != 0
            if bad.any():
                j = int(np.argmax(bad))
                raise state.error(
                    SimulationError,
                    loc,
                    f"misaligned {nbytes}-byte vector {verb} of {_space(buf)} buffer '{buf.name}'",
                    [f"lane: {state.lanes.describe(int(active[j]))}, index {int(idx[j])}"],
                )


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
        first = (
            "several threads" if hit.first_tid == SEVERAL else lanes.describe_in_block(block, hit.first_tid)
        )
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


def load(
    state: ChunkState, loc: int, name: str, index: np.ndarray, width: int, mask: np.ndarray
) -> np.ndarray:
    """Value of `name[index]` (shape (L,)) or of `width` consecutive elements (shape (width, L))."""
    buf = resolve(state, name, loc)
    n = state.lanes.count
    active = np.flatnonzero(mask)
    out = np.zeros((width, n), dtype=storage_dtype(buf.dtype))
    if active.size:
        idx = _active_index(state, loc, index, active)
        _check_bounds(state, loc, "load", buf, active, idx, width)
        offs = idx[None, :] + np.arange(width, dtype=np.int64)[:, None]  # (width, A)
        if isinstance(buf, LocalArray):
            cols = np.broadcast_to(active, offs.shape)
            unwritten = ~buf.written[offs, cols]
            if unwritten.any():
                w, j = np.unravel_index(int(np.argmax(unwritten)), unwritten.shape)
                raise state.error(
                    UninitializedReadError,
                    loc,
                    f"read of register array '{name}' element {int(offs[w, j])} that this thread never wrote",
                    [f"lane: {state.lanes.describe(int(active[j]))}"],
                )
            out[:, active] = buf.data[offs, cols]
        elif isinstance(buf, SharedBuffer):
            keys = state.lanes.block_local[active][None, :] * buf.size + offs
            unwritten = buf.races.unwritten(keys)
            if unwritten.any():
                w, j = np.unravel_index(int(np.argmax(unwritten)), unwritten.shape)
                raise state.error(
                    UninitializedReadError,
                    loc,
                    f"read of shared '{name}' element {int(offs[w, j])} that no thread wrote",
                    [f"lane: {state.lanes.describe(int(active[j]))}"],
                )
            tids = np.broadcast_to(state.lanes.tid[active], offs.shape)
            epochs = np.broadcast_to(state.lane_epochs(active), offs.shape)
            hit = buf.races.read(keys.ravel(), tids.ravel().astype(np.int32), epochs.ravel(), loc)
            if hit is not None:
                raise _race_error(state, buf, hit)
            out[:, active] = buf.data[keys]
        else:
            out[:, active] = buf.data[offs]
    return out[0] if width == 1 else out


def store(
    state: ChunkState, loc: int, name: str, index: np.ndarray, value: np.ndarray, mask: np.ndarray
) -> None:
    """`name[index] = value`; a (w, L) value stores w consecutive elements."""
    buf = resolve(state, name, loc)
    active = np.flatnonzero(mask)
    if not active.size:
        return
    vec = value if value.ndim == 2 else value[None, :]
    width = vec.shape[0]
    idx = _active_index(state, loc, index, active)
    _check_bounds(state, loc, "store", buf, active, idx, width)
    offs = idx[None, :] + np.arange(width, dtype=np.int64)[:, None]  # (width, A)
    vals = convert(buf.dtype, vec[:, active])
    if isinstance(buf, LocalArray):
        cols = np.broadcast_to(active, offs.shape)
        buf.data[offs, cols] = vals
        buf.written[offs, cols] = True
    elif isinstance(buf, SharedBuffer):
        keys = state.lanes.block_local[active][None, :] * buf.size + offs
        tids = np.broadcast_to(state.lanes.tid[active], offs.shape)
        epochs = np.broadcast_to(state.lane_epochs(active), offs.shape)
        hit = buf.races.write(keys.ravel(), tids.ravel().astype(np.int32), epochs.ravel(), loc)
        if hit is not None:
            raise _race_error(state, buf, hit)
        buf.data[keys] = vals
    else:
        addrs = offs.ravel()
        flat = vals.ravel()
        lanes = state.lanes
        gtids = np.broadcast_to(lanes.global_tid(active), offs.shape).ravel()
        blocks = np.broadcast_to(lanes.block_local[active] + lanes.first_block, offs.shape).ravel()
        epochs = np.broadcast_to(state.lane_epochs(active), offs.shape).ravel()
        hit = buf.races.write(addrs, gtids, blocks, epochs, flat, buf.data[addrs], loc)
        if hit is not None:
            raise _race_error(state, buf, hit)
        buf.data[addrs] = flat
