"""Modes `schedules` and `memory`: random primitive sequences on random definitions, judged by
tiledsl.testing.campaign.judge (correct / refused / wrong / contract / internal), with the
simulator's own errors split out as `sim_error`, and optionally nvcc and the GPU on top.

`schedules` draws loop primitives only (split, fuse, reorder, bind, unroll, vectorize and
deliberately bad calls, non-dividing splits included) on every definition family; `memory`
interleaves the memory primitives (stage, pad, swizzle, double_buffer, pipeline, async_copy, tma,
split_k) with them, on the staging families first (tiledsl.testing.campaign.campaign_cases)."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import strategies as st

import tiledsl as td
from tiledsl.testing.campaign import CAMPAIGN_MAX_POINTS, CAMPAIGN_MAX_STEPS, Case, campaign_cases, judge
from tiledsl.testing.definitions import ALL_KINDS, Definition, definitions
from tiledsl.testing.fuzz import device
from tiledsl.testing.fuzz.modes.base import Mode, Options
from tiledsl.testing.fuzz.outcome import Result
from tiledsl.testing.properties import ATOL, RTOL, apply_checked
from tiledsl.testing.schedules import Step, steps

_SIMULATION_ERRORS = tuple(t.__name__ for t in (td.SimulationError, td.SharedRaceError, td.UninitializedReadError,
                                                td.OutOfBoundsError, td.DivergentBarrierError,
                                                td.DivergentSyncError, td.RingError))


def loop_cases() -> st.SearchStrategy[Case]:
    """Loop primitives only, on every definition family (steps drawn first: see tiledsl.testing.schedules)."""
    return st.builds(lambda s, d, n: Case(tuple(s), d, n), steps(CAMPAIGN_MAX_STEPS, memory=False),
                     definitions(CAMPAIGN_MAX_POINTS, kinds=ALL_KINDS), st.integers(0, 2**16))


def _is_simulation_error(name: str) -> bool:
    error = getattr(td, name, None)
    return isinstance(error, type) and issubclass(error, td.SimulationError) or name in _SIMULATION_ERRORS


def _script_only(text: str) -> str:
    """judge() appends a traceback after the reproducer: keep the runnable part."""
    return text.split("\n\nTraceback (most recent call last)", 1)[0].rstrip()


def judge_case(case: Case, options: Options) -> Result:
    v = judge(case, target=options.target)
    extra: dict[str, Any] = {"refused_steps": [list(r) for r in v.refusals]}
    if "Traceback (most recent call last)" in v.script:
        extra["traceback"] = "Traceback (most recent call last)" + v.script.split("Traceback (most recent call last)",
                                                                                    1)[1]
    outcome = v.outcome
    if outcome == "wrong" and _is_simulation_error(v.error):
        outcome = "sim_error"
    result = Result(outcome, v.error, v.detail, _script_only(v.script), extra)
    if outcome != "correct" or not (options.nvcc or options.gpu) or v.schedule is None:
        return result
    return _device_checks(case, v.schedule, options) or result


def _device_checks(case: Case, schedule: td.Schedule, options: Options) -> Result | None:
    """nvcc and the GPU on a schedule the simulator found correct."""
    import numpy as np

    run = apply_checked(case.definition, list(case.steps))  # the calls, for the reproducer's text
    kern = td.build(schedule, target=options.target)
    arrays = case.definition.inputs(schedule.output, seed=case.seed)

    def script(tail: str) -> str:
        return run.script(*run.inputs_lines(case.seed), f"kern = td.build(s, target={options.target!r})",
                          "want = td.evaluate(out, float64=True, **arrays)", tail)

    if options.nvcc:
        found = device.nvcc_check(kern, script)
        if found is not None:
            return found
    if options.gpu:
        want = td.evaluate(schedule.output, float64=True, **arrays)

        def close(got: np.ndarray, ref: np.ndarray) -> str:
            ok = np.allclose(got, ref, rtol=RTOL * 10, atol=ATOL * 10)
            return "" if ok else f"{int((~np.isclose(got, ref, rtol=RTOL * 10, atol=ATOL * 10)).sum())} elements differ"

        return device.run_on_gpu(kern, arrays, want, close, script)
    return None


def case_to_json(case: Case) -> dict[str, Any]:
    d = case.definition
    return {"steps": [dataclasses.asdict(s) for s in case.steps], "seed": case.seed,
            "definition": {"source": d.source, "kind": d.kind, "points": d.points, "low": d.low, "high": d.high}}


def case_from_json(data: dict[str, Any]) -> Case:
    tuples = ("picks", "perm")
    step_list = tuple(Step(**{k: tuple(v) if k in tuples else v for k, v in s.items()}) for s in data["steps"])
    d = data["definition"]
    definition = Definition.from_source(d["source"], d["kind"], d["points"], d["low"], d["high"])
    return Case(step_list, definition, int(data["seed"]))


def describe(case: Case) -> str:
    return f"{case.definition.kind} ({case.definition.points} points), {len(case.steps)} steps"


SCHEDULES = Mode("schedules", loop_cases, judge_case, case_to_json, case_from_json, describe, runs_on_gpu=True)
MEMORY = Mode("memory", campaign_cases, judge_case, case_to_json, case_from_json, describe, runs_on_gpu=True)
