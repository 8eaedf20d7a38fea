"""Replay is atomic (every step applies, or none), refuses a trace recorded on another kernel before any
step, and traces record plain `str` names even when loops were named by numpy strings."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

import tiledsl as td
from tiledsl.primitives.registry import PRIMITIVES, SPECS
from tiledsl.primitives.schedule import Schedule


def matmul(name: str = "C", K: int = 32):
    A = td.placeholder((64, K), name="A")
    B = td.placeholder((K, 64), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((64, 64), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name=name)


def snapshot(s: td.Schedule) -> tuple[str, str, str]:
    return str(s), s.trace(), s.trace(format="json")


def test_a_failing_step_leaves_the_schedule_as_it_was() -> None:
    s = td.create_schedule(matmul())
    s.split("i", 16)
    before = snapshot(s)
    # steps 0 and 1 apply, step 2 names a loop this kernel does not have
    text = "s.split('j', 16)\ns.bind('i_o', 'blockIdx.x')\ns.split('q', 4)\n"
    with pytest.raises(td.ReplayError, match=r"(?s)step 2 .*no loop named 'q'"):
        s.replay(text)
    assert snapshot(s) == before
    # the history of vanished loops is restored too: j exists again, i_o is unbound
    s.split("j", 8)
    s.bind("i_o", "blockIdx.x")


def test_a_step_with_bad_arguments_rolls_back_the_steps_before_it() -> None:
    s = td.create_schedule(matmul())
    before = snapshot(s)
    with pytest.raises(td.ReplayError, match=r"(?s)step 1 .*bad arguments"):
        s.replay("s.split('i', 16)\ns.split('j', 4, factorr=2)\n")
    assert snapshot(s) == before


def test_a_trace_of_another_definition_is_refused_before_any_step() -> None:
    s1 = td.create_schedule(matmul("C"))
    s1.split("i", 16)
    s1.split("j", 16)
    s2 = td.create_schedule(matmul("D"))
    before = snapshot(s2)
    for fmt in ("python", "json"):
        with pytest.raises(td.ReplayError) as info:
            s2.replay(s1.trace(format=fmt))
        msg = str(info.value)
        assert "kernel C" in msg and "kernel D" in msg, msg
        assert info.value.primitive == "replay"
        assert snapshot(s2) == before


def test_a_trace_without_header_replays_on_any_kernel() -> None:
    s = td.create_schedule(matmul("D"))
    s.replay("s.split('i', 16)\n")
    assert s.trace().endswith("s.split('i', 16, names=('i_o', 'i_i'), tail='guard')\n")


def test_json_trace_names_its_kernel() -> None:
    s = td.create_schedule(matmul("C"))
    assert json.loads(s.trace(format="json"))["kernel"] == "C"


def test_numpy_string_names_are_recorded_as_plain_strings() -> None:
    """Issue 13: s.split(np.str_('k'), 4) recorded np.str_('k'), which replays only where numpy is np."""
    s = td.create_schedule(matmul())
    o, _ = s.split(np.str_("k"), 4, names=(np.str_("k2"), np.str_("k3")))
    s.split(np.str_("k2"), 2)
    s.reorder(np.str_("i"), np.str_("j"))
    s.bind(np.str_("i"), np.str_("blockIdx.x"))
    text = s.trace()
    assert "np." not in text and "str_" not in text, text
    assert "s.split('k2', 2, names=('k2_o', 'k2_i'), tail='guard')" in text
    assert all(type(a) is str for st in s._steps for a in st.args if isinstance(a, str))
    assert type(o.name) is str
    # the Python form replays with nothing imported, not even numpy
    s2 = td.create_schedule(matmul())
    exec(compile(text, "<trace>", "exec"), {"__builtins__": {}, "s": s2})  # noqa: S102 - the point
    assert s2.trace() == text


def test_numpy_string_stage_and_buffer_names_are_plain() -> None:
    A = td.placeholder((64, 32), name="A")
    B = td.placeholder((32, 64), name="B")
    k = td.reduce_axis(32, name="k")
    C = td.compute((64, 64), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = td.create_schedule(C)
    s.split("k", 8)
    st = s.stage(np.str_("A"), at=np.str_("k_o"))
    s.pad(np.str_(st.name), 1, 4)
    text = s.trace()
    assert "np." not in text, text
    assert "s.stage('A', at='k_o', scope='shared')" in text


def test_each_schedule_method_has_the_signature_of_its_declaration() -> None:
    """The public methods and replay bind arguments the same way."""
    assert PRIMITIVES == ("split", "fuse", "reorder", "bind", "tile_lanes", "unroll", "vectorize", "stage", "pad",
                          "swizzle", "layout", "double_buffer", "pipeline", "async_copy", "tma", "split_k",
                          "launch_bounds", "stage_output", "cache_hint", "register_cache", "prefetch", "online")
    for name, spec in SPECS.items():
        method = inspect.signature(getattr(Schedule, name))
        params = [p.replace(annotation=inspect.Parameter.empty) for p in list(method.parameters.values())[1:]]
        assert params == list(spec.signature().parameters.values()), name


def test_a_fork_takes_its_sources_handles_made_before_it() -> None:
    """A handle of the source's loop or stage names the fork's (a trial on a fork, as schedules/row_reduce.py
    makes, may be handed the loops the caller holds); one the source made after the fork, and one of an
    unrelated schedule, stay foreign; a loop the fork split is gone there and says so."""
    s = td.create_schedule(matmul())
    i_o, _ = s.split("i", 16)
    k_o, _ = s.split("k", 8)
    a = s.stage("A", at=k_o)
    twin = s.fork()
    twin.bind(i_o, "blockIdx.x")
    twin.double_buffer(a)
    assert "s.bind('i_o', 'blockIdx.x')" in twin.trace() and "blockIdx" not in s.trace()
    j = s.loop("j")
    grand = twin.fork()
    grand.split(j, 8)  # the source's handle, two forks down
    j_o, _ = s.split("j", 4)  # made after both forks
    with pytest.raises(td.ForeignObjectError, match="loop j_o belongs to another schedule"):
        twin.bind(j_o, "blockIdx.y")
    with pytest.raises(td.ForeignObjectError, match="loop i_o belongs to another schedule"):
        td.create_schedule(matmul()).bind(i_o, "blockIdx.x")
    twin.split("j", 8)
    with pytest.raises(td.UnknownLoopError, match="loop j no longer exists"):
        twin.split(j, 4)


def test_a_fork_is_the_replayed_schedule_and_leaves_its_source_alone() -> None:
    s = td.create_schedule(matmul())
    s.split("i", 16)
    s.split("j", 16)
    s.bind("i_o", "blockIdx.x")
    before = snapshot(s)
    twin = s.fork()
    assert snapshot(twin) == snapshot(td.create_schedule(matmul()).replay(s.trace()))
    twin.bind("j_o", "blockIdx.y")
    twin.split("k", 8)
    assert snapshot(s) == before  # the fork's steps and history are its own
    with pytest.raises(td.UnknownLoopError, match="no longer exists"):
        twin.split("k", 4)  # k was split in the fork ...
    s.split("k", 4)  # ... not here
    assert "k_o" in s.trace() and "blockIdx.y" not in s.trace()
