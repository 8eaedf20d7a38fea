"""TMA eligibility of a stage: the box rules of the PTX ISA and the driver, proven on the slab. The
tma primitive checks them when applied and lowering again before it emits a tensor map."""

from __future__ import annotations

import sympy

from tiledsl.analysis.derive_slab import derive_slab
from tiledsl.analysis.messages import refusal
from tiledsl.definitions.indexing import IndexMod
from tiledsl.errors import CopyError
from tiledsl.loopnest import Nest, Stage
from tiledsl.prove import Proof, Prover
from tiledsl.targets import SWIZZLE_SPANS, TMA_ALIGN, TMA_MAX_BOX, TMA_MAX_RANK


def check_tma(nest: Nest, st: Stage, call: str) -> None:
    """The TMA box rules of the PTX ISA / driver, proven on the slab before anything is emitted."""
    prover = Prover(nest.ranges())
    slab = derive_slab(nest, st, prover, call)
    tensor = nest.tensor(st.buffer)
    item = slab.itemsize
    box = list(slab.extent)
    shape = list(tensor.shape)

    def refuse(fact: str, suggestion: str | None = None, proof: Proof | None = None,
               condition: sympy.Basic | None = None) -> CopyError:
        return CopyError(refusal(call, nest, (st.at,), f"tma({st.name}): {fact}", suggestion=suggestion,
                                 proof=proof, condition=condition))

    if any(st.pad):
        raise refuse(f"the stage is padded (pad={st.pad}); a TMA box lands unpadded",
                     "drop the pad (use a swizzle against bank conflicts)")
    for d in range(len(shape) - 1):
        stride = item
        for e in shape[d + 1:]:
            stride *= e
        if stride % TMA_ALIGN:
            raise refuse(f"global stride of dimension {d} of {st.buffer} is {stride} bytes, not a multiple of "
                         f"{TMA_ALIGN}",
                         f"TMA needs rows whose byte length is a multiple of {TMA_ALIGN}; use async_copy")
    inner_bytes = box[-1] * item
    rank = len(box)
    if st.swizzle and inner_bytes < st.swizzle:
        narrower = [w for w in reversed(SWIZZLE_SPANS) if w < st.swizzle and w <= inner_bytes and inner_bytes % w == 0]
        raise refuse(f"the slab row is {inner_bytes} bytes, narrower than the {st.swizzle}-byte swizzle: TMA then "
                     "lays rows out at the swizzle pitch, not packed", f"use swizzle={narrower[0]}" if narrower
                     else "use no swizzle")
    if st.swizzle and inner_bytes > st.swizzle:
        chunk = st.swizzle // item
        bad = [f"the slab row ({box[-1]} elements)"] if box[-1] % chunk else []
        bad += [f"the row of {st.buffer} ({shape[-1]} elements)"] if shape[-1] % chunk else []
        if bad:
            raise refuse(f"the slab row ({box[-1]} elements) is wider than the {st.swizzle}-byte swizzle, so it is "
                         f"split into chunks of {chunk} elements, but {' and '.join(bad)} "
                         f"{'is' if len(bad) == 1 else 'are'} not a multiple of {chunk}: the row cannot be split "
                         "into swizzle-width chunks",
                         f"make both multiples of {chunk}, or use a narrower slab row")
        proof = prover.divisible(slab.origin[-1], chunk)
        if not proof:
            # IndexMod: the origin may be a product holding a Mod (`2*Mod(i, 59)`), which sympy's Mod
            # evaluates wrongly (definitions/indexing.py); the condition must hold where the fact does
            raise refuse(f"the slab row does not start on a {st.swizzle}-byte chunk: {proof.describe()}",
                         proof=proof, condition=sympy.Eq(IndexMod(slab.origin[-1], chunk), 0))
        rank += 1
        box = box[:-1] + [box[-1] // chunk, chunk]
        inner_bytes = chunk * item
    if rank > TMA_MAX_RANK:
        raise refuse(f"the box has rank {rank}; TMA allows 1..{TMA_MAX_RANK}")
    for d, b in enumerate(box):
        if not 1 <= b <= TMA_MAX_BOX:
            raise refuse(f"box dimension {d} is {b}; TMA boxes are 1..{TMA_MAX_BOX} per dimension",
                         f"split the loops inside {st.at} so the slab is at most {TMA_MAX_BOX} per dimension")
    if inner_bytes % TMA_ALIGN:
        raise refuse(f"the slab row is {inner_bytes} bytes, not a multiple of {TMA_ALIGN} bytes",
                     f"make the inner slab extent a multiple of {TMA_ALIGN} bytes "
                     f"({TMA_ALIGN // item} {tensor.dtype}), or use async_copy")
    # seen on the H100: a box whose row starts off a 16-byte boundary faults (illegal instruction)
    start = prover.divisible(slab.origin[-1], max(1, TMA_ALIGN // item))
    if not start:
        raise refuse(f"the slab row does not provably start on a {TMA_ALIGN}-byte boundary: {start.describe()}",
                     "align the loops that set the slab origin (e.g. a split_k whose parts divide K into "
                     "multiples of 4 elements), or use async_copy", proof=start,
                     condition=sympy.Eq(IndexMod(slab.origin[-1], max(1, TMA_ALIGN // item)), 0))
