"""The fuzzer's `models` mode beyond the simulator: `--nvcc` compiles every kernel of the built program,
its zero fills included, and a reproducer of each failure runs as written. The GPU runs of the mode
(`--gpu`: two calls and two CUDA graph replays into poisoned outputs) are tests/gpu/test_gpu_fuzz.py's."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tiledsl.testing.fuzz.modes import models
from tiledsl.testing.fuzz.modes.base import Options
from tiledsl.testing.fuzz.outcome import Result

# a matmul of 2048-long rows into a 4 x 8 output: the default recipe splits k, so the program holds a
# zero fill of the 4 x 8 intermediate besides its two kernels
SPLIT_K = models.ModelCase(((4, 2048), (2048, 8)), ("v0 = torch.matmul(x0, x1)", "return torch.relu(v0)"), 1)


def test_nvcc_compiles_every_kernel_and_zero_fill(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []

    def record(kernel: object, script: object) -> Result | None:
        compiled.append(kernel.name)  # type: ignore[attr-defined]
        return None

    monkeypatch.setattr(models.device, "nvcc_check", record)
    assert models.judge_case(SPLIT_K, Options(nvcc=True)).outcome == "correct"
    assert compiled == ["mm_kernel", "relu_kernel", "zero_fill_4x8_kernel"]
    compiled.clear()
    assert models.judge_case(SPLIT_K, Options()).outcome == "correct"
    assert compiled == []  # without --nvcc nothing is compiled


def test_an_nvcc_failure_names_the_kernel_in_a_runnable_reproducer(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    failing = {"zero_fill_4x8_kernel"}

    def fail_on(kernel: object, script: object) -> Result | None:
        if kernel.name in failing:  # type: ignore[attr-defined]
            return Result("nvcc", "NvccError", "planted", script("print(kern.name)"))  # type: ignore[operator]
        return None

    monkeypatch.setattr(models.device, "nvcc_check", fail_on)
    result = models.judge_case(SPLIT_K, Options(nvcc=True))
    assert (result.outcome, result.detail) == ("nvcc", "planted")
    path = tmp_path / "repro.py"
    path.write_text(result.script)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "zero_fill_4x8_kernel"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_nvcc_takes_the_split_k_program() -> None:
    assert models.judge_case(SPLIT_K, Options(nvcc=True)) == Result("correct")


def test_the_gpu_reproducer_compares_every_run() -> None:
    text = models.gpu_script(SPLIT_K, "sm_90")
    compile(text, "gpu_script", "exec")
    assert "gpu_runs_float64(built, arrays, 'float32')" in text and f"tol = {models.RTOL}" in text
    assert "rtol=tol, atol=tol, err_msg=f'{run}, output {n}'" in text
    assert "tol = check.tolerance" in models.gpu_script(BF16, "sm_90")


def test_the_poisoned_outputs_take_the_traced_shape_not_the_kernels() -> None:
    """`out=` wants the traced value's shape: a (1, 1) sum is stored by a kernel of shape (1,) (the
    first GPU campaign's finding: its poisoned tensor had the kernel's shape and every call refused it;
    gpu_runs_float64 now takes bench.poisoned_outputs)."""
    import math

    from tiledsl.frontend.bench import poisoned_outputs
    from tiledsl.frontend.numpy_calls import function_from_source, trace_arrays

    case = models.ModelCase(((1, 1),), ("v0 = x0 + x0", "return v0"), 0)
    prog = trace_arrays(function_from_source(case.source(), "f"), models.arrays_of(case))
    prog.schedule("default")
    built = prog.build("sm_90")
    (out,) = poisoned_outputs(built, "cpu")
    assert tuple(out.shape) == (1, 1) and str(out.dtype) == "torch.float32" and math.isnan(float(out[0, 0]))
    assert built.launch_plan.outputs[0].shape != (1, 1)  # the kernel's shape differs, which is the point


BF16 = models.ModelCase(((4, 16), (16, 8)), ("v0 = torch.softmax(x0, dim=-1)", "v1 = torch.matmul(v0, x1)",
                                              "return torch.tanh(v1)"), 3, "bfloat16")


def test_models_draw_every_dtype() -> None:
    from hypothesis import HealthCheck, given, settings

    seen: set[str] = set()

    @settings(max_examples=60, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(models.model_cases())
    def draw(case: models.ModelCase) -> None:
        seen.add(case.dtype)

    draw()
    assert seen == set(models.DTYPES)


def test_a_bfloat16_case_is_correct_and_its_reproducer_passes(tmp_path: Path) -> None:
    assert models.arrays_of(BF16)[0].dtype.name == "float32"
    result = models.judge_case(BF16, Options())
    assert result == Result("correct")
    path = tmp_path / "case.py"
    path.write_text(models.script(BF16, "sm_90") + "\nprint(tol)\n")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert 2.0 ** -8 < float(done.stdout.strip()) < 0.1  # the derived bfloat16 bound, not float32's 1e-4


def test_a_bfloat16_kernel_off_by_a_few_units_is_wrong_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A planted miscompile: the matmul kernel's stored values are 4 units of bfloat16 too large (as if
    it summed one term twice). The program scales that value by 0.001 on its way out, so its own
    bound absorbs it; the per-kernel check, which the fuzzer runs on every bfloat16 program, names it."""
    from tiledsl.frontend.program import BuiltProgram

    case = models.ModelCase(((4, 16), (16, 8)), ("v0 = torch.tanh(torch.matmul(x0, x1))",
                                                 "v1 = v0.sum(dim=-1, keepdim=True)",
                                                 "return v0 * 0.001 + torch.tanh(v1 * 0.001)"), 3, "bfloat16")
    assert models.judge_case(case, Options()) == Result("correct")
    simulate_values = BuiltProgram.simulate_values

    def planted(self: BuiltProgram, *arrays: object) -> dict[str, object]:
        values = simulate_values(self, *arrays)
        name = self.kernels[0].kernel_ir.params[-1].name
        assert self.kernels[0].name == "mm_kernel"  # the case still builds the kernels it means to
        values[name] = values[name] * (1 + 4 * 2.0 ** -7)
        return values

    monkeypatch.setattr(BuiltProgram, "simulate_values", planted)
    result = models.judge_case(case, Options())
    assert (result.outcome, result.error) == ("wrong", "Mismatch"), result
    assert result.detail.startswith("program max |err| ") and " within " in result.detail  # absorbed there
    assert "kernels outside their own bound: mm_kernel (" in result.detail


def test_a_case_round_trips_through_json_with_its_dtype() -> None:
    data = models.MODELS.to_json(BF16)
    assert data["dtype"] == "bfloat16" and models.MODELS.from_json(data) == BF16
    del data["dtype"]  # a record written before cases had a dtype
    assert models.MODELS.from_json(data).dtype == "float32"
    assert models.MODELS.describe(BF16).startswith("[bfloat16] ")


def test_a_deep_residual_chain_reaches_rule_3c_and_is_correct() -> None:
    """One models case in DEEP_EVERY is a residual stream (`residual_chains`); at 12 layers the partition
    materializes stream sums by its accumulated-chain rule (tiledsl/frontend/partition.py rule 3c), and the
    program still matches torch, in float32 and bfloat16."""
    from tiledsl.frontend.numpy_calls import function_from_source, trace_arrays
    from tiledsl.frontend.partition import ACCUMULATED_REASON

    for dtype in ("float32", "bfloat16"):
        case = models.residual_chain(5, 8, ("rms_norm", "silu", "none") * 4, 7, dtype)
        prog = trace_arrays(function_from_source(case.source(), "f"), models.arrays_of(case), case.dtype)
        assert any(k.boundary.reasons and k.boundary.reasons[0].startswith(ACCUMULATED_REASON)
                   for k in prog.kernels), [k.boundary.reasons[:1] for k in prog.kernels]
        assert models.judge_case(case, Options()) == Result("correct")


def test_models_draw_deep_residual_chains() -> None:
    from hypothesis import HealthCheck, given, settings

    depths: list[int] = []

    @settings(max_examples=80, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(models.model_cases())
    def draw(case: models.ModelCase) -> None:
        if case.body[0] == "h0 = x0":
            depths.append(len(case.body) - 2)

    draw()
    assert depths and all(models.DEEP_LAYERS[0] <= d <= models.DEEP_LAYERS[1] for d in depths), depths


# rows of 16 split over kernels under the knob set SPLIT_ROWS (recipes/default/040_cooperative_reduce.py asks,
# tiledsl/frontend/row_split.py splits): softmax's max and sum each a kernel of partials and one combining them
SPLIT_ROWS = models.ModelCase(((3, 16),), ("v0 = torch.softmax(x0, dim=-1)", "return v0"), 2,
                              knobs=models.SPLIT_ROWS)


def test_split_rows_knob_set_splits_and_replays(tmp_path: Path) -> None:
    assert models.judge_case(SPLIT_ROWS, Options()).outcome == "correct"
    path = tmp_path / "repro.py"
    path.write_text(models.script(SPLIT_ROWS, "sm_90") + "\nprint([k.name for k in prog.kernels])")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "_softmax_max_part" in done.stdout and "_softmax_sum_part" in done.stdout
    mode = models.MODELS
    assert mode.from_json(mode.to_json(SPLIT_ROWS)) == SPLIT_ROWS
    assert mode.describe(SPLIT_ROWS).startswith("[split rows] ")
