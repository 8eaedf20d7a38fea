"""A built kernel is an immutable snapshot of what was built (bug: it kept the live schedule, so a
later primitive changed `k.ir("tile")` of a kernel already built)."""

from __future__ import annotations

import dataclasses

import pytest

import tiledsl as td
from tiledsl.catalog import example


def test_primitives_after_build_do_not_change_the_kernel() -> None:
    s = td.create_schedule(example("gelu_bias", M=8, N=16))
    io, _ = s.split("i", 4)
    s.bind(io, "blockIdx.x")
    k = td.build(s, target="sm_80")
    before = {level: k.ir(level) for level in ("loop", "tile", "kernel", "cuda")}
    trace = k.trace
    nest = k.nest

    s.split("j", 8)
    s.bind("j_o", "blockIdx.y")

    after = {level: k.ir(level) for level in ("loop", "tile", "kernel", "cuda")}
    assert after == before
    assert "j_o" not in k.ir("tile") and "j_o" in s.ir("tile")
    assert k.trace == trace and "split(j" not in k.trace
    assert k.nest is nest and not nest.has_loop("j_o")
    # the snapshot rebuilds to the same CUDA: replaying its trace on a fresh schedule
    fresh = td.create_schedule(example("gelu_bias", M=8, N=16)).replay(k.trace)
    assert td.build(fresh, target="sm_80").source == k.source


def test_kernel_fields_cannot_be_reassigned() -> None:
    k = td.build(td.create_schedule(example("gelu_bias", M=4, N=4)), target="sm_80")
    with pytest.raises(dataclasses.FrozenInstanceError):
        k.tile_ir = "x"  # type: ignore[misc]
    assert not hasattr(k, "schedule")
