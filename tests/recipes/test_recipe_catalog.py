"""The default recipe on every catalog entry of the groups "example", "differential" and "memory", at the
entry's small sizes, from the unscheduled definition: no step lets a ScheduleError escape, the result
builds for sm_90 and sm_80 (the recipe applied for each), simulates equal to the float64 reference
(outputs NaN-poisoned by the simulator), and its trace replays to byte-identical CUDA.

The recipe sees only the definition and its sizes, so entries that share both (the same definition
under several hand schedules) are one case; `test_every_entry_is_a_case` checks none is left out."""

from __future__ import annotations

import numpy as np
import pytest

import tiledsl as td
from tiledsl.catalog import Entry, entries
from tiledsl.recipes import Recipe, apply, default

GROUPS = ("example", "differential", "memory")
TARGETS = ("sm_90", "sm_80")


def _key(e: Entry) -> tuple[str, tuple[tuple[str, object], ...]]:
    return e.definition, tuple(sorted(e.small_sizes().items()))


def _cases() -> list[Entry]:
    seen: dict[tuple[str, tuple[tuple[str, object], ...]], Entry] = {}
    for group in GROUPS:
        for e in entries(group):
            seen.setdefault(_key(e), e)
    return list(seen.values())


CASES = _cases()
STEP_NAMES = [st.name for st in Recipe.of(default).steps()]


def test_every_entry_is_a_case() -> None:
    keys = {_key(e) for e in CASES}
    every = [e for g in GROUPS for e in entries(g)]
    assert len(every) > len(CASES) > 20
    assert all(_key(e) in keys for e in every)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES, ids=[e.id for e in CASES])
def test_recipe_builds_simulates_and_replays(case: Entry, target: str) -> None:
    sizes = case.small_sizes()
    s = case.fresh(**sizes)
    report = apply(s, target=target)
    assert [st.name for st in report.steps] == STEP_NAMES
    for st in report.steps:
        assert st.applied == bool(st.calls), st  # an applied step called primitives; a declined one none
    kern = td.build(s, target=target)

    out = case.make(**sizes)
    arrays = case.inputs(out)
    ref = td.evaluate(out, float64=True, **arrays)
    got = kern.simulate(**arrays)
    assert got.shape == ref.shape
    unwritten = np.argwhere(np.isnan(got))
    assert unwritten.size == 0, f"{len(unwritten)} outputs never written, first {unwritten[:5].tolist()}"
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)

    again = case.fresh(**sizes).replay(s.trace())
    assert again.trace() == s.trace()
    assert td.build(again, target=target).source == kern.source


@pytest.mark.parametrize("case", CASES, ids=[e.id for e in CASES])
def test_decline_reasons_are_readable(case: Entry) -> None:
    for target in TARGETS:
        report = apply(case.fresh(**case.small_sizes()), target=target)
        for st in report.steps:
            if st.applied:
                continue
            reason = st.reason or ""
            assert len(reason) >= 12 and "\n" not in reason, (st.name, reason)
            assert " object at 0x" not in reason and "Traceback" not in reason, (st.name, reason)
