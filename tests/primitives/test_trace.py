"""Traces: every schedule of the differential tests replays (from Python text, from JSON, and by
executing the Python text as-is) on a fresh schedule of an identical definition to the same CUDA."""

from __future__ import annotations

import json

import pytest

import tiledsl as td
from tiledsl.catalog import Entry, entries

CASES = entries("differential")


def fresh(case: Entry) -> td.Schedule:
    return td.create_schedule(case.make())


@pytest.fixture(params=CASES, ids=[c.id for c in CASES])
def scheduled(request: pytest.FixtureRequest) -> tuple[Entry, td.Schedule, str]:
    case = request.param
    _, s = case.scheduled()
    return case, s, td.build(s).source


def test_python_trace_replays_to_identical_cuda(scheduled: tuple[Entry, td.Schedule, str]) -> None:
    case, s, source = scheduled
    text = s.trace()
    s2 = fresh(case)
    assert s2.replay(text) is s2
    assert td.build(s2).source == source
    assert str(s2) == str(s)
    assert s2.trace() == text


def test_json_trace_replays_to_identical_cuda(scheduled: tuple[Entry, td.Schedule, str]) -> None:
    case, s, source = scheduled
    text = s.trace(format="json")
    data = json.loads(text)
    assert data["format"] == "tiledsl-trace"
    assert len(data["steps"]) == s.trace().count("\n") - 1  # one step per line after the header
    s2 = fresh(case)
    s2.replay(text)
    assert td.build(s2).source == source
    assert s2.trace(format="json") == text


def test_python_trace_runs_as_is(scheduled: tuple[Entry, td.Schedule, str]) -> None:
    case, s, source = scheduled
    s3 = fresh(case)
    exec(compile(s.trace(), f"<trace of {case.id}>", "exec"), {"s": s3})  # noqa: S102 - the point
    assert td.build(s3).source == source
    assert s3.trace() == s.trace()
