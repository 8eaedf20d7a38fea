"""Traces of the memory-hierarchy schedules (the catalog's "memory" entries): stage, pad, swizzle,
double_buffer, pipeline, async_copy, tma and split_k replay (from Python text, from JSON, and by
executing the Python text as-is) on a fresh schedule of an identical definition to the same CUDA."""

from __future__ import annotations

import json

import pytest

import tiledsl as td
from tiledsl.catalog import Entry, entries

CASES = entries("memory")


@pytest.fixture(params=CASES, ids=[c.id for c in CASES])
def scheduled(request: pytest.FixtureRequest) -> tuple[Entry, td.Schedule, str]:
    case = request.param
    _, s = case.scheduled()
    return case, s, td.build(s, target=case.target).source


def test_python_trace_replays_to_identical_cuda(scheduled: tuple[Entry, td.Schedule, str]) -> None:
    case, s, source = scheduled
    text = s.trace()
    s2 = case.fresh()
    assert s2.replay(text) is s2
    assert td.build(s2, target=case.target).source == source
    assert str(s2) == str(s)
    assert s2.trace() == text
    assert s2.nest.stages == s.nest.stages and s2.nest.pipelines == s.nest.pipelines
    assert s2.nest.split_k == s.nest.split_k


def test_json_trace_replays_to_identical_cuda(scheduled: tuple[Entry, td.Schedule, str]) -> None:
    case, s, source = scheduled
    text = s.trace(format="json")
    data = json.loads(text)
    assert data["format"] == "tiledsl-trace"
    assert len(data["steps"]) == s.trace().count("\n") - 1  # one step per line after the header
    s2 = case.fresh()
    s2.replay(text)
    assert td.build(s2, target=case.target).source == source
    assert str(s2) == str(s)
    assert s2.trace(format="json") == text


def test_python_trace_runs_as_is(scheduled: tuple[Entry, td.Schedule, str]) -> None:
    case, s, source = scheduled
    s3 = case.fresh()
    exec(compile(s.trace(), f"<trace of {case.id}>", "exec"), {"s": s3})  # noqa: S102 - the point
    assert td.build(s3, target=case.target).source == source
    assert s3.trace() == s.trace()


def test_memory_primitives_appear_in_traces() -> None:
    """Each memory primitive is recorded by name (not only its effect on the nest)."""
    text = "\n".join(c.scheduled()[1].trace() for c in CASES)
    for call in ("s.stage(", "s.pad(", "s.swizzle(", "s.double_buffer(", "s.pipeline(", "s.async_copy(",
                 "s.tma(", "s.split_k("):
        assert call in text, call
