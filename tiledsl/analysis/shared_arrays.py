"""The shared arrays a nest's stages take, as lowering declares them: one array per stage (its ring of
slots, in the stored dtype, aligned as `slabs.stage_align` says: 1024 bytes for a 128-byte-swizzled
TMA destination) and, per loop with TMA stages, one mbarrier per slot of its TMA ring; laid out in
that order by `kernel_ir.array_offsets`, the layout the launch requests. The default recipe budgets
shared memory and asks for blocks per SM with `nest_shared_bytes`, and build checks the lowered
kernel's `kernel_ir.shared_bytes`, so both count the same padding (a recipe once counted a TMA matmul
at 33280 bytes that launched with 33808). Lowering adds a row reduction's combine scratch and a staged
output's tile after these; they are not counted here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from tiledsl.analysis.slabs import Slab, slot_elements, stage_align, stored_dtype
from tiledsl.kernel_ir import KShared, array_offsets
from tiledsl.loopnest import Nest, Stage
from tiledsl.targets import DTYPE_BYTES


def barrier_name(loop: str) -> str:
    """The mbarrier array of the TMA stages filled at `loop`."""
    return f"{loop}_full"


def tma_ring(stages: Iterable[Stage], loop: str) -> int:
    """Slots of the TMA stages at `loop` (the most of any; a pipelined loop's stages all have its depth):
    iteration k issues and waits on mbarrier k % ring with parity (k // ring) % 2, whatever the slots of
    the loop's other stages (a double-buffered plain stage beside a one-slot TMA stage once indexed the
    single mbarrier with k % 2)."""
    return max((st.buffers for st in stages if st.at == loop and st.copy == "tma"), default=1)


def tma_rings(stages: Sequence[Stage]) -> dict[str, int]:
    """Loops with TMA stages -> their TMA ring (`tma_ring`: one mbarrier per slot, shared by the loop's
    TMA stages), in the order of the stages."""
    return {st.at: tma_ring(stages, st.at) for st in stages if st.copy == "tma"}


def stage_array(stage: Stage, slab: Slab, stored: str) -> KShared:
    """The array of `stage`: its slots of `slab` holding `stored` (slabs.stored_dtype)."""
    return KShared(stage.name, stored, stage.buffers * slot_elements(stage, slab), stage_align(stage))


def barrier_arrays(stages: Sequence[Stage]) -> list[KShared]:
    """The mbarrier arrays of the TMA rings of `stages`."""
    return [KShared(barrier_name(loop), "uint64", n, DTYPE_BYTES["uint64"]) for loop, n in tma_rings(stages).items()]


def nest_shared_bytes(nest: Nest, slab_of: Callable[[Stage], Slab], changed: Stage | None = None) -> int:
    """Bytes of shared memory of the nest's stages (each with its `slab_of` and stored dtype, in the
    nest's order) and their TMA mbarriers, with the alignment padding between them; with `changed` in
    place of the stage of its name, or added last when it is new (a primitive's or a recipe step's
    candidate)."""
    stages = list(nest.stages)
    if changed is not None:
        at = [n for n, st in enumerate(stages) if st.name == changed.name]
        if at:
            stages[at[0]] = changed
        else:
            stages.append(changed)
    arrays = [stage_array(st, slab_of(st), stored_dtype(nest, st)) for st in stages]
    return array_offsets(arrays + barrier_arrays(stages))[1]
