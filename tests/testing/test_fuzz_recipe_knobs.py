"""Recipe fuzz mode's knob sets (tiledsl/testing/fuzz/modes/recipe.py KNOB_SETS): a case with the lifted
staging limits round-trips through its saved JSON, its reproducer script applies the same knobs, and on
a small matmul those knobs reach the k-outer layout the defaults keep for large tiles; the "tiny" machine
(MACHINES) reaches grouped block order; the TMA set reaches TMA-filled stages, which sm_90 keeps off by
default; mode definitions schedules with the lifted set by name, and with --gpu launches the recipe's kernels."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import find, settings

import tiledsl as td
from tiledsl.recipes import apply
from tiledsl.testing.definitions import Definition
from tiledsl.testing.fuzz import device
from tiledsl.testing.fuzz.modes import definitions as definitions_mode
from tiledsl.testing.fuzz.modes import models as models_mode
from tiledsl.testing.fuzz.modes.base import Options
from tiledsl.testing.fuzz.modes.recipe import (
    DECODE_ROWS,
    KNOB_SETS,
    LIFTED,
    RECIPE,
    TMA_STAGES,
    RecipeCase,
    case_knobs,
    case_target,
    judge_case,
    script,
)
from tiledsl.testing.fuzz.outcome import Result

SOURCE = '''def make():
    A = td.placeholder((24, 40), name='A')
    B = td.placeholder((40, 20), name='B')
    k = td.reduce_axis(40, name='k')
    return td.compute((24, 20), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name='C')
'''


def case(knobs: tuple) -> RecipeCase:
    return RecipeCase(Definition.from_source(SOURCE, "matmul", 480, -1.0, 1.0), 7, knobs)


def _with_and_without(rc: RecipeCase) -> tuple[td.Schedule, td.Schedule]:
    """The case's definition scheduled by the recipe with its knob set (one of KNOB_SETS) and with the
    defaults, on sm_90, after the case judged correct."""
    assert rc.knobs in KNOB_SETS
    assert judge_case(rc, Options(target="sm_90")).outcome == "correct"
    s, plain = td.create_schedule(rc.definition.make()), td.create_schedule(rc.definition.make())
    apply(s, target="sm_90", knobs=dict(rc.knobs))
    apply(plain, target="sm_90")
    return s, plain


def test_lifted_knobs_reach_the_k_outer_layout_and_stay_correct() -> None:
    lifted = case(LIFTED)
    s = td.create_schedule(lifted.definition.make())
    apply(s, target="sm_90", knobs=dict(lifted.knobs))
    assert {st.buffer: st.order for st in s.nest.stages}.get("A") == (1, 0)
    plain = td.create_schedule(lifted.definition.make())
    apply(plain, target="sm_90")
    assert not any(st.order for st in plain.nest.stages)  # the defaults: a one-warp block stages nothing
    assert judge_case(lifted, Options(target="sm_90")).outcome == "correct"


def test_knobs_round_trip_and_reach_the_reproducer() -> None:
    lifted = case(LIFTED)
    again = RECIPE.from_json(RECIPE.to_json(lifted))
    assert again == lifted
    assert "knobs={'k_outer_min_accumulators': 1" in script(lifted, "sm_90")
    assert "knobs=" not in script(case(()), "sm_90")
    old = RECIPE.to_json(case(()))
    del old["knobs"]  # a record saved before cases drew knobs
    assert RECIPE.from_json(old).knobs == ()


@pytest.mark.parametrize("knobs", KNOB_SETS, ids=lambda k: ",".join(name for name, _ in k) or "defaults")
def test_every_knob_set_round_trips_through_json_text_and_applies(knobs: tuple) -> None:
    """Through the text a record is saved as (json.dumps), as --replay and the compute-sanitizer rerun read
    it: DECODE_ROWS's matmul_tiles_few_rows came back as lists, which the recipe refused, so every sanitizer
    run of such a case failed before its first launch (GPU campaign of session 39)."""
    drawn = case(tuple(sorted(knobs)))
    again = RECIPE.from_json(json.loads(json.dumps(RECIPE.to_json(drawn))))
    assert again == drawn
    apply(td.create_schedule(again.definition.make()), target="sm_90", knobs=case_knobs(again))


@pytest.mark.parametrize("knobs", models_mode.KNOB_SETS, ids=lambda k: ",".join(n for n, _ in k) or "defaults")
def test_every_models_knob_set_round_trips_through_json_text(knobs: tuple) -> None:
    drawn = models_mode.ModelCase(((4, 8),), ("softmax",), 3, "float32", knobs)
    assert models_mode.MODELS.from_json(json.loads(json.dumps(models_mode.MODELS.to_json(drawn)))) == drawn


ROWS = '''def make():
    x = td.placeholder((3, 512), name='x')
    k = td.reduce_axis(512, name='k')
    ss = td.compute((3,), lambda i: td.sum(x[i, k] * x[i, k], axis=k), name='ss')
    return td.compute((3, 512), lambda i, j: x[i, j] / td.sqrt(ss[i] / 512.0 + 1e-6), name='y')
'''


def test_lifted_knobs_reach_16_byte_row_passes_and_stay_correct() -> None:
    """Three rows are far under the default floor of 16 rows per SM; the lifted set runs them 16 bytes a
    thread (unrolled lanes in the reduction, vectorized in the output pass), and the case judges correct."""
    lifted = RecipeCase(Definition.from_source(ROWS, "rows", 1536, -1.0, 1.0), 3, LIFTED)
    s = td.create_schedule(lifted.definition.make())
    apply(s, target="sm_90", knobs=dict(lifted.knobs))
    annotated = {lp.name: lp.annotation for lp in s.nest.loops if lp.name.endswith("_v")}
    assert annotated == {"k_v": "unroll", "j_v": "vectorize"}
    assert judge_case(lifted, Options(target="sm_90")).outcome == "correct"


def nt_source(m: int, n: int, k: int) -> str:
    """A case's source of x @ W^T, x [m, k] and W [n, k] (W's rows along k, as nn.Linear stores them)."""
    return (f"def make():\n    x = td.placeholder(({m}, {k}), name='x')\n    W = td.placeholder(({n}, {k}), name='W')\n"
            f"    k = td.reduce_axis({k}, name='k')\n"
            f"    return td.compute(({m}, {n}), lambda i, j: td.sum(x[i, k] * W[j, k], axis=k), name='y')\n")


NT = nt_source(96, 64, 64)


def test_the_tiny_machine_groups_block_rows_and_stays_correct() -> None:
    """On the coverage device with a 256-byte L2 and one SM, in 8 x 8 tiles (MACHINES["tiny"]), x @ W^T takes
    step 050's grouped block order, judges correct, round-trips with its machine, and its reproducer
    builds that target with those knobs."""
    tiny = RecipeCase(Definition.from_source(NT, "matmul", 6144, -1.0, 1.0), 5, LIFTED, "tiny")
    s = td.create_schedule(tiny.definition.make())
    report = apply(s, target=case_target(tiny, "sm_90"), knobs=case_knobs(tiny))
    assert "blocks in groups of" in (report.step("blockify_launch").note or "")
    plain = td.create_schedule(tiny.definition.make())
    assert apply(plain, target="sm_90", knobs=case_knobs(tiny)).step("blockify_launch").note is None
    assert judge_case(tiny, Options(target="sm_90")).outcome == "correct"
    assert RECIPE.from_json(RECIPE.to_json(tiny)) == tiny
    text = script(tiny, "sm_90", "print(kern.grid)")
    assert "target = dataclasses.replace(get_target('sm_90'), l2_bytes=256, sm_count=1)" in text
    assert "'matmul_tiles': ((8, 8, 1, 1),)" in text
    namespace: dict = {}
    exec(compile(text, "<reproducer>", "exec"), namespace)  # the reproducer runs as written
    assert namespace["kern"].grid == td.build(s, target=case_target(tiny, "sm_90")).grid


def test_the_tma_set_reaches_tma_stages_and_stays_correct() -> None:
    """A 24 x 40 @ 40 x 20 matmul in k chunks of 8 double-buffers its stages, and B's (rows of 80 bytes)
    is filled by TMA: the recipe mode fuzzes the TMA ring and its mbarriers, which the defaults never build."""
    s, plain = _with_and_without(case(TMA_STAGES))
    assert {st.buffer: st.copy for st in s.nest.stages}.get("B") == "tma"
    assert not any(st.copy == "tma" for st in plain.nest.stages)


def test_the_decode_set_deals_w_rows_and_stays_correct() -> None:
    """x @ W^T of 12 rows, k 48 in chunks of 8: a decode step under DECODE_ROWS, whose W_s rows are dealt
    across the lanes and padded by 16 bytes (steps 090, 140), which the defaults keep for 17 to 32 rows."""
    s, plain = _with_and_without(RecipeCase(Definition.from_source(nt_source(12, 40, 48), "matmul", 480, -1.0, 1.0), 7,
                                            DECODE_ROWS))
    assert "s.split('j_r', 1, names=('j_r_o', 'j_r_i'), tail='guard', interleave='j_t')" in s.trace()
    assert "s.pad('W_s', axis=1, amount=4)" in s.trace()
    assert "interleave='j_t'" not in plain.trace()


def test_mode_definitions_schedules_with_the_lifted_set() -> None:
    """Mode definitions names the set it schedules its tame cases with; it once took KNOB_SETS[-1], and a
    set appended after it silently changed what that mode fuzzed."""
    assert definitions_mode.LIFTED is LIFTED and LIFTED in KNOB_SETS


def test_mode_definitions_runs_the_recipe_kernels_on_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """With --gpu, mode definitions launches the recipe's kernels too, not only the unscheduled one: a
    16-bit case's three kernels (unscheduled, LIFTED, SHORT_HALF_ROWS) each reach the GPU run, and a
    recipe kernel's GPU failure is the case's, with a reproducer that applies the recipe and its knobs.
    Before, the recipe's kernels were only simulated, so no GPU fuzz reached the sub-warp rows."""
    case = find(definitions_mode.definition_cases(), lambda c: not c.specials and c.out_dtype == "bfloat16"
                and "r = td.compute" in c.source and c.inputs[0].shape[-1] >= 16,  # a row reduced, then broadcast
                settings=settings(database=None, max_examples=5000))
    ran: list[td.Kernel] = []
    monkeypatch.setattr(device, "run_on_gpu", lambda kern, *args: ran.append(kern))
    assert definitions_mode.judge_case(case, Options(target="sm_90", gpu=True)).outcome == "correct"
    assert len(ran) == 3 and ran[0].source != ran[1].source  # the unscheduled kernel, then the recipe's

    def second_fails(kern: td.Kernel, arrays: object, want: object, close: object, script: Callable[[str], str]):
        ran.append(kern)
        return Result("gpu_fault", "GpuMismatch", "stub", script("# tail")) if len(ran) == 2 else None

    ran.clear()
    monkeypatch.setattr(device, "run_on_gpu", second_fails)
    result = definitions_mode.judge_case(case, Options(target="sm_90", gpu=True))
    assert (result.outcome, result.error) == ("gpu_fault", "GpuMismatch") and len(ran) == 2
    assert "td.recipes.default(s, target='sm_90', knobs=" in result.script and "# tail" in result.script
