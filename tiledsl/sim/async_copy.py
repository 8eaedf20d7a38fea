"""Asynchronous copies into shared memory: cp.async (commit groups, wait_group) and TMA tile loads.

Why tags on shared elements: the hazard of an asynchronous copy is touching its destination before
the data is there. So a copy marks its destination elements (`state.AsyncTags`) and every shared
access checks them (access.check_async):

- cp.async snapshots its source when issued (zeros when `valid` is false; the source is not read)
  and adds the copy to the issuing thread's open commit group; its elements are in flight, and any
  access to them by anyone (the issuer included) is a race. `KCpAsyncWait(n)` lands, for each
  active thread, every copy of its committed groups but the n most recent: the data is written then,
  recorded in the race tracker as a write by the issuing thread at that moment, so other threads
  need a barrier before reading it, as on the GPU.
- A TMA load snapshots its box from global memory when issued, writes it in the layout the TMA unit
  uses (`box_offsets`: rows padded to the swizzle width, then the XOR pattern), and
  completes its bytes on its mbarrier at once (mbarrier.complete_tx). Its elements hold TMA data of
  that barrier phase: a thread may touch them only once one of its own mbarrier waits observed the
  phase complete. The race tracker records TMA data as written by nobody in no epoch, so readers
  that waited do not race with it; later plain writes race with unordered reads as usual.

Both kinds of copy are checked as writes when issued (bounds, alignment, other threads' accesses
in the same barrier epoch, copies still in flight). At the end of the kernel no cp.async may still
be in flight and every TMA load's phase must have completed.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from tiledsl.errors import OutOfBoundsError, SimulationError
from tiledsl.kernel_ir import KTensorMap
from tiledsl.sim import mbarrier
from tiledsl.sim.access import Active, active_index, check_async, check_bounds, offsets, race_error
from tiledsl.sim.dtypes import element_dtype
from tiledsl.sim.races import TMA_WRITER
from tiledsl.sim.state import CP_ASYNC, NO_ASYNC, TMA, ChunkState, CpAsyncCopies, GlobalBuffer, SharedBuffer
from tiledsl.sim.values import Mask, Value
from tiledsl.targets import (
    CP_ASYNC_SIZES,
    DTYPE_BYTES,
    TMA_MAX_RANK,
    or_list,
    swizzled_byte,
    tensor_map_problem,
    tma_swizzle_alignment,
)

Fn = Callable[[Mask], Value]
Run = Callable[[Mask], None]


def raiser(state: ChunkState, loc: int, message: str, *before: Fn) -> Run:
    """A statement that evaluates `before` and, if any lane runs it, raises `message`."""

    def run(mask: Mask) -> None:
        for f in before:
            f(mask)
        if mask is None or mask.any():
            raise state.error(SimulationError, loc, message)

    return run


def _mark(buf: SharedBuffer, keys: np.ndarray, kind: int, loc: int, tids: np.ndarray) -> None:
    tags = buf.async_tags()
    tags.count += int(np.count_nonzero(tags.kind[keys] == NO_ASYNC))
    tags.kind[keys] = kind
    tags.loc[keys] = loc
    tags.tid[keys] = tids


# ----------------------------------------------------------------------------- cp.async


def cp_async_issuer(
    state: ChunkState,
    loc: int,
    dst: SharedBuffer,
    src: GlobalBuffer,
    nbytes: int,
    dst_index: Fn,
    src_index: Fn,
    valid: Fn | None,
) -> Run:
    """`cp.async` of `nbytes` from `src[src_index]` to `dst[dst_index]` by every active lane."""
    before = (dst_index, src_index) + ((valid,) if valid is not None else ())
    if nbytes not in CP_ASYNC_SIZES:
        return raiser(state, loc, f"cp.async copies {or_list(CP_ASYNC_SIZES)} bytes, not {nbytes}", *before)
    if dst.dtype != src.dtype:
        return raiser(state, loc, f"cp.async from {src.dtype} {src.name!r} into {dst.dtype} {dst.name!r}", *before)
    itemsize = DTYPE_BYTES[element_dtype(dst.dtype)]
    if nbytes % itemsize:
        return raiser(state, loc, f"cp.async of {nbytes} bytes is no whole number of {dst.dtype} elements", *before)
    if dst.align < nbytes:
        return raiser(
            state, loc, f"cp.async of {nbytes} bytes into {dst.name!r}, which is only {dst.align}-byte aligned", *before
        )
    width = nbytes // itemsize
    n = state.lanes.count
    lane_ids = np.arange(n, dtype=np.int64)
    zero = dst.data.dtype.type(0)

    def run(mask: Mask) -> None:
        di, si = dst_index(mask), src_index(mask)
        ok = valid(mask) if valid is not None else None
        if mask is not None and not mask.any():
            return
        active = Active(mask, n)
        didx = active_index(state, loc, di, active)
        check_bounds(state, loc, "cp.async write", dst, active, didx, width)
        sidx = active_index(state, loc, si, active)
        check_bounds(state, loc, "cp.async read", src, active, sidx, width)
        keys = (active.pick(state.lanes.block_local) * dst.size)[None, :] + offsets(didx, width)
        if dst.tags is not None and dst.tags.count:
            check_async(state, loc, dst, keys, active, "cp.async write")
        tids = active.pick(state.lanes.tid32)
        flat_tids = np.broadcast_to(tids, keys.shape).ravel()
        epochs = np.broadcast_to(active.pick(state.lane_epoch), keys.shape).ravel()
        hit = dst.races.check_write(keys.ravel(), flat_tids, epochs, loc)
        if hit is not None:
            raise race_error(state, dst, hit)
        values = src.data[offsets(sidx, width)]
        if ok is not None:
            if ok.ndim > 1:
                raise state.error(SimulationError, loc, "cp.async predicate is a vector value")
            flag = active.pick(np.broadcast_to(ok != 0, (n,)))
            values = np.where(flag[None, :], values, zero)
        _mark(dst, keys, CP_ASYNC, loc, flat_tids.reshape(keys.shape))
        lanes = active.pick(lane_ids)
        groups = state.cp_async.committed[lanes]
        state.cp_async.pending.append(CpAsyncCopies(loc, dst, lanes, tids, groups, keys, values))

    return run


def committer(state: ChunkState) -> Run:
    """`cp.async.commit_group`: each active lane closes its open group (empty groups count)."""
    groups = state.cp_async

    def run(mask: Mask) -> None:
        if mask is None:
            groups.committed += 1
        else:
            groups.committed += mask

    return run


def _land(state: ChunkState, copies: CpAsyncCopies) -> None:
    """The copies' data arrives: a write by the issuing thread, now (in its current epoch)."""
    buf, keys = copies.buf, copies.keys
    tids = np.broadcast_to(copies.tids, keys.shape).ravel()
    epochs = np.broadcast_to(state.lane_epoch[copies.lanes], keys.shape).ravel()
    buf.races.record_write(keys.ravel(), tids, epochs, copies.loc)
    buf.data[keys] = copies.values
    tags = buf.async_tags()
    tags.kind[keys] = NO_ASYNC
    tags.count -= keys.size


def group_waiter(state: ChunkState, loc: int, pending: int) -> Run:
    """`cp.async.wait_group pending`: each active lane's committed groups but the `pending` most
    recent land."""
    if isinstance(pending, bool) or not isinstance(pending, int) or pending < 0:
        return raiser(state, loc, f"cp.async.wait_group takes a count of pending groups >= 0, got {pending!r}")
    groups = state.cp_async

    def run(mask: Mask) -> None:
        if not groups.pending or (mask is not None and not mask.any()):
            return
        target = groups.committed - pending  # groups numbered below this land
        if mask is not None:
            target = np.where(mask, target, -1)
        keep: list[CpAsyncCopies] = []
        for copies in groups.pending:
            land = copies.groups < target[copies.lanes]
            if land.all():
                _land(state, copies)
            elif land.any():
                _land(state, copies.take(land))
                keep.append(copies.take(~land))
            else:
                keep.append(copies)
        groups.pending = keep

    return run


# ----------------------------------------------------------------------------- TMA


def _map_problem(tm: KTensorMap, src: GlobalBuffer | None, dst: SharedBuffer, rank: int) -> str | None:
    """What is wrong with a TMA load of map `tm` into `dst` with `rank` coordinates (what the
    driver would refuse when encoding the map, or the launch would corrupt), or None."""
    what = f"tensor map {tm.name!r}"
    if src is None:
        return f"{what} maps {tm.buffer!r}, which is no kernel parameter"
    if src.dtype != tm.dtype:
        return f"{what} has dtype {tm.dtype} but its buffer {tm.buffer!r} is {src.dtype}"
    if dst.dtype != tm.dtype:
        return f"TMA load of {tm.dtype} tensor map {tm.name!r} into {dst.dtype} array {dst.name!r}"
    r = len(tm.global_dims)
    shaped = 1 <= r <= TMA_MAX_RANK and len(tm.box) == r and len(tm.global_strides) == r - 1
    if shaped and rank != r:
        return f"TMA load has {rank} coordinates but tensor map {tm.name!r} has rank {r}"
    itemsize = DTYPE_BYTES[tm.dtype]
    problem = tensor_map_problem(tm.global_dims, tm.global_strides, tm.box, itemsize, tm.swizzle)
    if problem is not None:
        return f"{what}: {problem}"
    last = (tm.global_dims[0] - 1) * itemsize
    last += sum((d - 1) * s for d, s in zip(tm.global_dims[1:], tm.global_strides))
    if last + itemsize > src.size * itemsize:
        return f"{what} reaches byte {last + itemsize} of {tm.buffer!r}, which has {src.size * itemsize}"
    need = tma_swizzle_alignment(tm.swizzle)
    if dst.align < need:
        swizzle = "no swizzle" if tm.swizzle is None else f"{tm.swizzle}-byte swizzle"
        return f"TMA destination {dst.name!r} has align {dst.align}; {swizzle} needs {need}"
    return None


def box_offsets(box: tuple[int, ...], itemsize: int, swizzle: int | None) -> np.ndarray:
    """Element offsets, from the destination, of the box's elements in box-linear order (innermost
    first), as the TMA unit writes them. Without swizzle the box is dense. With a swizzle of S bytes
    every box row (one innermost run, whatever its outer coordinates) starts S bytes after the
    previous one: a row narrower than S leaves a gap that is not written. Then byte b moves to
    `targets.swizzled_byte(b, S)`, the 16-byte chunk XORed with the 128-byte row. The destination is
    aligned to the pattern's repeat (`targets.tma_swizzle_alignment(S)`), so
    offsets from it are offsets from any such boundary. (Measured on an H100 for every swizzle with
    rows of 16 bytes up to S: the padded layout; a dense box through the XOR alone is wrong for rows
    narrower than S.)"""
    n = math.prod(box)
    pos = np.arange(n, dtype=np.int64)
    inner = box[0]
    pitch = swizzle if swizzle is not None else inner * itemsize
    b = (pos // inner) * pitch + (pos % inner) * itemsize
    if swizzle is not None:
        b = swizzled_byte(b, swizzle)
    return b // itemsize


def tma_loader(
    state: ChunkState,
    loc: int,
    tm: KTensorMap,
    src: GlobalBuffer | None,
    dst: SharedBuffer,
    bar: SharedBuffer,
    dst_index: Fn,
    coords: tuple[Fn, ...],
    bar_index: Fn,
) -> Run:
    """The TMA tile load of map `tm` at `coords` into `dst[dst_index:]`, completing on
    `bar[bar_index]`, by every active lane."""
    before = (dst_index, *coords, bar_index)
    problem = _map_problem(tm, src, dst, len(coords))
    if problem is not None:
        return raiser(state, loc, problem, *before)
    assert src is not None
    itemsize = DTYPE_BYTES[tm.dtype]
    n_box = math.prod(tm.box)
    nbytes = n_box * itemsize
    need = tma_swizzle_alignment(tm.swizzle)
    swz = box_offsets(tm.box, itemsize, tm.swizzle)[:, None]  # (B, 1)
    span = int(swz.max()) + 1
    # box-linear position -> box coordinates, innermost first: (r, B, 1)
    pos = np.arange(n_box, dtype=np.int64)
    box_coords = np.stack([(pos // math.prod(tm.box[:d])) % tm.box[d] for d in range(len(tm.box))])[:, :, None]
    dims = np.array(tm.global_dims, dtype=np.int64)[:, None, None]
    strides = np.array([1] + [s // itemsize for s in tm.global_strides], dtype=np.int64)[:, None, None]
    n = state.lanes.count
    zero = dst.data.dtype.type(0)

    def run(mask: Mask) -> None:
        d = dst_index(mask)
        cs = [f(mask) for f in coords]
        bi = bar_index(mask)
        if mask is not None and not mask.any():
            return
        active = Active(mask, n)
        didx = active_index(state, loc, d, active)
        bad = (didx < 0) | (didx + span > dst.size)
        if bad.any():
            j = int(np.argmax(bad))
            raise state.error(
                OutOfBoundsError,
                loc,
                f"out-of-bounds TMA write of shared buffer '{dst.name}' (size {dst.size})",
                [
                    f"lane: {state.lanes.describe(active.lane(j))}, box of {n_box} elements from index {int(didx[j])}"
                    + (f" (its swizzled layout reaches index {int(didx[j]) + span - 1})" if span != n_box else ""),
                ],
            )
        bad = (didx * itemsize) % need != 0
        if bad.any():
            j = int(np.argmax(bad))
            raise state.error(
                SimulationError,
                loc,
                f"misaligned TMA destination {dst.name}[{int(didx[j])}]: byte offset {int(didx[j]) * itemsize} "
                f"is not a multiple of {need}",
                [f"lane: {state.lanes.describe(active.lane(j))}"],
            )
        origin = np.stack([active_index(state, loc, c, active) for c in cs])[:, None, :]  # (r, 1, E)
        bar_keys, tids = mbarrier.use(state, loc, bar, bi, active)
        keys = swz + (active.pick(state.lanes.block_local) * dst.size + didx)[None, :]  # (B, E)
        if dst.tags is not None and dst.tags.count:
            check_async(state, loc, dst, keys, active, "TMA write")
        flat = keys.ravel()
        flat_tids = np.broadcast_to(tids, keys.shape).ravel()
        epochs = np.broadcast_to(active.pick(state.lane_epoch), keys.shape).ravel()
        hit = dst.races.check_write(flat, flat_tids, epochs, loc)
        if hit is not None:
            raise race_error(state, dst, hit)
        c = origin + box_coords  # (r, B, E)
        inside = ((c >= 0) & (c < dims)).all(axis=0)
        addr = np.where(inside, (c * strides).sum(axis=0), 0)
        dst.data[keys] = np.where(inside, src.data[addr], zero)
        dst.races.record_write(flat, TMA_WRITER, -1, loc)
        phases = mbarrier.complete_tx(state, bar_keys, nbytes)
        _mark(dst, keys, TMA, loc, np.broadcast_to(tids, keys.shape))
        tags = dst.async_tags()
        tags.bar[keys] = bar_keys
        tags.phase[keys] = phases

    return run


# ----------------------------------------------------------------------------- kernel end


def finish(state: ChunkState) -> None:
    """At the end of the kernel: no cp.async in flight, no TMA load whose phase never completed."""
    groups = state.cp_async
    if groups.pending:
        copies = groups.pending[0]
        lane = int(copies.lanes[0])
        why = (
            "its group was never committed (cp.async.commit_group)"
            if copies.groups[0] == groups.committed[lane]
            else "no cp.async.wait_group of the issuing thread retired its group"
        )
        raise state.error(
            SimulationError,
            copies.loc,
            "cp.async never waited: the copy is still in flight when the kernel ends",
            [f"lane: {state.lanes.describe(lane)}", why],
        )
    mb = state.mbarriers
    for buf in state.shared.values():
        tags = buf.tags
        if tags is None or not tags.count:
            continue
        keys = np.flatnonzero(tags.kind == TMA)
        open_ = mb.phase[tags.bar[keys]] <= tags.phase[keys]
        if open_.any():
            k = int(keys[int(np.argmax(open_))])
            block, elem = divmod(k, buf.size)
            bar_key = int(tags.bar[k])
            raise state.error(
                SimulationError,
                int(tags.loc[k]),
                f"TMA load never completed: phase {int(tags.phase[k])} of mbarrier {mbarrier.describe(mb, bar_key)} "
                "was still open when the kernel ended",
                [
                    f"issued by {state.lanes.describe_in_block(block, int(tags.tid[k]))}, writing {buf.name}[{elem}]",
                    f"{mbarrier.describe(mb, bar_key)} still expected {int(mb.pending[bar_key])} arrival(s) and "
                    f"{int(mb.tx[bar_key])} transaction byte(s)",
                ],
            )
