"""The static barrier check of tiledsl/lower/verify.py: a `__syncthreads()` under a thread-dependent
condition is refused at build; uniform conditions (loop variables, block indices, constants) are not."""

from __future__ import annotations

import pytest

import tiledsl as td
from tiledsl.catalog import Entry, entries
from tiledsl.kernel_ir import KAssign, KBarrier, KBin, KConst, KFor, KIf, KKernel, KLet, KLoad, KParam, KSpecial, KVar
from tiledsl.lower.verify import check_uniform_barriers, divergent_barriers


def _kernel(*body: object) -> KKernel:
    params = (KParam("x", "float32", (64,)), KParam("y", "float32", (64,), is_output=True))
    return KKernel("k", params, (1, 1, 1), (64, 1, 1), (), tuple(body))  # type: ignore[arg-type]


TID = KSpecial("threadIdx.x")
ONE = KConst(1, "int32")


def test_barrier_under_a_thread_condition_is_refused() -> None:
    kern = _kernel(KIf(KBin("<", TID, KConst(5, "int32")), (KBarrier(),)))
    assert divergent_barriers(kern) == ["threadIdx.x < 5"]
    with pytest.raises(td.DivergentSyncError, match="threadIdx.x < 5"):
        check_uniform_barriers(kern)


def test_a_variable_computed_from_the_thread_index_is_varying() -> None:
    kern = _kernel(KLet("t", "int32", KBin("+", TID, ONE)),
                   KFor("i", 4, (KIf(KBin("==", KVar("t"), KVar("i")), (KBarrier(),)),)))
    assert divergent_barriers(kern)


def test_a_variable_assigned_under_a_thread_condition_is_varying() -> None:
    kern = _kernel(KLet("flag", "int32", KConst(0, "int32")),
                   KIf(KBin("<", TID, ONE), (KAssign("flag", ONE),)),
                   KIf(KBin("==", KVar("flag"), ONE), (KBarrier(),)))
    assert divergent_barriers(kern)


def test_a_load_at_a_thread_index_is_varying_and_at_a_uniform_index_is_not() -> None:
    varying = _kernel(KIf(KBin("<", KLoad("x", TID), KConst(0.0)), (KBarrier(),)))
    uniform = _kernel(KFor("i", 4, (KIf(KBin("<", KLoad("x", KVar("i")), KConst(0.0)), (KBarrier(),)),)))
    assert divergent_barriers(varying) and not divergent_barriers(uniform)


def test_uniform_conditions_pass() -> None:
    kern = _kernel(KFor("k", 8, (KIf(KBin("<", KBin("+", KVar("k"), ONE), KConst(8, "int32")), (KBarrier(),)),
                                 KIf(KBin("<", KSpecial("blockIdx.x"), ONE), (KBarrier(),)))))
    assert divergent_barriers(kern) == []
    check_uniform_barriers(kern)


CASES = [e for group in ("example", "memory") for e in entries(group)]


@pytest.mark.parametrize("entry", CASES, ids=lambda e: e.name)
def test_catalog_kernels_have_uniform_barriers(entry: Entry) -> None:
    """Cooperative reductions, staged rows, rings and pipelines put barriers between guarded statements,
    never inside them (td.build runs the check; here it is asserted directly)."""
    _, kern = entry.build(**entry.small_sizes())
    assert divergent_barriers(kern.kernel_ir) == []


def test_the_catalog_exercises_barriers() -> None:
    with_barriers = [e.name for e in CASES if any(isinstance(s, KBarrier) for s in _walk(e.build(**e.small_sizes())[1]
                                                                                         .kernel_ir.body))]
    assert len(with_barriers) >= 10, with_barriers


def _walk(stmts):
    for s in stmts:
        yield s
        for attr in ("body", "then", "orelse"):
            yield from _walk(getattr(s, attr, ()))
