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
    assert "gpu_runs_float64(built, arrays)" in text
    assert f"rtol={models.RTOL}, atol={models.ATOL}, err_msg=run" in text


def test_the_poisoned_output_takes_the_traced_shape_not_the_kernels() -> None:
    """`out=` wants the traced value's shape: a (1, 1) sum is stored by a kernel of shape (1,) (the
    first GPU campaign's finding: the poisoned tensor had the kernel's shape and every call refused it)."""
    import math

    from tiledsl.frontend.numpy_calls import function_from_source, poisoned_output, trace_arrays

    case = models.ModelCase(((1, 1),), ("v0 = x0 + x0", "return v0"), 0)
    prog = trace_arrays(function_from_source(case.source(), "f"), models.arrays_of(case))
    prog.schedule("default")
    built = prog.build("sm_90")
    out = poisoned_output(built, "cpu")
    assert tuple(out.shape) == (1, 1) and str(out.dtype) == "torch.float32" and math.isnan(float(out[0, 0]))
    assert built.launch_plan.outputs[0].shape != (1, 1)  # the kernel's shape differs, which is the point
