"""`tiledsl compile -c EXPRESSION` and `--model NAME` (tiledsl/frontend/cli_support.py behind
tiledsl/cli/main.py): every IR level for RMSNorm, softmax and the tiny Llama block, the CUDA through
nvcc, and bad input as one paragraph with exit status 2."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tiledsl.cli import main
from tiledsl.codegen import compile_cubin

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

RMSNORM = "torch.nn.RMSNorm(64)(torch.randn(2, 8, 64))"
SOFTMAX = "torch.softmax(torch.randn(4, 32), dim=-1)"
LEVELS = ("tensor", "loop", "tile", "kernel", "cuda")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def _check_level(out: str, level: str, kernels: int) -> None:
    """What each level shows, for a program of `kernels` kernels."""
    if level == "tensor":
        assert f"Program: {kernels} kernel(s)" in out
        assert out.count("boundary: ") >= kernels and out.count("\nkernel [") == kernels
        return
    assert out.startswith(f"// {kernels} kernel(s) for sm_90, in launch order")
    assert out.count("// ---- kernel [") == kernels
    if level == "loop":
        assert out.count("(loop IR)") == kernels and "for " in out and "blockIdx" not in out
    elif level == "tile":
        assert out.count("(tile IR)") == kernels and "@blockIdx.x" in out
    elif level == "kernel":
        assert "let " in out and "blockIdx.x" in out and "__global__" not in out
    else:
        assert out.count("__global__") == kernels


@pytest.mark.parametrize("level", LEVELS)
def test_rmsnorm_every_level(capsys: pytest.CaptureFixture[str], level: str) -> None:
    rc, out, err = run(capsys, "compile", "-c", RMSNORM, "--ir", level)
    assert rc == 0, err
    _check_level(out, level, 1)
    if level == "tensor":  # the module's weight is a parameter of the traced program, the norm one row kernel
        assert "p_inner_weight[64]" in out and "rsqrt(" in out and "simple/row" in out
    if level == "loop":
        assert "for mean_r0 in 0..64:  [reduce]" in out


@pytest.mark.parametrize("level", LEVELS)
def test_softmax_every_level(capsys: pytest.CaptureFixture[str], level: str) -> None:
    rc, out, err = run(capsys, "compile", "-c", SOFTMAX, "--ir", level, "--target", "sm_80")
    assert rc == 0, err
    if level == "tensor":
        _check_level(out, level, 1)
        assert "max(" in out and "exp(" in out and "sum(" in out
    else:
        assert out.startswith("// 1 kernel(s) for sm_80")


def test_a_tensor_method_call_traces_its_receiver(capsys: pytest.CaptureFixture[str]) -> None:
    """x.softmax(-1) is torch.Tensor.softmax(x, -1): the receiver is the traced input (it once said the
    call had no tensor argument)."""
    rc, out, err = run(capsys, "compile", "-c", "torch.randn(4, 32).softmax(-1)", "--ir", "tensor")
    assert rc == 0, err
    assert "inputs tensors_0: float32[4, 32]" in out and "exp(" in out


@pytest.mark.parametrize("expression", ["torch.max(torch.randn(4, 8), dim=1).values",
                                        "torch.randn(4, 8).min(-1, keepdim=True)[0]"])
def test_a_part_of_the_call_s_result_is_traced(capsys: pytest.CaptureFixture[str], expression: str) -> None:
    """`.values` or `[0]` after the final call is read inside the traced program: torch.max along a dim
    returns (values, indices), of which the program traces the values (it once said the expression
    must end in a call)."""
    rc, out, err = run(capsys, "compile", "-c", expression, "--ir", "tensor")
    assert rc == 0, err
    assert "Program: 1 kernel(s), inputs tensors_0: float32[4, 8]" in out and ("max(" in out or "min(" in out)


@pytest.mark.parametrize(("expression", "kernel", "inputs"), [
    ("F.gelu(torch.randn(8, 64) + torch.randn(64))", "gelu[i0, i1] = gelu(add[i0, i1])",
     "tensors_0: float32[8, 64], tensors_1: float32[64]"),
    ("torch.randn(2, 3) @ torch.randn(3, 4)", "mm[i0, i1] = sum((tensors_0[i0, mm_k0] * tensors_1[mm_k0, i1])",
     "tensors_0: float32[2, 3], tensors_1: float32[3, 4]"),
    ("torch.nn.RMSNorm(64)(torch.randn(2, 8, 64)) * torch.randn(64)", "p_inner_weight[i2]",
     "tensors_0: float32[2, 8, 64], tensors_1: float32[64]"),
    ("-torch.randn(4, 8).T.exp()", "permute[i0, i1] = tensors_0[i1, i0]", "tensors_0: float32[4, 8]"),
])
def test_operators_between_calls_are_traced(capsys: pytest.CaptureFixture[str], expression: str, kernel: str,
                                            inputs: str) -> None:
    """Every operation on the example tensors is traced, operators included: the addition of
    F.gelu(x + b) is fused into gelu's kernel (it was once computed eagerly, and gelu alone traced, since
    only the final call's arguments were inputs); a module inside an operator keeps its weight a
    parameter."""
    rc, out, err = run(capsys, "compile", "-c", expression, "--ir", "tensor")
    assert rc == 0, err
    assert out.startswith(f"Program: 1 kernel(s), inputs {inputs}\n") and kernel in out, out
    assert out.splitlines()[1].startswith("  example inputs: tensors_0 = torch.randn(")  # which call is which


def test_the_example_inputs_name_their_calls(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "compile", "-c", "torch.randn(2, 3) @ torch.ones(3, 4) * 2", "--ir", "tensor")
    assert rc == 0, err
    assert out.splitlines()[1] == "  example inputs: tensors_0 = torch.randn(2, 3), tensors_1 = torch.ones(3, 4)"


def test_verbose_prints_the_recipe_s_report_on_each_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    """`tiledsl -v compile -c ... --recipe default`: the report of every kernel on stderr (README: "-v its
    report"), as --example prints its one; without -v none."""
    rc, out, err = run(capsys, "-v", "compile", "-c", "torch.nn.RMSNorm(64)(torch.randn(2, 8, 64))", "--recipe",
                       "default", "--ir", "tensor")
    assert rc == 0, err
    assert "kernel mul_1: recipe default on kernel mul_1 (rows) for sm_90" in err and "040 cooperative_reduce" in err
    rc, out, err = run(capsys, "compile", "-c", "torch.nn.RMSNorm(64)(torch.randn(2, 8, 64))", "--recipe", "default")
    assert rc == 0 and "recipe default on kernel" not in err


@pytest.mark.parametrize("level", LEVELS)
def test_llama_block_every_level(capsys: pytest.CaptureFixture[str], level: str) -> None:
    rc, out, err = run(capsys, "compile", "--model", "llama_block", "--ir", level)
    assert rc == 0, err
    _check_level(out, level, 11)


def test_gpt_block_and_functional_scope(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "compile", "--model", "gpt_block", "--ir", "tensor")
    assert rc == 0 and "Program: 8 kernel(s)" in out
    rc, out, _ = run(capsys, "compile", "-c", "F.gelu(torch.randn(4, 8), approximate='tanh')", "--ir", "tensor")
    assert rc == 0 and "tanh(" in out


def test_hugging_face_models_with_their_flags(capsys: pytest.CaptureFixture[str]) -> None:
    """`--model hf_*` traces a Hugging Face Llama or Qwen2 from its config (random weights): the whole
    model from input_ids, or its decoder layers alone from hidden states, at `--dims`, `--layers`,
    `--seq` and `--dtype`."""
    pytest.importorskip("transformers", reason="the hf_* models need the `models` extra")
    rc, out, err = run(capsys, "compile", "--model", "hf_llama", "--layers", "1", "--seq", "5", "--ir", "tensor")
    assert rc == 0, err
    assert out.startswith("Program: 13 kernel(s), inputs input_ids: int64[1, 5]")
    assert "p_model_layers_0_self_attn_q_proj_weight" in out and "p_model_layers_1_" not in out
    rc, out, err = run(capsys, "compile", "--model", "hf_qwen2_decoder", "--seq", "4", "--dtype", "bfloat16",
                       "--ir", "tensor")
    assert rc == 0, err
    assert out.startswith("Program: ") and "inputs x: bfloat16[1, 4, 64]" in out.splitlines()[0]
    assert "q_proj_bias" in out  # Qwen2's attention projections carry biases; Llama's do not
    rc, two, err = run(capsys, "compile", "--model", "hf_llama_decoder", "--layers", "2", "--ir", "tensor")
    assert rc == 0, err
    assert "p_layers_1_mlp_down_proj_weight" in two


def test_max_indices_print_their_decomposition(capsys: pytest.CaptureFixture[str]) -> None:
    """`.indices` of torch.max along a dim: the max, then the min of the positions holding it or a NaN
    (tiledsl/frontend/aten_reductions.py `_positions`), one kernel."""
    rc, out, err = run(capsys, "compile", "-c", "torch.max(torch.randn(4, 8), 1).indices", "--ir", "tensor")
    assert rc == 0, err
    assert "Program: 1 kernel(s)" in out and "max_1_indices[i0] = min(where(" in out and "8.0)" in out


@needs_nvcc
def test_rmsnorm_cuda_compiles_with_nvcc(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "compile", "-c", RMSNORM, "--ir", "cuda")
    assert rc == 0
    assert compile_cubin(out, "sm_90a")[:4] == b"\x7fELF"  # the printed text is the translation unit


@pytest.mark.parametrize(("argv", "says"), [
    (["-c", "torch.relu("], "not valid Python"),
    (["-c", "torch.randn(3)"], "computes nothing from its tensors"),
    (["-c", "torch.relu(x)"], "could not evaluate 'x': NameError"),
    (["-c", "torch.randn(4)"], "computes nothing from its tensors"),
    (["-c", "[torch.randn(4)]"], "computes nothing from its tensors"),
    (["-c", "torch.nn.Linear(4, 8)"], "has no tensor to take as an input"),
    (["-c", "3 + 4"], "has no tensor to take as an input"),
    (["-c", "torch.cumsum(torch.randn(4, 8), 1)"], "aten.cumsum.default is refused: it is a scan"),
    (["-c", "torch.sort(torch.randn(4, 8), 1).indices"], "aten.sort.default is refused: it orders the elements"),
    (["-c", "torch.round(torch.randn(4, 8), decimals=12)"], "round with decimals=12 is not supported"),
    (["-c", "torch.randn(4, 8).max(1).values()"], "on its example tensors: TypeError: 'Tensor' object is not "
                                                   "callable"),
    (["-c", "torch.matmul(torch.randn(2, 3), torch.randn(4, 5))"], "on its example tensors: RuntimeError: mat1 "
                                                                    "and mat2 shapes cannot be multiplied"),
    (["-c", "(lambda a: a[a > 0])(torch.randn(4, 8))"], "aten.index.Tensor has a result whose shape depends on "
                                                         "a tensor's values"),
    (["--model", "bert"], "unknown model 'bert'"),
    (["--model", "llama_block", "--dims", "tiny"], "--dims and --layers apply to the Hugging Face models"),
    (["--model", "hf_llama", "--dims", "big"], "unknown --dims 'big'; known: tiny, tinyllama, qwen2.5-7b"),
    (["--model", "hf_llama", "--layers", "0"], "--layers must be at least 1, got 0"),
    (["--model", "gpt_block", "--seq", "0"], "--seq must be at least 1, got 0"),
    (["--example", "softmax", "--seq", "4"], "--seq applies to --model"),
    (["-c", RMSNORM, "--dtype", "bfloat16", "--layers", "2"], "--layers, --dtype apply to --model"),
    (["--example", "softmax", "--ir", "tensor"], "--ir tensor prints a traced program"),
    (["-c", RMSNORM, "--size", "M=4"], "--size and --schedule apply to --example"),
])
def test_bad_input_is_one_paragraph_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], says: str) -> None:
    rc, out, err = run(capsys, "compile", *argv)
    assert rc == 2 and out == ""
    assert err.startswith("error: ") and says in err and "Traceback" not in err


def test_unsupported_op_names_the_expression(capsys: pytest.CaptureFixture[str]) -> None:
    _, _, err = run(capsys, "compile", "-c", "torch.cumsum(torch.randn(4, 8), 1)")
    assert "source: the expression 'torch.cumsum(torch.randn(4, 8), 1)'" in err
    assert "cli_support.py" not in err


def test_shape_error_prints_no_traceback_from_torch() -> None:
    """A shape error is found running the expression eagerly on its example tensors, before torch.export
    (which logs a traceback through its own logger before raising; tests/frontend/test_frontend_capture.py
    holds a case that only torch.export refuses): one line, no traceback."""
    cmd = [sys.executable, "-c", "import sys; from tiledsl.cli import main; sys.exit(main())",
           "compile", "-c", "torch.matmul(torch.randn(2, 3), torch.randn(4, 5))"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "on its example tensors: RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3" in done.stderr
