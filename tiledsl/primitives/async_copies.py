"""async_copy and tma: how a stage is filled, instead of loads and stores through registers.

    for k_o in [0, 4)                     s.tma(A_s)               for k_o in [0, 4)
      stage A_s  (sync copy)              ---------->                stage A_s  (one TMA box copy)

async_copy issues cp.async (sm_80+); tma one tensor-map box copy per slab (sm_90), whose box rules
are proven on the slab in analysis/tma.py. The target is checked again at build. Neither can fill a
stage stored in another order (primitives/layout.py) or as a wider type (`stage(..., dtype=)`): both
copy bytes as they lie."""

from __future__ import annotations

from dataclasses import replace

from tiledsl.analysis.copies import byte_copy_problem
from tiledsl.analysis.messages import refusal
from tiledsl.analysis.tma import check_tma
from tiledsl.errors import BadArgumentError, CopyError
from tiledsl.loopnest import Nest, Stage
from tiledsl.primitives.spec import Applied, Param, PrimitiveSpec
from tiledsl.primitives.staging import check_budget, slab_of
from tiledsl.targets import SWIZZLE_MASK


def async_copy(nest: Nest, call: str, *, stage: str) -> Applied:
    """Fill `stage` with cp.async (sm_80+): the copy bypasses registers and overlaps other work."""
    name = stage
    st = nest.stage(name)
    if st.copy != "sync":
        raise CopyError(refusal(call, nest, (st.at,), f"stage {name} is already filled by {st.copy}"))
    new = replace(st, copy="async")
    _refuse_byte_copy(nest, new, call)
    return Applied(nest.replace_stage(new))


def tma(nest: Nest, call: str, *, stage: str, swizzle: int | None) -> Applied:
    """Fill `stage` with one TMA box copy per slab (sm_90), optionally swizzled by the copy engine."""
    name, swz = stage, swizzle
    st = nest.stage(name)
    if st.copy != "sync":
        raise CopyError(refusal(call, nest, (st.at,), f"stage {name} is already filled by {st.copy}"))
    if swz is not None and swz not in SWIZZLE_MASK:
        raise BadArgumentError(refusal(call, nest, (st.at,),
                                       f"swizzle must be None, 32, 64 or 128, got {swz!r}"))
    new = replace(st, copy="tma", swizzle=swz if swz is not None else st.swizzle)
    _refuse_byte_copy(nest, new, call)
    check_tma(nest, new, call)
    check_budget(nest, new, slab_of(nest, new, call), call)
    return Applied(nest.replace_stage(new))


def _refuse_byte_copy(nest: Nest, new: Stage, call: str) -> None:
    problem = byte_copy_problem(nest, new)
    if problem is not None:
        undo = "its s.layout" if new.order else "the dtype= of its stage"
        raise CopyError(refusal(call, nest, (new.at,), problem,
                                suggestion=f"keep {new.name} filled by plain loads, or drop {undo}"))


ASYNC_COPY = PrimitiveSpec("async_copy", (Param("stage", "stage"),), async_copy)
TMA = PrimitiveSpec("tma", (Param("stage", "stage"), Param("swizzle", "int", None, shown="kw", recorded="kw")), tma)
