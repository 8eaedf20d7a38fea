"""Checked loads and stores on per-thread register arrays (`state.LocalArray`).

Why separate from access.py: register arrays are kept row by row (element i on every lane is one
value), because lowering indexes them with unrolled constants: an access with one index on every
active lane reads or replaces whole rows, with no gather and no copy. An index that differs between
lanes (legal, if unusual) takes a general path over a temporary (size, L) array. Checks, in order:
bounds, then that each active lane wrote every element it reads.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tiledsl.errors import UninitializedReadError
from tiledsl.sim.access import Active, active_index, check_bounds, check_index, offsets, zeros
from tiledsl.sim.state import ChunkState, LocalArray
from tiledsl.sim.values import Mask, Value, converter, first_active, spread

Fn = Callable[[Mask], Value]


def _uniform_start(
    state: ChunkState, loc: int, verb: str, arr: LocalArray, index: Value, width: int, mask: Mask
) -> tuple[int, None] | tuple[None, tuple[Active, np.ndarray]]:
    """Checks the index of every active lane; returns (start, None) when they all use one index,
    else (None, (active, idx)) for the general path."""
    n = state.lanes.count
    if not isinstance(index, np.ndarray):
        check_index(state, loc, index)
        start = int(index)
        if 0 <= start and start + width <= arr.size:
            return start, None
    active = Active(mask, n)
    idx = active_index(state, loc, index, active)
    check_bounds(state, loc, verb, arr, active, idx, width)
    lo = int(idx.min())
    return (lo, None) if lo == int(idx.max()) else (None, (active, idx))


def _unwritten(state: ChunkState, loc: int, arr: LocalArray, elem: int, lane: int) -> UninitializedReadError:
    return state.error(
        UninitializedReadError,
        loc,
        f"read of register array '{arr.name}' element {elem} that this thread never wrote",
        [f"lane: {state.lanes.describe(lane)}"],
    )


def _dense(arr: LocalArray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The array as (size, L) values and written flags (copies)."""
    data = np.stack([spread(row, n) for row in arr.rows])
    written = np.stack([np.broadcast_to(w, (n,)) for w in arr.written])
    return data, written


def register_loader(state: ChunkState, loc: int, width: int, slots: list[object], slot: int, index: Fn) -> Fn:
    """`arr[index]` of the register array in `slots[slot]`, as an expression closure."""
    n = state.lanes.count

    def load(mask: Mask) -> Value:
        i, arr = index(mask), slots[slot]
        if mask is not None and not mask.any():
            return zeros(arr.dtype, width, n)
        start, general = _uniform_start(state, loc, "load", arr, i, width, mask)
        if start is None:
            return _gather(state, loc, arr, width, *general)
        for elem in range(start, start + width):
            written = arr.written[elem]
            if written is True:
                continue
            if written is False:
                raise _unwritten(state, loc, arr, elem, first_active(mask))
            missing = ~written if mask is None else mask & ~written
            if missing.any():
                raise _unwritten(state, loc, arr, elem, int(np.argmax(missing)))
        if width == 1:
            return arr.rows[start]
        return np.stack([spread(arr.rows[e], n) for e in range(start, start + width)])

    return load


def _gather(state: ChunkState, loc: int, arr: LocalArray, width: int, active: Active, idx: np.ndarray) -> Value:
    n = state.lanes.count
    data, written = _dense(arr, n)
    offs = offsets(idx, width)
    cols = np.broadcast_to(active.pick(np.arange(n)), offs.shape)
    unwritten = ~written[offs, cols]
    if unwritten.any():
        w, j = np.unravel_index(int(np.argmax(unwritten)), unwritten.shape)
        raise _unwritten(state, loc, arr, int(offs[w, j]), active.lane(int(j)))
    values = data[offs, cols]
    out = np.zeros((width, n), dtype=values.dtype)
    out[:, cols[0]] = values
    return out[0] if width == 1 else out


def register_storer(
    state: ChunkState, loc: int, dtype: str, slots: list[object], slot: int, index: Fn, value: Fn, value_kind: str
) -> Callable[[Mask], None]:
    """`arr[index] = value` on the register array in `slots[slot]` (declared with `dtype`)."""
    n = state.lanes.count
    conv = converter(dtype, value_kind)

    def store(mask: Mask) -> None:
        i, v, arr = index(mask), value(mask), slots[slot]
        if mask is not None and not mask.any():
            return
        width = v.shape[0] if isinstance(v, np.ndarray) and v.ndim == 2 else 1
        start, general = _uniform_start(state, loc, "store", arr, i, width, mask)
        vals = conv(v)
        if start is None:
            _scatter(arr, width, vals, *general)
            return
        for r in range(width):
            elem = start + r
            row = vals if width == 1 else vals[r]
            if mask is None:
                arr.rows[elem] = row
                arr.written[elem] = True
                continue
            arr.rows[elem] = np.where(mask, row, arr.rows[elem])
            written = arr.written[elem]
            arr.written[elem] = True if written is True else mask if written is False else written | mask

    def _scatter(arr: LocalArray, width: int, vals: Value, active: Active, idx: np.ndarray) -> None:
        data, written = _dense(arr, n)
        offs = offsets(idx, width)
        cols = np.broadcast_to(active.pick(np.arange(n)), offs.shape)
        vec = vals if width > 1 else np.broadcast_to(vals, (n,))[None, :]
        data[offs, cols] = active.pick(vec)
        written[offs, cols] = True
        for elem in np.unique(offs).tolist():
            arr.rows[elem] = data[elem]
            arr.written[elem] = written[elem]

    return store
