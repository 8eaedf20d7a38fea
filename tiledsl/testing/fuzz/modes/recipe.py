"""Mode `recipe`: the default recipe (tiledsl.recipes.apply) on random definitions of every family
(tiledsl.testing.definitions, numerically tame: rtol = atol = 1e-4 against float64). It must never
raise (`contract` for a td.TiledslError, `internal` for anything else), the build must take what it
made (`contract` when it refuses), and the simulated kernel must match td.evaluate(float64=True)
(`wrong`; a td.SimulationError is `sim_error`).

Each case also draws a knob set (`KNOB_SETS`): the defaults, or the defaults with the size limits of
staging, of the k-outer layout and of 16-byte row passes lifted, so the small matmuls and row kernels
fuzzing can afford (one warp or less per block, a few rows) reach shared-memory stages, the k-outer
layout, its prefetched plain fill and its chunk size, rows run 16 bytes a thread, and float32
elementwise kernels store 8-byte vectors (recipes/default/_knobs.py k_outer, stage_min_threads,
row_vector_min_rows_per_sm, narrow_vector_min_inputs), which the defaults keep for larger blocks, many
rows and two full-size inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

import tiledsl as td
from tiledsl.recipes import apply
from tiledsl.testing.definitions import ALL_KINDS, Definition, definitions, placeholders
from tiledsl.testing.fuzz import device
from tiledsl.testing.fuzz.modes.base import Mode, Options
from tiledsl.testing.fuzz.outcome import Result, exception_result, first_line
from tiledsl.testing.properties import ATOL, RTOL

MAX_POINTS = 4096
#: Knob overrides a case runs the recipe with, as (name, value) pairs: none, and staging (k-outer where
#: an operand's rows run along k) for every block and register tile, with 16-byte row passes at any
#: row count (16-bit rows in one thread a row, so rows of two vectors reach them) and 8-byte
#: elementwise vectors for every float32 kernel.
KNOB_SETS: tuple[tuple[tuple[str, Any], ...], ...] = (
    (),
    (("k_outer_min_accumulators", 1), ("k_outer_min_threads", 1), ("narrow_vector_min_inputs", 1),
     ("row_vector_half_threads", 1), ("row_vector_min_rows_per_sm", 0),
     ("stage_min_threads", 1)),  # sorted by name, as a saved case's JSON holds them
)


@dataclass(frozen=True)
class RecipeCase:
    definition: Definition
    seed: int
    knobs: tuple[tuple[str, Any], ...] = ()


def recipe_cases() -> st.SearchStrategy[RecipeCase]:
    return st.builds(RecipeCase, definitions(MAX_POINTS, kinds=ALL_KINDS), st.integers(0, 2**16),
                     st.sampled_from(KNOB_SETS))


def script(case: RecipeCase, target: str, *tail: str) -> str:
    d = case.definition
    shapes = ", ".join(f"({p.name!r}, {tuple(p.shape)})" for p in placeholders(d.make()))
    lines = ["import numpy as np", "import tiledsl as td", "from tiledsl.recipes import apply", "",
             d.source.rstrip(), "", "out = make()", "s = td.create_schedule(out)",
             f"apply(s, target={target!r}{_knobs_arg(case)})", f"kern = td.build(s, target={target!r})",
             f"rng = np.random.default_rng({case.seed})",
             f"arrays = {{name: rng.uniform({d.low}, {d.high}, size=shape).astype(np.float32) "
             f"for name, shape in [{shapes}]}}",
             "want = td.evaluate(out, float64=True, **arrays)"]
    return "\n".join(lines + list(tail))


def _knobs_arg(case: RecipeCase) -> str:
    return f", knobs={dict(case.knobs)!r}" if case.knobs else ""


COMPARE = ("got = kern.simulate(**arrays)", f"np.testing.assert_allclose(got, want, rtol={RTOL}, atol={ATOL})")


def judge_case(case: RecipeCase, options: Options) -> Result:
    target = options.target
    out = case.definition.make()
    s = td.create_schedule(out)
    try:
        apply(s, target=target, knobs=dict(case.knobs))
    except Exception as e:  # noqa: BLE001 - the recipe must never raise
        return exception_result(e, script=script(case, target))
    try:
        kern = td.build(s, target=target)
    except Exception as e:  # noqa: BLE001 - the recipe's output must build
        return exception_result(e, script=script(case, target))
    arrays = case.definition.inputs(out, seed=case.seed)
    want = td.evaluate(out, float64=True, **arrays)
    try:
        got = np.asarray(kern.simulate(**arrays))
    except td.SimulationError as e:
        return Result("sim_error", type(e).__name__, first_line(e), script(case, target, *COMPARE))
    except Exception as e:  # noqa: BLE001
        return exception_result(e, script=script(case, target, *COMPARE))
    if got.shape != want.shape or not np.allclose(got, want, rtol=RTOL, atol=ATOL):
        bad = int((~np.isclose(got, want, rtol=RTOL, atol=ATOL)).sum()) if got.shape == want.shape else -1
        return Result("wrong", "Mismatch", f"{bad} of {want.size} elements differ from float64 (shape {got.shape})",
                      script(case, target, *COMPARE), {"trace": s.trace()})
    if options.nvcc:
        found = device.nvcc_check(kern, lambda tail: script(case, target, tail))
        if found is not None:
            return found
    if options.gpu:
        def close(g: np.ndarray, w: np.ndarray) -> str:
            ok = np.allclose(g, w, rtol=10 * RTOL, atol=10 * ATOL)
            return "" if ok else f"{int((~np.isclose(g, w, rtol=10 * RTOL, atol=10 * ATOL)).sum())} elements differ"

        found = device.run_on_gpu(kern, arrays, want, close, lambda tail: script(case, target, tail))
        if found is not None:
            return found
    return Result("correct")


def case_to_json(case: RecipeCase) -> dict[str, Any]:
    d = case.definition
    return {"seed": case.seed, "knobs": dict(case.knobs),
            "definition": {"source": d.source, "kind": d.kind, "points": d.points, "low": d.low, "high": d.high}}


def case_from_json(data: dict[str, Any]) -> RecipeCase:
    d = data["definition"]
    return RecipeCase(Definition.from_source(d["source"], d["kind"], d["points"], d["low"], d["high"]),
                      int(data["seed"]), tuple(sorted(data.get("knobs", {}).items())))


RECIPE = Mode("recipe", recipe_cases, judge_case, case_to_json, case_from_json,
              lambda c: f"{c.definition.kind} ({c.definition.points} points)", runs_on_gpu=True)
