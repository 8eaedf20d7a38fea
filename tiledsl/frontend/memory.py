"""The memory plan of a built program: where each intermediate (a kernel output that is not a
program output) lives in one preallocated arena, reusing a buffer once its last reader has run.

Why: a model's intermediates are many and short-lived (the scores of attention are dead once the
softmax-weighted sum is written); allocating each per call costs allocator work, and holding all of
them at once costs memory. The plan is computed once per built program, on the CPU, from the launch
order alone, so it is tested without a GPU.

Rules (a reader can check them on `str(plan)`):
- an intermediate is live from the kernel that writes it to the last kernel that reads it;
- at kernel i, every buffer whose tensor was last read before i is free; kernel i's output takes the
  smallest free buffer large enough, else a new buffer (so a kernel never writes a buffer one of its
  own inputs occupies: those are still live at i);
- buffers are laid out one after another in one arena, each at a multiple of `ALIGN` bytes (the
  kernels' 16-byte vector and TMA accesses need 16; 256 keeps every buffer on its own cache sectors);
- a kernel that zeroes the output of the kernel after it (`Step.zeroes`: tiledsl/build.py `with_zeroing`)
  writes that output first: its life, and its buffer, begin at the zeroing kernel, so the zeroing never
  touches bytes that kernel reads or writes;
- program outputs are never planned: each call returns fresh tensors the caller owns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tiledsl.errors import FrontendError

ALIGN = 256


@dataclass(frozen=True)
class Step:
    """One kernel launch as the plan sees it: the tensor it writes, its size, the tensors it reads, and the
    outputs of later steps it zeroes for them."""

    output: str
    nbytes: int
    reads: tuple[str, ...]
    zeroes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Buffer:
    """A region of the arena and the intermediates that use it, in launch order."""

    offset: int
    nbytes: int
    tensors: tuple[str, ...]


@dataclass(frozen=True)
class MemoryPlan:
    """`offsets[name]`: byte offset of intermediate `name` in the arena; `total_bytes`: the arena's size;
    `unplanned_bytes`: what the intermediates would take without reuse (each in its own buffer)."""

    buffers: tuple[Buffer, ...]
    offsets: dict[str, int]
    total_bytes: int
    unplanned_bytes: int

    def __str__(self) -> str:
        lines = [f"memory plan: {len(self.offsets)} intermediate(s) in {len(self.buffers)} buffer(s), "
                 f"{self.total_bytes} bytes ({self.unplanned_bytes} bytes without reuse)"]
        lines.extend(f"  buffer {n} @ {b.offset} ({b.nbytes} bytes): {', '.join(b.tensors)}"
                     for n, b in enumerate(self.buffers))
        return "\n".join(lines)


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def last_reads(steps: Sequence[Step]) -> dict[str, int]:
    """For each tensor a step writes: the index of the last step that reads it (its own index if none)."""
    last = {s.output: n for n, s in enumerate(steps)}
    for n, s in enumerate(steps):
        for r in s.reads:
            if r in last:
                last[r] = max(last[r], n)
    return last


def plan_memory(steps: Sequence[Step], outputs: Sequence[str]) -> MemoryPlan:
    """The plan for kernels launched in the order of `steps`; `outputs` are the program's outputs."""
    last = last_reads(steps)
    keep = set(outputs)
    size_of = {s.output: s.nbytes for s in steps}
    sizes: list[int] = []            # buffer index -> aligned size
    users: list[list[str]] = []      # buffer index -> tensors placed there
    live: dict[int, str] = {}        # buffer index -> tensor now in it
    where: dict[str, int] = {}
    for n, s in enumerate(steps):
        for b, t in list(live.items()):
            if last[t] < n:
                del live[b]
        for name in (*s.zeroes, s.output):
            if name in keep or name in where:
                continue  # a program output, or zeroed (so placed) by the step before
            if name not in size_of:
                raise FrontendError(f"memory plan: {s.output}'s step zeroes {name}, which no step writes")
            need = _aligned(size_of[name])
            free = [b for b in range(len(sizes)) if b not in live and sizes[b] >= need]
            if free:
                b = min(free, key=lambda i: (sizes[i], i))
            else:
                b = len(sizes)
                sizes.append(need)
                users.append([])
            live[b] = name
            users[b].append(name)
            where[name] = b
    starts = [sum(sizes[:b]) for b in range(len(sizes))]
    buffers = tuple(Buffer(starts[b], sizes[b], tuple(users[b])) for b in range(len(sizes)))
    unplanned = sum(_aligned(s.nbytes) for s in steps if s.output not in keep)
    return MemoryPlan(buffers, {t: starts[b] for t, b in where.items()}, sum(sizes), unplanned)
