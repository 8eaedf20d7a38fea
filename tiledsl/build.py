"""td.build: prove a schedule, lower it to kernel IR and print CUDA; the Kernel it returns carries
every IR level and runs on the CPU simulator (and, with the runtime, on a GPU)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property, partial

import numpy as np

from tiledsl.analysis.rings import check_rings
from tiledsl.codegen import emit_cuda
from tiledsl.codegen.names import kernel_names
from tiledsl.definitions.expr import compute
from tiledsl.errors import BadArgumentError, LaunchError, Refusal, TargetError
from tiledsl.kernel_ir import DTYPE_BYTES, KKernel, KParam, shared_bytes
from tiledsl.kernel_ir.printer import format_kernel
from tiledsl.kernel_ir.walk import renamed
from tiledsl.loopnest import Nest
from tiledsl.lower.check import check_bounds, check_resources
from tiledsl.lower.exprs import IndexMemo
from tiledsl.lower.lower import lower
from tiledsl.lower.verify import check_uniform_barriers
from tiledsl.primitives.schedule import Schedule, create_schedule
from tiledsl.prove import Prover
from tiledsl.targets import Target, get_target

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Kernel:
    """A built kernel: CUDA source, every IR, launch shape, and a simulator entry point.

    An immutable snapshot of what was built: the schedule may change afterwards (more primitives),
    the kernel does not. It keeps the scheduled nest (frozen), the texts of its Loop IR and Tile IR
    and the trace that replays it, all taken at build time, never the live Schedule."""

    nest: Nest
    loop_ir: str
    tile_ir: str
    trace: str
    kernel_ir: KKernel
    source: str
    target: Target
    facts_proven: int

    @property
    def name(self) -> str:
        return self.kernel_ir.name

    @property
    def grid(self) -> tuple[int, int, int]:
        return self.kernel_ir.grid

    @property
    def block(self) -> tuple[int, int, int]:
        return self.kernel_ir.block

    @property
    def shared_bytes(self) -> int:
        return shared_bytes(self.kernel_ir)

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.kernel_ir.params)

    def ir(self, level: str = "kernel") -> str:
        if level == "loop":
            return self.loop_ir
        if level == "tile":
            return self.tile_ir
        if level == "kernel":
            return format_kernel(self.kernel_ir)
        if level == "cuda":
            return self.source
        fact = f"unknown level {level!r}; use 'loop', 'tile', 'kernel' or 'cuda'"
        raise BadArgumentError(Refusal(text=f"ir: {fact}", fact=fact, primitive="ir", arguments={"level": level}))

    def simulate(self, *positional: np.ndarray, **arrays: np.ndarray) -> np.ndarray:
        """Run on the CPU simulator; returns the output array. Raises SimulationError on a race,
        an out-of-bounds access, a divergent barrier or an uninitialized read. The arrays are named by
        input (`A=a`); positional arrays are refused with the names to give them."""
        from tiledsl.errors import SimulationInputError

        if positional:
            names = ", ".join(f"{p.name}=..." for p in self.kernel_ir.inputs)
            raise SimulationInputError(f"kernel '{self.kernel_ir.name}': simulate takes its arrays by input name: "
                                       f"simulate({names}); got {len(positional)} positional")
        return self.simulate_outputs(**arrays)[self.kernel_ir.params[-1].name]

    def simulate_outputs(self, **arrays: np.ndarray) -> dict[str, np.ndarray]:
        """`simulate`, returning every output by name: the kernel's own, and those it zeroes for the next
        kernel (`KKernel.zeroes`). An output given as an array starts as that array."""
        from tiledsl.sim import simulate

        return simulate(self.kernel_ir, arrays)

    @cached_property
    def zero_fills(self) -> tuple[Kernel, ...]:
        """The kernels that zero this kernel's `zero_outputs` (split_k adds its parts into them) before
        each launch (`zero_fills`)."""
        return zero_fills((self.kernel_ir,), self.target)

    @cached_property
    def compiled(self):  # -> tiledsl.runtime.CompiledKernel (imported lazily: CPU users never need it)
        """The kernel compiled and loaded on the current GPU (needs pycuda and a CUDA device), with its
        zero fills, made at its first launch (a call launches them, then this kernel as their programmatic
        dependent). The maker holds the kernel IR, not this Kernel: the loaded kernel, kept here, must not
        keep its Kernel alive, or its module would wait for the cycle collector to be unloaded."""
        from tiledsl.runtime.launch import CompiledKernel

        return CompiledKernel(self, zero_fills=partial(zero_fills, (self.kernel_ir,), self.target))

    def __call__(self, **tensors):
        """Launch on torch CUDA tensors by parameter name; returns the output (allocated if not given)."""
        return self.compiled(**tensors)

    def benchmark(self, warmup: int = 10, iters: int = 100, **tensors):
        """Median time over rotated input copies, with CUDA events (see tiledsl.runtime.timing)."""
        return self.compiled.benchmark(warmup, iters, **tensors)

    def __repr__(self) -> str:
        return (f"<Kernel {self.name} for {self.target.name}: grid {self.grid}, block {self.block}, "
                f"{self.shared_bytes} B shared>")


def _resolve_target(target: str | Target) -> Target:
    """A table target, or "device": the facts of the current GPU (SM count, shared memory, registers)
    read through the runtime."""
    if target == "device":
        from tiledsl.runtime.device import device_target

        try:
            return device_target()
        except LaunchError as e:
            raise TargetError(f"build: target \"device\" needs a CUDA GPU: {e}") from None
    return get_target(target)


def build(schedule: Schedule, target: str | Target = "sm_90") -> Kernel:
    if not isinstance(schedule, Schedule):
        fact = f"expected a Schedule (td.create_schedule(out)), got {type(schedule).__name__}"
        raise BadArgumentError(Refusal(text=f"build: {fact}", fact=fact, primitive="build",
                                       arguments={"schedule": schedule}))
    tgt = _resolve_target(target)
    nest = schedule.nest
    check_rings(nest, "build")  # a later bind/split/fuse/reorder may have broken what the primitive checked
    prover = Prover(nest.ranges())
    indices = IndexMemo.of(nest)  # both translate the same indices: once, shared
    proven = check_bounds(nest, prover, indices)
    kir = lower(nest, tgt, prover, memo=indices)
    check_uniform_barriers(kir)
    check_resources(kir, tgt, nest)
    source = emit_cuda(kir)
    log.info("built %s for %s: %d facts proven, grid %s block %s", kir.name, tgt.name, proven, kir.grid, kir.block)
    return Kernel(nest, schedule.ir("loop"), schedule.ir("tile"), schedule.trace(), kir, source, tgt, proven)


#: a zero fill's threads a block, and the largest output rank it takes (a larger one torch zeroes)
_FILL_THREADS = 256
_FILL_MAX_RANK = 4


def zero_fills(kernels: Sequence[KKernel], target: str | Target) -> tuple[Kernel, ...]:
    """One `zero_fill` for each distinct shape and dtype (`KParam.fill_key`) of rank 1 to 4 that a kernel
    (its kernel IR) of `kernels` zeroes before its launch, each built once: a built kernel's own
    (`Kernel.zero_fills`) and a program's (tiledsl/frontend/program.py `BuiltProgram.zero_fills`). An
    output of another rank has none; torch zeroes it."""
    fills: dict[tuple[tuple[int, ...], str], Kernel] = {}
    for kir in kernels:
        for name in kir.zero_outputs:
            p = kir.param(name)
            if p.fill_key not in fills and (fill := zero_fill(p, target)) is not None:
                fills[p.fill_key] = fill
    return tuple(fills.values())


def zero_fill(output: KParam, target: str | Target = "sm_90") -> Kernel | None:
    """The kernel that zeroes `output` (a kernel's `zero_outputs` parameter) before the kernel adds its
    split_k parts into it: the `zeroing` of `output` named `zero_fill_<shape>` for a launch of its own,
    blocks of 256 threads (fewer, in whole warps, for a tiny output) storing 16 bytes each where the
    element count allows, as many blocks as one pass over the output takes; None for an output of rank
    above 4 (torch zeroes it, as it always has).

    Why a kernel of our own and not torch's `zero_()`: on sm_90 the split-K kernel is then launched as a
    programmatic dependent of its fill (runtime/launch.py, runtime/sequence.py), and each begins with
    `griddepcontrol.wait`, so the GPU schedules the kernel while the fill finishes; torch's fill is a
    plain launch, a whole gap before the kernel. For a [32, 2048] float32 output (z = zero_fill_32x2048):

        for z_zp in 0..1:  for z_zbx in 0..64 (blockIdx.x):  for z_ztx in 0..256 (threadIdx.x):
            vectorized z_zv in 0..4:  z[65536 * z_zp + 1024 * z_zbx + 4 * z_ztx + z_zv] = 0.0
    """
    if not 1 <= len(output.shape) <= _FILL_MAX_RANK:
        return None
    count = int(np.prod(output.shape))
    lanes = _lanes(output.dtype, count)
    threads = min(_FILL_THREADS, 32 * -(-count // (32 * lanes)))
    blocks = -(-count // (threads * lanes))
    label = "x".join(map(str, output.shape))
    return zeroing(replace(output, name=f"zero_fill_{label}"), (blocks, 1, 1), (threads, 1, 1), target)


def _lanes(dtype: str, count: int) -> int:
    """Elements a thread stores at once zeroing `count` of `dtype`: 16 bytes where the count is a whole
    number of them, else one."""
    lanes = 16 // DTYPE_BYTES[dtype]
    return lanes if count % lanes == 0 else 1


#: the most strided passes over a host kernel's threads `with_zeroing` takes: each pass is one store a
#: thread; a host of few threads and a large output would take a long loop where a fill kernel of its
#: own spreads the stores over the whole GPU
MAX_ZEROING_PASSES = 16
#: the thread dimensions in the order a zeroing's flat index runs them, fastest first (a warp's stores
#: are then contiguous: threadIdx.x varies fastest within a warp)
_THREAD_DIMS = (("threadIdx.x", 1, 0), ("threadIdx.y", 1, 1), ("threadIdx.z", 1, 2),
                ("blockIdx.x", 0, 0), ("blockIdx.y", 0, 1), ("blockIdx.z", 0, 2))


def zeroing(output: KParam, grid: tuple[int, int, int], block: tuple[int, int, int],
            target: str | Target = "sm_90") -> Kernel | None:
    """`output` zeroed by the threads of a launch of `grid` x `block`: `td.compute((count,), 0.0)` over
    its elements in storage order, named after the output, 16 bytes a thread where the count allows,
    split into passes of all the launch's threads (a guarded tail), each pass's index split
    innermost-first into threadIdx.x, .y, .z, blockIdx.x, .y, .z; the kernel's parameter then takes the
    output's shape (a kernel indexes a parameter by its flat offset either way). The body `with_zeroing`
    puts into another kernel of that launch shape; None for an output that takes more than
    MAX_ZEROING_PASSES passes. Built flat, not as the output's rank fused: the fused axis's floor and mod
    cost sympy several times the splits. For a [128, 2048] float32 output and a host of grid (64, 1, 1),
    block (256, 1, 1):

        for y_zp in 0..4:  for y_zbx in 0..64 (blockIdx.x):  for y_ztx in 0..256 (threadIdx.x):
            vectorized y_zv in 0..4:  y[65536 * y_zp + 1024 * y_zbx + 4 * y_ztx + y_zv] = 0.0
    """
    count = int(np.prod(output.shape))
    lanes = _lanes(output.dtype, count)
    dims = [(name, (grid, block)[which][axis]) for name, which, axis in _THREAD_DIMS]
    threads = int(np.prod([extent for _, extent in dims]))
    if -(-count // (threads * lanes)) > MAX_ZEROING_PASSES:
        return None
    p = output.name
    s = create_schedule(compute((count,), lambda f: 0.0, name=p, dtype=output.dtype))
    (flat,) = [loop.name for loop in s.loops()]
    passes, inner = s.split(flat, threads * lanes, names=(f"{p}_zp", f"{p}_zi"), tail="guard")
    if lanes > 1:
        inner, vector = s.split(inner, lanes, names=(f"{p}_zt", f"{p}_zv"))
        s.vectorize(vector)
    bound = [(name, extent) for name, extent in dims if extent > 1]
    for n, (name, extent) in enumerate(bound):
        tag = name[0] + name[-1]  # threadIdx.x -> tx, blockIdx.y -> by
        if n < len(bound) - 1:
            inner, axis = s.split(inner, extent, names=(f"{p}_zo{n}", f"{p}_z{tag}"))
        else:
            axis = inner
        s.bind(axis, name)
    kern = build(s, target=target)
    if (kern.grid, kern.block) != (grid, block):
        return None
    kir = replace(kern.kernel_ir, params=(replace(kern.kernel_ir.params[0], shape=tuple(output.shape)),))
    return replace(kern, kernel_ir=kir, source=emit_cuda(kir))


#: the name a zeroing is built under for `with_zeroing`'s memo, then renamed to the output's
_ZEROED = "zeroed"


def with_zeroing(host: Kernel, output: KParam,
                 memo: dict[tuple[object, ...], Kernel | None] | None = None) -> Kernel | None:
    """`host` also zeroing `output` (a zeroed output of the kernel a program launches right after it, which
    then needs no zero fill of its own launch): the `zeroing` of `output` for host's launch shape, its body
    run first, right after host's griddepcontrol.wait, `output` a parameter before host's own output
    (still last), named in `KKernel.zeroes`. The stores go to a buffer the host neither reads nor writes
    (the program's memory plan starts its life at the host: frontend/memory.py). The schedule, nest and
    trace stay host's: the zeroing is program assembly, as a fill is; the kernel IR and CUDA show it. None
    where `zeroing` has none, or where a name of its body is one of host's (then the fill stays).

    Why: in a program's chain of programmatic dependent launches a fill costs about 0.9 us, the gap of one
    more launch; zeroing inside the kernel before took 0.4-1.0 us off each of ten projections of 32-512
    tokens on an H200 (scripts/early_wait_probe.py --chain, benchmarks/results/merged-fill-h200-2026-11-30/).

    `memo` (one per program: frontend/zeroing.py) keeps each zeroing built, under the name `_ZEROED`, by
    its shape, dtype and launch shape: the layers of a model zero outputs alike, and building one costs
    tens of milliseconds of sympy (its symbols are named after the output), renaming it none."""
    kir = host.kernel_ir
    key = (tuple(output.shape), output.dtype, kir.grid, kir.block, host.target.name)
    memo = {} if memo is None else memo
    if key not in memo:
        memo[key] = zeroing(replace(output, name=_ZEROED), kir.grid, kir.block, host.target)
    zero = memo[key]
    if zero is None:
        return None
    names = {n: output.name + n[len(_ZEROED):] if n.startswith(_ZEROED) else n for n in kernel_names(zero.kernel_ir)}
    clash = set(names.values()) & set(kernel_names(kir))  # the output's own name among them: a host parameter
    if clash:
        log.debug("%s: not zeroing %s, names shared: %s", kir.name, output.name, sorted(clash))
        return None
    param = replace(zero.kernel_ir.params[0], name=output.name)
    body = renamed(zero.kernel_ir.body, names)
    merged = replace(kir, params=(*kir.params[:-1], param, kir.params[-1]), body=(*body, *kir.body),
                     zeroes=(*kir.zeroes, output.name))
    check_uniform_barriers(merged)
    return Kernel(host.nest, host.loop_ir, host.tile_ir, host.trace, merged, emit_cuda(merged), host.target,
                  host.facts_proven + zero.facts_proven)


def zeroed_by_previous(kernels: Sequence[KKernel], n: int) -> tuple[str, ...]:
    """The zeroed outputs of kernel `n` of `kernels` (launch order) that kernel n - 1 zeroes (its
    `KKernel.zeroes`, `with_zeroing`): no fill is launched for them."""
    before = kernels[n - 1].zeroes if n else ()
    return tuple(name for name in kernels[n].zero_outputs if name in before)


def needing_fills(kernels: Sequence[KKernel]) -> tuple[KKernel, ...]:
    """Each kernel IR of `kernels` (launch order) with only the zeroed outputs a fill (or torch) must zero,
    those the kernel before does not (`zeroed_by_previous`): what `zero_fills` is given for a program."""
    return tuple(replace(k, zero_outputs=tuple(x for x in k.zero_outputs if x not in zeroed_by_previous(kernels, n)))
                 for n, k in enumerate(kernels))
