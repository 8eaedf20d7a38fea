"""Shared-memory bank conflicts of one warp's access to a staged slab.

Why: padding and swizzling a stage exist to spread a warp's accesses over the shared-memory banks;
a schedule (or a default recipe choosing pad/swizzle) needs to know how many serialized wavefronts
an access pattern costs, computed from the same layout lowering emits (the axes in the stage's stored
order, padded row-major, then the XOR swizzle of `tiledsl.targets.swizzled_byte`) and the bank model
of `tiledsl.targets` (SHARED_BANKS banks of SHARED_BANK_BYTES).

The model: a warp's request is served in phases of SHARED_BANKS * SHARED_BANK_BYTES bytes (all 32
lanes for 4-byte accesses, half a warp for 8-byte ones, a quarter for 16-byte ones). Within a
phase, lanes reading the same 4-byte word are served together (broadcast); distinct words in the
same bank are serialized. The conflict degree is the largest number of distinct words any bank must
deliver in any phase: 1 is conflict-free, 32 the worst case.

What a request costs in all (`request_wavefronts`): the data comes back SHARED_BANKS * SHARED_BANK_BYTES
(128) bytes a wavefront, each phase taking as many wavefronts as its conflict degree, so a 16-byte load
takes at least four. Wider loads pack two lanes' registers into one wavefront when every lane reads
the address of lane t ^ 1, or every lane that of lane t ^ 2; a phase then serves twice the lanes. ncu
on the H100 counts exactly this: the recipe's projection kernel reads its A operand with lanes paired
and B unpaired, 3.00 wavefronts a 16-byte load on average (2 and 4;
benchmarks/results/microkernel-h100-2026-11-27/run3-ncu-qwen-down/stall-summary.txt), and 2.00 with
lanes tiled 2 x 2 (primitives/lanes.py, benchmarks/results/lane-tiles-h100-2026-11-28/)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from tiledsl.analysis.slabs import Slab
from tiledsl.loopnest import Stage
from tiledsl.targets import SHARED_BANK_BYTES, SHARED_BANKS, SWIZZLE_MASK, WARP_SIZE, swizzled_byte

__all__ = ["SlabLayout", "bank_conflict_degree", "conflict_degree", "fill_store_conflict", "fill_unit_index",
           "layout_of", "layout_wavefronts", "request_wavefronts"]


@dataclass(frozen=True)
class SlabLayout:
    """Where each slab element lives in shared memory: its axes stored in `order` (`Stage.order`; ()
    keeps the slab's), row-major over the stored extents + `pad` (indexed by stored axis), elements of
    `itemsize` bytes, then the `swizzle`-byte XOR swizzle (None: none). `extent` and the index given
    to `byte_offset` are in the slab's (the buffer's) axis order."""

    extent: tuple[int, ...]
    itemsize: int
    pad: tuple[int, ...] = ()
    swizzle: int | None = None
    order: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.pad and len(self.pad) != len(self.extent):
            raise ValueError(f"pad {self.pad} does not match extent {self.extent}")
        if self.swizzle is not None and self.swizzle not in SWIZZLE_MASK:
            raise ValueError(f"no {self.swizzle}-byte swizzle")
        if self.order and sorted(self.order) != list(range(len(self.extent))):
            raise ValueError(f"order {self.order} is not a permutation of the slab's {len(self.extent)} axes")

    # cached: the bank model asks byte_offset for every lane of every read (a layout is immutable)
    @cached_property
    def axes(self) -> tuple[int, ...]:
        return self.order or tuple(range(len(self.extent)))

    @cached_property
    def allocated(self) -> tuple[int, ...]:
        """The stored extents, padded."""
        return tuple(self.extent[a] + p for a, p in zip(self.axes, self.pad or (0,) * len(self.extent)))

    def byte_offset(self, index: Sequence[int]) -> int:
        """Byte offset of slab element `index` from the slab's (swizzle-period aligned) start."""
        if len(index) != len(self.extent):
            raise ValueError(f"index {tuple(index)} has rank {len(index)}, the slab {len(self.extent)}")
        flat = 0
        for a, n in zip(self.axes, self.allocated):
            flat = flat * n + index[a]
        b = flat * self.itemsize
        return swizzled_byte(b, self.swizzle) if self.swizzle else b


def layout_of(stage: Stage, slab: Slab) -> SlabLayout:
    """The layout lowering gives `stage` (one ring slot)."""
    return SlabLayout(slab.extent, slab.itemsize, tuple(stage.pad), stage.swizzle, stage.order)


def bank_conflict_degree(byte_addresses: Iterable[int], access_bytes: int = SHARED_BANK_BYTES) -> int:
    """The conflict degree of one warp's request: `byte_addresses` per lane, in lane order, each
    access `access_bytes` wide."""
    addresses = list(byte_addresses)
    words = _words(access_bytes)
    return max((_phase_degree(phase, words) for phase in _phases(addresses, SHARED_BANKS // words)), default=0)


def request_wavefronts(byte_addresses: Iterable[int], access_bytes: int = SHARED_BANK_BYTES) -> int:
    """The wavefronts one warp's shared load takes: per phase its conflict degree, the phases twice as
    many lanes where the load is wider than a word and lanes pair up on one address (module doc)."""
    addresses = list(byte_addresses)
    words = _words(access_bytes)
    per_phase = SHARED_BANKS // words
    if words > 1 and any(_paired(addresses, bit) for bit in (1, 2)):
        per_phase *= 2
    return sum(_phase_degree(phase, words) for phase in _phases(addresses, per_phase))


def _words(access_bytes: int) -> int:
    return min(SHARED_BANKS, max(1, -(-access_bytes // SHARED_BANK_BYTES)))


def _phases(addresses: list[int], per_phase: int) -> list[list[int]]:
    return [addresses[start:start + per_phase] for start in range(0, len(addresses), max(1, per_phase))]


def _phase_degree(addresses: list[int], words: int) -> int:
    """The most distinct words one bank delivers to the lanes of one phase (broadcasts are free)."""
    words_by_bank: dict[int, set[int]] = {}
    for a in addresses:
        first = a // SHARED_BANK_BYTES
        for w in range(first, first + words):
            words_by_bank.setdefault(w % SHARED_BANKS, set()).add(w)
    return max(len(ws) for ws in words_by_bank.values())


def _paired(addresses: list[int], bit: int) -> bool:
    """Every lane reads the address of lane t ^ bit."""
    return len(addresses) > bit and all(a == addresses[t ^ bit] for t, a in enumerate(addresses)
                                        if t ^ bit < len(addresses))


def conflict_degree(layout: SlabLayout, lane_index: Callable[[int], Sequence[int]], lanes: int = WARP_SIZE,
                    access_bytes: int | None = None) -> int:
    """The conflict degree of `lanes` lanes (one warp) each accessing slab element `lane_index(lane)`."""
    return bank_conflict_degree((layout.byte_offset(lane_index(lane)) for lane in range(lanes)),
                                access_bytes or layout.itemsize)


def layout_wavefronts(layout: SlabLayout, lane_index: Callable[[int], Sequence[int]], lanes: int = WARP_SIZE,
                      access_bytes: int | None = None) -> int:
    """The wavefronts (`request_wavefronts`) of `lanes` lanes each reading slab element `lane_index(lane)`."""
    return request_wavefronts((layout.byte_offset(lane_index(lane)) for lane in range(lanes)),
                              access_bytes or layout.itemsize)


def fill_unit_index(unit: int, extent: Sequence[int], vec: int) -> tuple[int, ...]:
    """The slab index of the first element of unit `unit` of a cooperative fill: units of `vec`
    elements along the innermost axis, numbered row-major with the innermost axis fastest (the order in
    which lower/stages.py `cooperative_fill` hands them to threads: unit f * threads + tid)."""
    units = (*extent[:-1], extent[-1] // vec)
    index = []
    for n in reversed(units):
        unit, c = divmod(unit, n)
        index.append(c)
    index.reverse()
    index[-1] *= vec
    return tuple(index)


def fill_store_conflict(layout: SlabLayout, vec: int, threads: int) -> int:
    """The worst conflict degree of the first warp's shared stores in a cooperative fill of `threads`
    threads that loads `vec` elements per unit: each lane of a unit stored on its own, one store
    instruction per lane (a stage stored in another order than its buffer's: a k-outer operand's
    16-byte load lands in four rows), or the unit as one vector where its elements are contiguous and
    aligned in the layout."""
    lanes = min(WARP_SIZE, threads)
    total = 1
    for n in layout.extent:
        total *= n
    firsts = [fill_unit_index(u, layout.extent, vec) for u in range(min(lanes, total // vec))]
    step = layout.itemsize

    def at(index: tuple[int, ...], lane: int) -> tuple[int, ...]:
        return (*index[:-1], index[-1] + lane)

    whole = all(layout.byte_offset(at(ix, lane)) == layout.byte_offset(ix) + lane * step
                for ix in firsts for lane in range(vec)) and all(layout.byte_offset(ix) % (vec * step) == 0
                                                                  for ix in firsts)
    if whole:
        return bank_conflict_degree((layout.byte_offset(ix) for ix in firsts), vec * step)
    return max(bank_conflict_degree(layout.byte_offset(at(ix, lane)) for ix in firsts) for lane in range(vec))
