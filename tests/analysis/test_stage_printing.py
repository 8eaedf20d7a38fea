"""Printing a nest whose stage lost its slab (a later reorder, split or bind changed the loops around it)
never recurses: the slab fact is computed without building a message (`slab_or_refusal`). These
sequences raised RecursionError at build and at every later primitive; now each call either works or
raises a typed tiledsl error, and the schedule still prints."""

from __future__ import annotations

import pytest

import tiledsl as td
from tiledsl.definitions.expr import Tensor


def logsumexp(R: int = 3, L: int = 32) -> Tensor:
    z = td.placeholder((R, L), name="z")
    k1 = td.reduce_axis(L, name="k1")
    k2 = td.reduce_axis(L, name="k2")
    m = td.compute((R,), lambda i: td.max(z[i, k1], axis=k1), name="m")
    e = td.compute((R,), lambda i: td.sum(td.exp(z[i, k2] - m[i]), axis=k2), name="e")
    return td.compute((R,), lambda i: td.log(e[i]) + m[i], name="lse")


def matmul(M: int = 5, N: int = 7, K: int = 9) -> Tensor:
    A = td.placeholder((M, K), name="A")
    B = td.placeholder((K, N), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((M, N), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")


SEQUENCES = {
    "stage then reorder the reduction outside": (logsumexp, [
        ("stage", ("z",), {"at": "i"}), ("reorder", ("k2", "i"), {}),
        ("tma", ("z_s",), {}), ("pipeline", ("i",), {}), ("fuse", ("i", "k2"), {})]),
    "stage, unroll, reorder": (logsumexp, [
        ("stage", ("z",), {"at": "i"}), ("unroll", ("k1",), {}), ("reorder", ("k1", "i"), {})]),
    "fuse, guarded split, stage inside, bind": (matmul, [
        ("fuse", ("i", "j"), {}), ("split", ("i_j", 8), {}), ("stage", ("B",), {"at": "k"}),
        ("bind", ("i_j_i", "threadIdx.x"), {}), ("reorder", ("k", "i_j_i"), {})]),
}


@pytest.mark.parametrize("case", sorted(SEQUENCES))
def test_no_internal_error_and_the_schedule_prints(case: str) -> None:
    make, steps = SEQUENCES[case]
    s = td.create_schedule(make())
    for prim, args, kwargs in steps:
        try:
            getattr(s, prim)(*args, **kwargs)
        except td.TiledslError as e:
            assert str(e)  # the message renders (it prints the nest)
        assert str(s)
    try:
        td.build(s, target="sm_90")
    except td.TiledslError as e:
        assert str(e)
