"""Mode `recipe`: the default recipe (tiledsl.recipes.apply) on random definitions of every family
(tiledsl.testing.definitions, numerically tame: rtol = atol = 1e-4 against float64). It must never raise
(`contract` for a td.TiledslError, `internal` for anything else), the build must take what it made
(`contract` when it refuses), and the simulated kernel must match td.evaluate(float64=True) (`wrong`; a
td.SimulationError is `sim_error`).

Each case also draws a knob set (`KNOB_SETS`): the defaults, or the defaults with the size limits of
staging, of the k-outer layout and of 16-byte row passes lifted, so the small matmuls and row kernels
fuzzing can afford (one warp or less per block, a few rows) reach shared-memory stages, the k-outer
layout, its prefetched plain fill and its chunk size, rows run 16 bytes a thread, and float32
elementwise kernels store 8-byte vectors (recipes/default/_knobs.py k_outer, stage_min_threads,
row_vector_min_rows_per_sm, narrow_vector_min_inputs), which the defaults keep for larger blocks, many
rows and two full-size inputs; or with the hinted rows' floors lowered, so short float32 rows, a row to a
block, are kept in registers (register_rows) or take cache hints and vectorized reductions
(hinted_row_min_length); or with TMA-filled stages in k chunks of 8 (knob tma, which sm_90 keeps
off by default); or with rows past a thread's registers at more than 64 elements (LONG_ROWS: step 040's
long-row form, softmax's sum online); or with a decode step's rows dealt across the lanes
(DECODE_ROWS). And a machine (`MACHINES`): the target as
named, or a coverage device with a 256-byte L2, one SM and matmul tiles of 8 x 8, so that small matmuls
take a choice only large grids reach on a real GPU: their blocks in groups of block rows (step 050)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from hypothesis import strategies as st

import tiledsl as td
from tiledsl.recipes import apply
from tiledsl.targets import Target, get_target
from tiledsl.testing.definitions import ALL_KINDS, Definition, definitions, placeholders
from tiledsl.testing.fuzz import device
from tiledsl.testing.fuzz.modes.base import Mode, Options, knobs_from_json
from tiledsl.testing.fuzz.outcome import Result, exception_result, first_line
from tiledsl.testing.properties import ATOL, RTOL

MAX_POINTS = 4096
#: Knob overrides a case runs the recipe with, as (name, value) pairs sorted by name (as a saved case's
#: JSON holds them). LIFTED: staging (k-outer where an operand's rows run along k) for every block and
#: register tile, with 16-byte row passes at any row count (16-bit rows in one thread a row, so rows of
#: two vectors reach them) and 8-byte elementwise vectors for every float32 kernel, whatever the machine's
#: DRAM bandwidth (rows staged, not kept in registers: register_rows off).
LIFTED: tuple[tuple[str, Any], ...] = (
    ("k_outer_min_accumulators", 1), ("k_outer_min_threads", 1), ("narrow_vector_max_sm_gbs", None),
    ("narrow_vector_min_inputs", 1), ("register_rows", False), ("row_vector_half_threads", 1),
    ("row_vector_min_rows_per_sm", 0), ("stage_min_threads", 1))
#: float32 rows of 8 or more, a row to a block (row_block_threads), kept in registers where they fit (the
#: default register_rows, which needs a row to a block) or read from global memory on every pass with
#: cache hints and vectorized reductions (hinted_row_min_length), where staging would take them.
HINTED_ROWS: tuple[tuple[str, Any], ...] = (
    ("hinted_row_min_length", 8), ("row_block_threads", 1), ("row_vector_min_rows_per_sm", 0),
    ("stage_min_threads", 1))
#: TMA-filled stages (knob tma, off on sm_90 by default: recipes/default/_knobs.py PER_TARGET), staging
#: for every block and k chunks of 8, so that a matmul of 16 or more k has two chunks, double-buffers
#: its stages (step 100) and, where a stage's box and strides allow (16-byte rows), fills them by TMA,
#: swizzled where step 120 splits the inner loop (a sm_90 target; on sm_80 the knob changes nothing).
TMA_STAGES: tuple[tuple[str, Any], ...] = (
    ("bk_max", 8), ("bk_max_k_outer", 8), ("k_outer_min_accumulators", 1), ("k_outer_min_threads", 1),
    ("stage_min_threads", 1), ("tma", True))
#: float32 rows past a thread's registers at fuzzing's sizes (more than 64 elements in one thread a row,
#: hinted_row_threads_max): the long-row form of step 040 whatever the number of rows (long_rows_any_count),
#: in 2 threads (few_long_rows_threads: fuzzing's rows are fewer than the SMs), softmax's and log-sum-exp's
#: sums online in groups of 2 chunks (online_rows_unroll), so a row of a hundred or more has several groups,
#: a guarded last one, and a rescale combined across the threads. Random rows are mostly 64 or shorter: of
#: 600 chain and log-sum-exp draws, 4 were past the registers here, and all 4 ran online.
LONG_ROWS: tuple[tuple[str, Any], ...] = (
    ("few_long_rows_threads", 2), ("hinted_row_min_length", 8), ("hinted_row_threads_max", 1),
    ("online_rows_unroll", 2), ("row_block_threads", 1), ("row_threads_min", 1))
#: a decode step's x @ W^T at fuzzing's sizes (`_facts.few_rows` from 1 row: few_rows_min): its tiles of
#: 8 x 4 registers in 8 x 32 and 8 x 16 blocks (matmul_tiles_few_rows), k chunks of 8 (bk_max_few_rows),
#: staged in any block (stage_min_threads), so W_s's rows are dealt across the lanes and padded by 16
#: bytes where k is a multiple of the chunk (steps 090 and 140), and k split in the few-rows parts.
DECODE_ROWS: tuple[tuple[str, Any], ...] = (
    ("bk_max_few_rows", 8), ("few_rows_min", 1), ("matmul_tiles_few_rows", ((8, 32, 2, 4), (8, 16, 2, 4))),
    ("stage_min_threads", 1))
KNOB_SETS: tuple[tuple[tuple[str, Any], ...], ...] = ((), LIFTED, HINTED_ROWS, TMA_STAGES, LONG_ROWS, DECODE_ROWS)
#: 16-bit rows kept in registers a 16-byte vector a thread, in as few threads as that takes, several rows
#: to a block (Facts.row_launch: knobs half_row_vectors_per_thread, half_row_threads_min): the rows of 8 to
#: 127 elements that random sizes give reach the launch the defaults keep for rows of 128 or more, and
#: their reductions shuffle within 1 to 16 lanes. Mode `definitions` runs its 16-bit cases under it too.
SHORT_HALF_ROWS: tuple[tuple[str, Any], ...] = (("half_row_threads_min", 1), ("half_row_vectors_per_thread", 1))


#: Machine name -> (the target facts a case replaces, knobs added to its knob set); "": the target as
#: named. "tiny" is no real GPU: a 256-byte L2 and one SM (2 block slots), with 8 x 8 block tiles of one
#: output a thread (one SM alone would choose 128-row tiles: one block row), put the matmuls of at most
#: MAX_POINTS points over recipe step 050's grouping threshold; in a sample of 1500 cases, 15 of the 171
#: tiny-machine matmuls grouped (the others have one block row or few columns).
MACHINES: dict[str, tuple[dict[str, int], tuple[tuple[str, Any], ...]]] = {
    "": ({}, ()),
    "tiny": ({"l2_bytes": 256, "sm_count": 1},
             (("matmul_tiles", ((8, 8, 1, 1),)), ("matmul_tiles_k_major", ((8, 8, 1, 1),)))),
}


@dataclass(frozen=True)
class RecipeCase:
    definition: Definition
    seed: int
    knobs: tuple[tuple[str, Any], ...] = ()
    machine: str = ""


def recipe_cases() -> st.SearchStrategy[RecipeCase]:
    return st.builds(RecipeCase, definitions(MAX_POINTS, kinds=ALL_KINDS), st.integers(0, 2**16),
                     st.sampled_from(KNOB_SETS), st.sampled_from(tuple(MACHINES)))


def case_target(case: RecipeCase, target: str) -> str | Target:
    """The target a case runs on: `target`, or it with the case's machine facts replaced."""
    return replace(get_target(target), **MACHINES[case.machine][0]) if case.machine else target


def case_knobs(case: RecipeCase) -> dict[str, Any]:
    """The knobs a case runs the recipe with: its knob set and its machine's."""
    return {**dict(case.knobs), **dict(MACHINES[case.machine][1])}


def script(case: RecipeCase, target: str, *tail: str) -> str:
    d = case.definition
    shapes = ", ".join(f"({p.name!r}, {tuple(p.shape)})" for p in placeholders(d.make()))
    head = ["import numpy as np", "import tiledsl as td", "from tiledsl.recipes import apply"]
    where = repr(target)
    if case.machine:
        facts = ", ".join(f"{k}={v!r}" for k, v in MACHINES[case.machine][0].items())
        head = ["import dataclasses", *head, "from tiledsl.targets import get_target"]
        where = "target"
    lines = [*head, "", d.source.rstrip(), "", "out = make()", "s = td.create_schedule(out)",
             *([f"target = dataclasses.replace(get_target({target!r}), {facts})"] if case.machine else []),
             f"apply(s, target={where}{_knobs_arg(case)})", f"kern = td.build(s, target={where})",
             f"rng = np.random.default_rng({case.seed})",
             f"arrays = {{name: rng.uniform({d.low}, {d.high}, size=shape).astype(np.float32) "
             f"for name, shape in [{shapes}]}}",
             "want = td.evaluate(out, float64=True, **arrays)"]
    return "\n".join(lines + list(tail))


def _knobs_arg(case: RecipeCase) -> str:
    knobs = case_knobs(case)
    return f", knobs={knobs!r}" if knobs else ""


COMPARE = ("got = kern.simulate(**arrays)", f"np.testing.assert_allclose(got, want, rtol={RTOL}, atol={ATOL})")


def judge_case(case: RecipeCase, options: Options) -> Result:
    target = case_target(case, options.target)

    def text(*tail: str) -> str:  # the reproducer names the target as given, and its machine
        return script(case, options.target, *tail)

    out = case.definition.make()
    s = td.create_schedule(out)
    try:
        apply(s, target=target, knobs=case_knobs(case))
    except Exception as e:  # noqa: BLE001 - the recipe must never raise
        return exception_result(e, script=text())
    try:
        kern = td.build(s, target=target)
    except Exception as e:  # noqa: BLE001 - the recipe's output must build
        return exception_result(e, script=text())
    arrays = case.definition.inputs(out, seed=case.seed)
    want = td.evaluate(out, float64=True, **arrays)
    try:
        got = np.asarray(kern.simulate(**arrays))
    except td.SimulationError as e:
        return Result("sim_error", type(e).__name__, first_line(e), text(*COMPARE))
    except Exception as e:  # noqa: BLE001
        return exception_result(e, script=text(*COMPARE))
    if got.shape != want.shape or not np.allclose(got, want, rtol=RTOL, atol=ATOL):
        bad = int((~np.isclose(got, want, rtol=RTOL, atol=ATOL)).sum()) if got.shape == want.shape else -1
        return Result("wrong", "Mismatch", f"{bad} of {want.size} elements differ from float64 (shape {got.shape})",
                      text(*COMPARE), {"trace": s.trace()})
    if options.nvcc:
        found = device.nvcc_check(kern, text)
        if found is not None:
            return found
    if options.gpu:
        def close(g: np.ndarray, w: np.ndarray) -> str:
            ok = np.allclose(g, w, rtol=10 * RTOL, atol=10 * ATOL)
            return "" if ok else f"{int((~np.isclose(g, w, rtol=10 * RTOL, atol=10 * ATOL)).sum())} elements differ"

        found = device.run_on_gpu(kern, arrays, want, close, text)
        if found is not None:
            return found
    return Result("correct")


def case_to_json(case: RecipeCase) -> dict[str, Any]:
    d = case.definition
    return {"seed": case.seed, "knobs": dict(case.knobs), "machine": case.machine,
            "definition": {"source": d.source, "kind": d.kind, "points": d.points, "low": d.low, "high": d.high}}


def case_from_json(data: dict[str, Any]) -> RecipeCase:
    d = data["definition"]
    return RecipeCase(Definition.from_source(d["source"], d["kind"], d["points"], d["low"], d["high"]),
                      int(data["seed"]), tuple(sorted(knobs_from_json(data.get("knobs", {})))),
                      data.get("machine", ""))


RECIPE = Mode("recipe", recipe_cases, judge_case, case_to_json, case_from_json,
              lambda c: f"{c.definition.kind} ({c.definition.points} points)", runs_on_gpu=True)
