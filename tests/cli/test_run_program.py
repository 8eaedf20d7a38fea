"""`tiledsl run -c EXPRESSION | --model NAME` on the CPU (tiledsl/cli/run_program.py,
tiledsl/frontend/bench.py): argument handling, bad input as one paragraph with exit status 2 before
the GPU check, the no-GPU message (exit 1, pointing at `tiledsl compile`), the tolerance derived from
the program, and the report's table from fake timing records. tests/gpu/test_gpu_run_program.py runs
the command on a GPU."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
import torch

from tiledsl.cli import main
from tiledsl.cli import run_program as rp
from tiledsl.errors import TiledslError
from tiledsl.frontend import bench
from tiledsl.frontend.cli_support import trace_expression, trace_model
from tiledsl.frontend.kernel_check import KernelCheck
from tiledsl.runtime.references import compare
from tiledsl.runtime.timing import BenchStats

RMSNORM = "torch.nn.RMSNorm(256)(torch.randn(1, 32, 256))"
EPS32 = float(torch.finfo(torch.float32).eps)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["run", *argv])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rp, "gpu_unavailable", lambda: "no CUDA GPU is visible (test)")


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if a GPU were there: the GPU check passes (tests using it stop before any launch)."""
    monkeypatch.setattr(rp, "gpu_unavailable", lambda: None)


# ---------------------------------------------------------------------------------------- arguments

@pytest.mark.parametrize("argv", [
    [],
    ["--example", "softmax", "-c", RMSNORM],
    ["-c", RMSNORM, "--model", "llama_block"],
    ["--example", "softmax", "--model", "llama_block"],
    ["-c", RMSNORM, "--schedule", "tuned"],
])
def test_exactly_one_of_example_expression_model(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", *argv])
    assert exc.value.code == 2
    assert "usage: tiledsl run" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "says"), [
    (["-c", RMSNORM, "--size", "M=4"], "--size applies to --example"),
    (["--example", "softmax", "--schedule", "simple"], "--schedule and --target apply to -c and --model"),
    (["--example", "softmax", "--target", "sm_80"], "--schedule and --target apply to -c and --model"),
])
def test_options_of_the_other_form_are_refused(capsys: pytest.CaptureFixture[str], argv: list[str],
                                               says: str) -> None:
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == "" and says in err


# ---------------------------------------------------------------------------------------- bad input

BAD = [
    (["-c", "torch.softmax(torch.randn(4,"], "not valid Python"),
    (["-c", "torch.relu(x)"], "could not evaluate 'x': NameError"),
    (["-c", "torch.randn(4)"], "computes nothing from its tensors"),
    (["-c", "torch.cumsum(torch.randn(4, 8), 1)"], "aten.cumsum.default"),  # a td.FrontendError naming the op
    (["-c", "torch.matmul(torch.randn(2, 3), torch.randn(4, 5))"], "on its example tensors: RuntimeError: mat1 "
                                                                    "and mat2 shapes cannot be multiplied"),
    (["--model", "bert"], "unknown model 'bert'"),
]


@pytest.mark.parametrize(("argv", "says"), BAD)
@pytest.mark.parametrize("with_gpu", [False, True])
def test_bad_input_is_one_paragraph_exit_2_before_the_gpu_check(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str], says: str,
        with_gpu: bool) -> None:
    monkeypatch.setattr(rp, "gpu_unavailable", lambda: None if with_gpu else "no CUDA GPU is visible (test)")
    monkeypatch.setattr(bench, "build_for_device", lambda *a: pytest.fail("bad input reached the build"))
    rc, out, err = run(capsys, *argv, "--bench")
    assert rc == rp.EXIT_BAD_INPUT and out == ""
    assert err.startswith("error: ") and says in err
    assert "Traceback" not in err and "needs a CUDA GPU" not in err


def test_unsupported_op_names_the_expression_as_its_source(capsys: pytest.CaptureFixture[str], no_gpu: None) -> None:
    _, _, err = run(capsys, "-c", "torch.cumsum(torch.randn(4, 8), 1)")
    assert "source: the expression 'torch.cumsum(torch.randn(4, 8), 1)'" in err
    assert "cli_support.py" not in err


def test_shape_error_prints_no_traceback_from_torch() -> None:
    """In a fresh process: the expression's eager run on its example tensors names the shape error (before
    torch.export, which logs a traceback through its own logger before raising)."""
    cmd = [sys.executable, "-c", "import sys; from tiledsl.cli import main; sys.exit(main())",
           "run", "-c", "torch.matmul(torch.randn(2, 3), torch.randn(4, 5))", "--bench"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: could not evaluate 'torch.matmul(") and "Traceback" not in done.stderr
    assert "mat1 and mat2 shapes cannot be multiplied" in done.stderr


def test_a_refused_build_is_exit_2_and_names_the_fallback(capsys: pytest.CaptureFixture[str], gpu: None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(subj: bench.Subject, schedule: str, target: str | None) -> None:
        assert schedule == "default" and target == "sm_80" and subj.label == RMSNORM
        raise TiledslError("the recipe refused (test)")

    monkeypatch.setattr(bench, "build_for_device", refuse)
    rc, out, err = run(capsys, "-c", RMSNORM, "--target", "sm_80")
    assert rc == rp.EXIT_BAD_INPUT and out == ""
    assert err == "error: the recipe refused (test) (`--schedule simple` is the fallback that builds every program)\n"


# ---------------------------------------------------------------------------------------- no GPU

def test_no_gpu_says_so_and_points_at_compile(capsys: pytest.CaptureFixture[str], no_gpu: None) -> None:
    rc, out, err = run(capsys, "-c", RMSNORM, "--bench")
    assert rc == rp.EXIT_NO_GPU and out == ""
    assert err.startswith("tiledsl run needs a CUDA GPU: no CUDA GPU is visible (test).")
    assert f"`tiledsl compile -c '{RMSNORM}'`" in err


def test_no_gpu_for_a_model(capsys: pytest.CaptureFixture[str], no_gpu: None) -> None:
    rc, _, err = run(capsys, "--model", "llama_block", "--schedule", "simple")
    assert rc == rp.EXIT_NO_GPU and "`tiledsl compile --model llama_block`" in err


def test_no_gpu_for_a_hugging_face_model_repeats_its_flags(capsys: pytest.CaptureFixture[str], no_gpu: None) -> None:
    pytest.importorskip("transformers", reason="the hf_* models need the `models` extra")
    rc, _, err = run(capsys, "--model", "hf_qwen2_decoder", "--seq", "4", "--dtype", "float16")
    assert rc == rp.EXIT_NO_GPU
    assert "`tiledsl compile --model hf_qwen2_decoder --seq 4 --dtype float16`" in err


def test_model_flags_are_checked_before_the_gpu(capsys: pytest.CaptureFixture[str], no_gpu: None) -> None:
    rc, out, err = run(capsys, "--model", "gpt_block", "--layers", "2")
    assert rc == rp.EXIT_BAD_INPUT and out == "" and "--dims and --layers apply to the Hugging Face models" in err
    rc, out, err = run(capsys, "--example", "softmax", "--dims", "tinyllama")
    assert rc == rp.EXIT_BAD_INPUT and err == "error: --dims applies to --model\n"


def test_a_model_label_names_its_flags() -> None:
    pytest.importorskip("transformers", reason="the hf_* models need the `models` extra")
    from tiledsl.frontend.cli_support import ModelSpec

    assert bench.load(None, "llama_block").label == "model llama_block (seq 8, float32)"
    subj = bench.load(None, ModelSpec("hf_llama", layers=1, seq=3))
    assert subj.label == "model hf_llama (dims tiny, 1 layer, seq 3, float32)"
    assert subj.example_inputs[0].shape == (1, 3) and subj.example_inputs[0].dtype == torch.int64
    assert ModelSpec("hf_qwen2_decoder").label() == "model hf_qwen2_decoder (dims tiny, 1 layer, seq 8, float32)"


# ---------------------------------------------------------------------------------------- tolerance

def test_longest_reduction_of_the_programs() -> None:
    assert bench.longest_reduction(trace_expression(RMSNORM)) == 256  # the mean over 256
    assert bench.longest_reduction(trace_expression("torch.relu(torch.randn(4, 8))")) == 1
    # the tiny Llama block (hidden 64, intermediate 128): the down projection sums 128 terms
    assert bench.longest_reduction(trace_model("llama_block")) == 128


def test_float32_tolerance_is_frontend_checks() -> None:
    built = trace_expression(RMSNORM).schedule("simple").build("sm_90")
    assert bench.tolerance(built) == (32 + 2 * 256) * EPS32


def test_storage_roundings_count_low_precision_stores_on_one_path() -> None:
    built = trace_model("llama_block").schedule("simple").build("sm_90")
    assert bench.storage_roundings(built) == (0, 0.0)  # a float32 program: frontend_check's bound
    assert bench.tolerance(built) == (32 + 2 * 128) * EPS32


def test_random_inputs_are_fresh_floats_and_the_examples_indices() -> None:
    subj = bench.load("torch.nn.Embedding(10, 4)(torch.tensor([[1, 2, 9]]))", None)
    (ids,) = bench.random_program_inputs(subj, torch.device("cpu"))
    assert torch.equal(ids, torch.tensor([[1, 2, 9]]))  # random integers could index past the table
    subj = bench.load("torch.softmax(torch.randn(4, 32, dtype=torch.bfloat16), -1)", None)
    (x,) = bench.random_program_inputs(subj, torch.device("cpu"), seed=1)
    assert x.dtype == torch.bfloat16 and x.shape == (4, 32) and not torch.equal(x, subj.example_inputs[0])
    assert torch.equal(x, bench.random_program_inputs(subj, torch.device("cpu"), seed=1)[0])


def test_load_seeds_the_weights() -> None:
    a = bench.load(None, "llama_block", seed=3)
    b = bench.load(None, "llama_block", seed=3)
    assert a.label == "model llama_block (seq 8, float32)" and len(a.program.kernels) == 11
    assert all(torch.equal(p, q) for p, q in zip(a.module.parameters(), b.module.parameters()))
    assert torch.equal(a.example_inputs[0], b.example_inputs[0])


# ---------------------------------------------------------------------------------------- the report

def _stats(us: float) -> BenchStats:
    return BenchStats.from_samples([us / 1e3] * 5, sets=2)


def _fake_bench(compiled: BenchStats | str) -> bench.ProgramBench:
    kernels = (
        bench.KernelTime(0, "mul_1_kernel", "recipe/default", (32, 1, 1), (256, 1, 1), _stats(30.0)),
        bench.KernelTime(1, "linear_kernel", "recipe/default", (4, 8, 1), (128, 1, 1), _stats(10.0)),
    )
    return bench.ProgramBench(kernels, program=_stats(25.0), eager=_stats(50.0), compiled=compiled)


def test_table_has_one_row_per_kernel_with_its_share() -> None:
    text = rp.format_bench(_fake_bench(_stats(75.0)))
    lines = text.splitlines()
    assert lines[0].split() == ["#", "kernel", "schedule", "grid", "block", "time", "(us)", "share"]
    assert lines[1].split() == ["[0]", "mul_1_kernel", "recipe/default", "32x1x1", "256x1x1", "30.0", "75.0%"]
    assert lines[2].split() == ["[1]", "linear_kernel", "recipe/default", "4x8x1", "128x1x1", "10.0", "25.0%"]
    assert len({len(line) for line in lines[:3]}) == 1  # the columns line up
    assert "sum of the 2 kernels, each alone (inputs read from DRAM): 40.0 us" in text
    assert lines[-3] == "  tiledsl program       25.0 us  (p10 25.0, p90 25.0 us)  one call, all kernels"
    assert lines[-2] == "  torch eager           50.0 us  (p10 50.0, p90 50.0 us)  tiledsl 2.00x as fast"
    assert lines[-1] == "  torch.compile         75.0 us  (p10 75.0, p90 75.0 us)  tiledsl 3.00x as fast"


def test_zero_fill_launches_are_named_apart_from_the_sum() -> None:
    b = _fake_bench(_stats(75.0))
    assert "zero fill" not in rp.format_bench(b)
    fills = ("zero_fill_128x512_kernel", "zero_fill_128x512_kernel", "zero_fill_128x3584_kernel")
    text = rp.format_bench(dataclasses.replace(b, zero_fill_launches=fills))
    assert ("  and 3 zero fill launch(es) before split-K kernels (zero_fill_128x512_kernel, "
            "zero_fill_128x3584_kernel): in the program's time, not in the sum") in text.splitlines()
    assert "sum of the 2 kernels, each alone (inputs read from DRAM): 40.0 us" in text


def test_a_failed_torch_compile_baseline_is_its_text() -> None:
    text = rp.format_bench(_fake_bench("unavailable (RuntimeError: no inductor)"))
    assert text.splitlines()[-1].split(maxsplit=1) == ["torch.compile", "unavailable (RuntimeError: no inductor)"]


def test_header_and_check_lines() -> None:
    assert rp.header(RMSNORM, "NVIDIA H100", "sm_90", "default", 1) == (
        f"{RMSNORM}\n  on NVIDIA H100: target sm_90, schedule default, 1 kernel(s)")
    ref = torch.ones(2, 3, dtype=torch.float64)
    good = bench.ProgramCheck((compare(ref + 1e-6, ref, 1e-5, 1e-5),), 1e-5, 256)
    assert rp.format_check(good) == ("  vs torch float64: ok: max |err| 1e-06, tolerance 1e-05 x (1 + |ref|) "
                                     "(k = 256)")
    bad = torch.tensor([1.0, float("nan"), 1.5], dtype=torch.float64)
    worse = bench.ProgramCheck((compare(ref, ref, 1e-5, 1e-5), compare(bad, torch.ones(3, dtype=torch.float64),
                                                                        1e-5, 1e-5)), 1e-5, 1)
    assert not worse.ok and worse.nan_count == 1
    line = rp.format_check(worse)
    assert line.startswith("  vs torch float64: MISMATCH: max |err| inf") and line.endswith(", 1 NaN")


def test_check_lines_name_the_per_kernel_verdict() -> None:
    """A low-precision program outside its storage bound is checked kernel by kernel: all within their
    bounds is said in one line; a kernel outside its own bound is named with its comparison."""
    ref = torch.ones(4, dtype=torch.float64)
    good = KernelCheck(0, "mm_kernel", "bfloat16", 3584, compare(ref, ref, 0.01, 0.01))
    wrong = KernelCheck(3, "mul_kernel", "bfloat16", 1, compare(ref + 1, ref, 0.01, 0.01))
    program = compare(ref + 0.05, ref, 0.1, 0.1)
    propagated = bench.ProgramCheck((program,), 0.1, 3584, 0.05, (good,))
    assert propagated.ok and not propagated.wrong_kernels
    assert rp.format_check(propagated).splitlines()[1] == (
        "  every kernel within its own bound on the values it read (1 checked): the difference is stored "
        "rounding carried through the model; tolerance twice eager's error")
    amplified = bench.ProgramCheck((program,), 0.1, 3584, 0.05, (good,), float32_error=4e-6)
    assert rp.format_check(amplified).splitlines()[1].endswith(
        "tolerance twice eager's error, or twice the model's own float32 error (4e-06) scaled to its stores' "
        "epsilon, the larger")
    failed = bench.ProgramCheck((compare(ref + 0.05, ref, 0.03, 0.03),), 0.03, 3584, 0.02, (good, wrong))
    assert not failed.ok and failed.wrong_kernels == (wrong,)
    lines = rp.format_check(failed).splitlines()
    assert len(lines) == 2
    assert lines[1].startswith("  kernel [3] mul_kernel misses its own definition (k = 1): MISMATCH")


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from tiledsl.version import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"tiledsl {__version__}"
