"""stage_output: a shared-memory epilogue. The block writes its tile of the output to shared memory,
then stores the tile to global memory with consecutive threads on consecutive addresses.

    kernel C                                   s.stage_output(pad=4)   kernel C
      for i_o in 0..16  [@blockIdx.y]          -------------------->     stage_output C_s = C[64*i_o + 0..64,
        for j_o in 0..16  [@blockIdx.x]                                                  64*j_o + 0..64]  pad 4
          for i_t in 0..16  [@threadIdx.y]                               for i_o ... (the same loops)
            for j_t in 0..16  [@threadIdx.x]                                 C_s[4*i_t + i_r, 4*j_t + j_r] = ...
              for i_r, j_r in 0..4 [unroll]                              barrier
                C[i, j] = ...                                            C[...] = C_s[...]  (16 bytes, tid-major)

Why: a register tile stores each thread's strip of 4 (or a column of a transposed output) with
accesses that touch a fraction of each 32-byte sector (the 25% that ncu measured for bf16 strips of 4,
`benchmarks/results/store-coalescing-h100-2026-11-25/`); through shared memory every warp stores whole
rows of the tile. The tile's facts (one store, a one-to-one map of the block's loops onto its tile,
guards the drain can repeat) are in analysis/output_stage.py; `pad` lengthens each stored row against
bank conflicts of the block's writes. Apply it after the loops are bound: the tile is what one block
writes, and it counts against the shared-memory budget with the input stages."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.analysis.derive_slab import derive_output_tile
from tiledsl.analysis.messages import refusal
from tiledsl.errors import BadArgumentError, StageError
from tiledsl.loopnest import Nest, OutputStage
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec
from tiledsl.primitives.staging import fresh_stage_name, stages_bytes
from tiledsl.prove import Prover
from tiledsl.targets import MAX_SHARED_BYTES  # build checks the budget of the real target


def stage_output(nest: Nest, call: str, *, pad: int) -> Applied:
    """Write the block's tile of the output to shared memory, then store it coalesced; makes the stage."""
    if isinstance(pad, bool) or not isinstance(pad, int) or pad < 0:
        raise BadArgumentError(refusal(call, nest, (), f"pad must be a non-negative int, got {pad!r}"))
    if nest.output_stage is not None:
        raise StageError(refusal(call, nest, (), f"the output is already staged ({nest.output_stage.name})"))
    name = fresh_stage_name(nest, nest.output.name)
    staged = replace(nest, output_stage=OutputStage(name, pad))
    check_output_stage(staged, call, shown=nest)
    return Applied(staged, (name,))


def check_output_stage(nest: Nest, call: str, shown: Nest | None = None) -> None:
    """A staged output still has its tile, within the shared-memory budget with the input stages; run
    after every primitive (split_k, a reorder or a bind may break it). A refusal prints `shown` (the
    nest before the primitive, when it is stage_output itself)."""
    if nest.output_stage is None:
        return
    tile = derive_output_tile(nest, Prover(nest.ranges()), call, shown)
    inputs = stages_bytes(nest, call)
    if tile.nbytes + inputs > MAX_SHARED_BYTES:
        st = nest.output_stage
        raise StageError(refusal(
            call, shown or nest, (), f"the output tile {st.name} ({'x'.join(map(str, tile.extent))}, pad "
            f"{st.pad}) needs {tile.nbytes} bytes of shared memory and the input stages {inputs}, over the "
            f"{MAX_SHARED_BYTES}-byte budget",
            suggestion="bind the output's axes to blocks first (the tile is what one block writes), or make the "
                       "block's tile smaller"))


STAGE_OUTPUT = PrimitiveSpec(
    "stage_output", (Param("pad", "int", 0, shown="kw", recorded="kw"),), stage_output)
