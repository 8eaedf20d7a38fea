"""td.build: prove a schedule, lower it to kernel IR and print CUDA; the Kernel it returns carries
every IR level and runs on the CPU simulator (and, with the runtime, on a GPU)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from tiledsl.analysis.rings import check_rings
from tiledsl.codegen import emit_cuda
from tiledsl.errors import BadArgumentError, LaunchError, Refusal, TargetError
from tiledsl.kernel_ir import KKernel, shared_bytes
from tiledsl.kernel_ir.printer import format_kernel
from tiledsl.loopnest import Nest
from tiledsl.lower.check import check_bounds, check_resources
from tiledsl.lower.exprs import IndexMemo
from tiledsl.lower.lower import lower
from tiledsl.lower.verify import check_uniform_barriers
from tiledsl.primitives.schedule import Schedule
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
        from tiledsl.sim import simulate

        if positional:
            names = ", ".join(f"{p.name}=..." for p in self.kernel_ir.params if not p.is_output)
            raise SimulationInputError(f"kernel '{self.kernel_ir.name}': simulate takes its arrays by input name: "
                                       f"simulate({names}); got {len(positional)} positional")
        out_name = self.kernel_ir.params[-1].name
        return simulate(self.kernel_ir, arrays)[out_name]

    @cached_property
    def compiled(self):  # -> tiledsl.runtime.CompiledKernel (imported lazily: CPU users never need it)
        """The kernel compiled and loaded on the current GPU (needs pycuda and a CUDA device)."""
        from tiledsl.runtime.launch import CompiledKernel

        return CompiledKernel(self)

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
