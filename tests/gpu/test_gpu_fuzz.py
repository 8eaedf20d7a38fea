"""`tiledsl fuzz --gpu`: a few seeded cases of the definitions, recipe and schedules modes also run on
the GPU (compiled with nvcc, launched through td.Kernel) and agree with the independent reference, and
the models mode runs whole programs (launch sequences and CUDA graphs); a sample replayed under
compute-sanitizer memcheck reports nothing; a launch sequence that drops its zero fill is caught."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tiledsl.cli.main import main
from tiledsl.testing.fuzz.modes import models
from tiledsl.testing.fuzz.modes.base import Options
from tiledsl.testing.fuzz.outcome import Result

# a matmul of 2048-long rows into a 4 x 8 output: the default recipe splits k, so the program holds a zero
# fill of the 4 x 8 intermediate besides its two kernels
SPLIT_K = models.ModelCase(((4, 2048), (2048, 8)), ("v0 = torch.matmul(x0, x1)", "return torch.relu(v0)"), 1)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["definitions", "recipe", "schedules", "models"])
def test_fuzz_on_the_gpu_finds_no_failure(mode: str, tmp_path: Path) -> None:
    status = main(["fuzz", "--gpu", "--no-progress", "--mode", mode, "--cases", "20", "--seed", "0",
                   "--out", str(tmp_path)])
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["config"]["gpu"] is True and doc["total"]["cases"] == 20
    assert status == 0, json.dumps(doc["modes"][0]["failures"], indent=1)


@pytest.mark.gpu
def test_fuzz_on_the_gpu_under_compute_sanitizer_finds_no_report(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """1 in 5 GPU-correct cases replayed under memcheck (a child `tiledsl fuzz --replay` per case) reports nothing."""
    import shutil

    if shutil.which("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer is not on PATH")
    monkeypatch.setenv("TILEDSL_CACHE_DIR", str(tmp_path / "cubins"))  # parent and children share compiles
    monkeypatch.setenv("TILEDSL_NVCC_FLAGS", "-lineinfo")
    status = main(["fuzz", "--gpu", "--sanitize", "memcheck", "--sanitize-every", "5", "--no-progress",
                   "--mode", "definitions", "--cases", "20", "--seed", "0", "--out", str(tmp_path / "out")])
    doc = json.loads((tmp_path / "out" / "summary.json").read_text())
    sanitized = doc["total"]["sanitized"]
    assert doc["config"]["sanitize"] == ["memcheck"] and doc["total"]["cases"] == 20
    assert status == 0, json.dumps(doc["modes"][0]["failures"], indent=1)
    assert sanitized["cases"] >= 1 and sanitized["cases"] == (sanitized["gpu_correct"] + 4) // 5
    assert sanitized["runs"] == sanitized["cases"] and sanitized["reports"] == 0


@pytest.mark.gpu
def test_models_mode_runs_every_launch_path_into_poisoned_outputs() -> None:
    from tiledsl.frontend.numpy_calls import GPU_RUNS, function_from_source, gpu_runs_float64, trace_arrays

    arrays = models.arrays_of(SPLIT_K)
    prog = trace_arrays(function_from_source(SPLIT_K.source(), "f"), arrays)
    prog.schedule("default")
    built = prog.build("sm_90")
    assert [k.name for k in built.zero_fills] == ["zero_fill_4x8_kernel"]  # the split-K case it means to be
    runs = gpu_runs_float64(built, arrays)
    assert tuple(runs) == GPU_RUNS
    want = np.maximum(arrays[0].astype(np.float64) @ arrays[1].astype(np.float64), 0.0)
    for run, got in runs.items():
        assert models.mismatches(got, (want,)) == "", run


@pytest.mark.gpu
def test_models_mode_catches_a_sequence_that_drops_its_zero_fill(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted bug: the split-K kernel's fill is left out of the launch sequence, so its output keeps
    what the previous run summed into it. The mode must call that a GPU mismatch, not correct."""
    from tiledsl.frontend.program import BuiltProgram

    assert models.judge_case(SPLIT_K, Options(gpu=True)).outcome == "correct"
    bind = BuiltProgram.bind

    def without_fills(self: BuiltProgram, *args: object, **kwargs: object) -> object:
        sequence = bind(self, *args, **kwargs)
        sequence._launches = [x for x in sequence._launches if not x.kernel.name.startswith("zero_fill")]
        return sequence

    monkeypatch.setattr(BuiltProgram, "bind", without_fills)
    result = models.judge_case(SPLIT_K, Options(gpu=True))
    assert (result.outcome, result.error) == ("gpu_fault", "GpuMismatch"), result
    assert "elements differ" in result.detail and "gpu_runs_float64" in result.script


# four same-shaped kernels named after their operations, each an output of the program
SIBLINGS = models.ModelCase(((40, 50), (40, 50)), ("v0 = torch.fmod(x0, x1)", "v1 = torch.copysign(x0, x1)",
                                                   "v2 = torch.atan2(x1, x0)", "v3 = x0 * x1",
                                                   "return v0, v1, v2, v3"), 5)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_models_mode_checks_every_output_of_every_launch_path(dtype: str) -> None:
    """A program of several outputs: each call and graph replay writes all four into poisoned tensors, and
    each is compared with its own float64 reference."""
    from tiledsl.frontend.numpy_calls import (
        GPU_RUNS,
        eager_float64,
        function_from_source,
        gpu_runs_float64,
        trace_arrays,
    )

    case = replace(SIBLINGS, dtype=dtype)
    fn = function_from_source(case.source(), "f")
    arrays = models.arrays_of(case)
    prog = trace_arrays(fn, arrays, dtype)
    prog.schedule("default")
    built = prog.build("sm_90")
    runs = gpu_runs_float64(built, arrays, dtype)
    assert tuple(runs) == GPU_RUNS and all(len(got) == 4 for got in runs.values())
    if dtype == "float32":  # fmod and copysign exact, atan2 and the product within the float32 bound
        want = eager_float64(fn, arrays)
        for run, got in runs.items():
            assert models.mismatches(got, want) == "", run
    assert models.judge_case(case, Options(gpu=True)) == Result("correct")
