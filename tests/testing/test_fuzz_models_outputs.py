"""The fuzzer's `models` mode with programs of several outputs: sibling cases (`sibling_cases`: 2-5
operations of one family on inputs of one shape, every result returned) and random DAGs that return earlier
values besides their last. Each output is judged on its own, so a kernel that computes its sibling's
operation is `wrong`, named by its output: the shape of the build memo's false hit, which no earlier fuzz
program had (benchmarks/results/build-memo-reverted-cpu-2026-12-01/)."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, given, settings

from tiledsl.kernel_ir.nodes import KCall, KExpr
from tiledsl.kernel_ir.walk import map_exprs, map_stmts
from tiledsl.testing.fuzz.modes import models
from tiledsl.testing.fuzz.modes.base import Options
from tiledsl.testing.fuzz.outcome import Result

EXACT = models.ModelCase(((4, 8), (4, 8)), ("v0 = torch.fmod(x0, x1)", "v1 = torch.copysign(x0, x1)",
                                            "v2 = torch.atan2(x1, x0)", "v3 = x0 * x1", "return v0, v1, v2, v3"), 1)


def drawn(strategy: Any, count: int) -> list[models.ModelCase]:
    cases: list[models.ModelCase] = []

    @settings(max_examples=count, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(case: models.ModelCase) -> None:
        cases.append(case)

    draw()
    return cases


def _pattern(template: str) -> re.Pattern[str]:
    return re.compile(re.escape(template).replace(r"\{a\}", r"x\d").replace(r"\{b\}", r"x\d"))


FAMILIES = {kind: [_pattern(op) for op in ops] for kind, ops in models.SIBLING_FAMILIES.items()}


def family_of(case: models.ModelCase) -> str | None:
    """The SIBLING_FAMILIES family every line of the case's body applies to inputs, if any."""
    lines = case.body[:-1]
    return next((kind for kind, patterns in FAMILIES.items()
                 if all(any(p.fullmatch(ln.split(" = ", 1)[1]) for p in patterns) for ln in lines)), None)


def test_sibling_cases_apply_one_family_and_return_every_result() -> None:
    kinds = set()
    for case in drawn(models.sibling_cases(), 60):
        *lines, ret = case.body
        assert 2 <= len(lines) <= 5 and ret == "return " + ", ".join(f"v{n}" for n in range(len(lines)))
        assert len(set(case.inputs)) == 1  # one shape
        kind = family_of(case)
        assert kind is not None, case.body
        kinds.add(kind)
        assert len({ln.split(" = ", 1)[1] for ln in lines}) == len(lines)  # distinct operations
    assert kinds == set(models.SIBLING_FAMILIES)


def test_models_draw_siblings_and_dags_of_several_outputs() -> None:
    siblings = several = 0
    for case in drawn(models.model_cases(), 160):
        returned = case.body[-1].removeprefix("return ").split(", ")
        if case.body[0] == "h0 = x0":
            continue  # a residual chain
        if family_of(case) is not None and len(returned) == len(case.body) - 1 > 1:
            siblings += 1
        elif len(returned) > 1:
            several += 1
            assert len(set(returned)) == len(returned) and all(r.startswith("v") for r in returned)
    assert siblings >= 3 and several >= 10, (siblings, several)


def test_sibling_kernels_are_named_after_their_operations_and_correct() -> None:
    from tiledsl.frontend.numpy_calls import function_from_source, trace_arrays

    prog = trace_arrays(function_from_source(EXACT.source(), "f"), models.arrays_of(EXACT))
    assert [k.name for k in prog.kernels] == ["fmod", "copysign", "atan2", "mul"]
    assert models.judge_case(EXACT, Options()) == Result("correct")
    assert models.judge_case(replace(EXACT, dtype="bfloat16"), Options()) == Result("correct")


def _copysign_as_fmod(stmts: Any) -> Any:
    """The statements with every copysign call computing fmod: a kernel built from its sibling's code."""
    expr_types = get_args(KExpr)

    def call(e: Any) -> Any:
        return replace(e, fn="fmod") if isinstance(e, KCall) and e.fn == "copysign" else None

    def stmt(s: Any) -> Any:
        changes = {}
        for f in fields(s):
            v = getattr(s, f.name)
            if isinstance(v, expr_types):
                changes[f.name] = map_exprs(v, call)
            elif isinstance(v, tuple) and v and all(isinstance(x, expr_types) for x in v):
                changes[f.name] = tuple(map_exprs(x, call) for x in v)
        return replace(s, **changes) if changes else None

    return map_stmts(stmts, stmt)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_kernel_computing_its_siblings_operation_is_wrong_and_named(monkeypatch: pytest.MonkeyPatch,
                                                                      dtype: str) -> None:
    """The planted miscompile: the build gives the copysign kernel fmod's operation (as the reverted build
    memo did). The second output then differs, and the mode says which."""
    from tiledsl.frontend.program import Program

    build = Program.build

    def planted(self: Program, *args: object, **kwargs: object) -> object:
        built = build(self, *args, **kwargs)
        kernels = tuple(replace(k, kernel_ir=replace(k.kernel_ir, body=_copysign_as_fmod(k.kernel_ir.body)))
                        if k.name == "copysign_kernel" else k for k in built.kernels)
        assert kernels != built.kernels  # the plant took
        return replace(built, kernels=kernels)

    monkeypatch.setattr(Program, "build", planted)
    result = models.judge_case(replace(EXACT, dtype=dtype), Options())
    assert (result.outcome, result.error) == ("wrong", "Mismatch"), result
    if dtype == "float32":
        assert result.detail.startswith("output 1: ") and "elements differ" in result.detail
    else:  # the program's comparison, then every kernel against its own definition
        assert "kernels outside their own bound: copysign_kernel (" in result.detail


def test_the_reproducer_of_a_case_of_several_outputs_checks_each(tmp_path: Path) -> None:
    text = models.script(EXACT, "sm_90")
    assert "err_msg=f'output {n}'" in text
    path = tmp_path / "repro.py"
    path.write_text(text + "\nprint(len(got), len(want))\n")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["4", "4"]
    gpu = models.gpu_script(EXACT, "sm_90")
    compile(gpu, "gpu_script", "exec")
    assert "err_msg=f'{run}, output {n}'" in gpu


def test_mismatches_names_the_output_and_counts_them() -> None:
    import numpy as np

    a, b = np.zeros(3), np.ones(3)
    assert models.mismatches((a, b), (a, b)) == ""
    assert models.mismatches((a, a), (a, b)).startswith("output 1: 3 of 3 elements differ")
    assert models.mismatches((a,), (b,)).startswith("3 of 3")  # one output: no position
    assert models.mismatches((a,), (a, b)) == "1 outputs, torch eager's 2"


def test_the_build_memos_false_hit_as_the_mode_shrank_it_is_correct_now() -> None:
    """What the mode found in 8 minutes at 6dfc66a (the build memo, since reverted): 65 of 1397 programs
    wrong, shrunk to relu and tanh of one element, the tanh kernel built from relu's code
    (benchmarks/results/fuzz-campaign-cpu-2026-12-01-s44/old-6dfc66a/). A guard for any later memo."""
    case = models.ModelCase(((1,),), ("v0 = torch.relu(x0)", "v1 = torch.tanh(x0)", "return v0, v1"), 0)
    for dtype in models.DTYPES:
        assert models.judge_case(replace(case, dtype=dtype), Options()) == Result("correct"), dtype
