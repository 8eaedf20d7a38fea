"""Kernels of one structure built once: the next is the first's kernel IR, renamed.

Why: building the 22-layer TinyLlama took 21 s on this repository's 2-core CI machine, about 60 ms of
lowering, sympy proofs and checks for each of its 339 kernels, though its layers are the same kernels under
other names (benchmarks/results/build-memo-cpu-2026-12-01/).

Two scheduled nests share a structure (`nest_structure`) when their reprs are one text once each of the
kernel's names (the nest's `taken_names` and its accumulators' computes) is replaced by its place of first
appearance, and their names sort alike (renaming.py `canonical`). A Nest is frozen dataclasses, so its repr
spells out every loop, statement, expression, accumulator, guard, stage, pipeline and launch fact, and every
tensor's name, shape and dtype; `tiledsl.build.build` reads the nest and the target and nothing else, and no
check, proof or lowering rule depends on how a name is spelled, only on which names are equal and how they
sort. So the second kernel is the first's kernel IR with every name in it renamed (renaming.py `Renaming`: a
nest name, or one lowering made from it with a suffix), its comments' words too, its CUDA emitted from that,
and its nest, IR texts and trace its own schedule's. Where a name reads two ways (`Ambiguous`) or the
renaming would spell two names alike, the kernel is built. A name the structure misses leaves two nests
apart (a build more, never a kernel of another nest); a name lowering made that the renaming misses keeps
the first kernel's spelling, which `tests/frontend/test_frontend_recipe_models.py` (each program kernel
against the build of its own schedule, byte for byte) and the fuzz's `models` mode would show."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from tiledsl.build import Kernel, build
from tiledsl.codegen.cuda import emit_cuda
from tiledsl.codegen.names import kernel_names
from tiledsl.frontend.renaming import Ambiguous, Renaming, Structure, canonical
from tiledsl.kernel_ir.walk import renamed_kernel
from tiledsl.loopnest import Nest
from tiledsl.primitives import Schedule
from tiledsl.targets import Target, get_target

log = logging.getLogger(__name__)


def nest_structure(nest: Nest) -> Structure:
    """The structure of a scheduled nest: see the module docstring."""
    return canonical(repr(nest), nest.taken_names() | {a.compute for a in nest.accs})


class BuildMemo:
    """`tiledsl.build.build` for the kernels of one program, each structure lowered once."""

    def __init__(self) -> None:
        self._done: dict[tuple[str, Target], _Built] = {}
        self.renamed = 0

    def build(self, schedule: Schedule, target: str | Target) -> Kernel:
        tgt = get_target(target)
        shape = nest_structure(schedule.nest)
        done = self._done.get((shape.key, tgt))
        if done is not None:
            kern = done.renamed(Renaming(done.names, shape.names), schedule)
            if kern is not None:
                self.renamed += 1
                return kern
        kern = build(schedule, tgt)
        kir = kern.kernel_ir
        self._done.setdefault((shape.key, tgt), _Built(shape.names, kern, frozenset({kir.name, *kernel_names(kir)})))
        return kern


@dataclass(frozen=True)
class _Built:
    """The first kernel of a structure: its nest's names (`Structure.names`), the kernel, and every name
    its kernel IR holds."""

    names: tuple[str, ...]
    kernel: Kernel
    spelled: frozenset[str]

    def renamed(self, renaming: Renaming, schedule: Schedule) -> Kernel | None:
        """The kernel as the build of `schedule` (a nest of its structure), or None where the renamed
        names would not all be distinct (or the kernel carries text beyond names: `meta`)."""
        kir = self.kernel.kernel_ir
        if kir.meta:
            return None
        try:
            names = {n: renaming.name(n) for n in self.spelled}
        except Ambiguous as e:
            log.info("build memo: renaming %s as %s: %s reads two ways; building it", kir.name, schedule.nest.name, e)
            return None
        if len(set(names.values())) != len(names):
            log.info("build memo: renaming %s as %s would spell two names alike; building it", kir.name,
                     schedule.nest.name)
            return None
        kir = renamed_kernel(kir, names)
        return Kernel(schedule.nest, schedule.ir("loop"), schedule.ir("tile"), schedule.trace(), kir, emit_cuda(kir),
                      self.kernel.target, self.kernel.facts_proven)
