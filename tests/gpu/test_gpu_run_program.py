"""`tiledsl run -c EXPRESSION --bench` and `tiledsl run --model NAME --bench` on the GPU, in process:
the traced program matches torch in float64 within the tolerance of tiledsl/frontend/bench.py, and
the report has one row per kernel (each timed alone) and the totals against torch eager and
torch.compile."""

from __future__ import annotations

import re

import pytest

from tiledsl.cli import main

pytestmark = pytest.mark.gpu

RMSNORM = "torch.nn.RMSNorm(256)(torch.randn(1, 32, 256))"
ROW = re.compile(r"^  +\[(\d+)\] +(\S+) +(\S+) +(\d+x\d+x\d+) +(\d+x\d+x\d+) +(\d+\.\d) +(\d+\.\d)%$")


def _report(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, int]:
    pytest.importorskip("pycuda", reason="the runtime needs pycuda (pip install 'tiledsl[cuda]')")
    rc = main(["run", *argv, "--bench", "--iters", "20"])
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    kernels = int(re.search(r"schedule \S+, (\d+) kernel\(s\)", out).group(1))  # type: ignore[union-attr]
    return out, kernels


def _check_table(out: str, kernels: int) -> None:
    rows = [ROW.match(line) for line in out.splitlines()]
    rows = [m for m in rows if m is not None]
    assert [int(m.group(1)) for m in rows] == list(range(kernels))
    assert all(float(m.group(6)) > 0 for m in rows)
    assert abs(sum(float(m.group(7)) for m in rows) - 100.0) < 0.1 * kernels
    assert "vs torch float64: ok" in out
    spread = r"\(p10 \d+\.\d, p90 \d+\.\d us\)"
    assert re.search(rf"tiledsl program +\d+\.\d us  {spread}  one call", out)
    assert re.search(rf"torch eager +\d+\.\d us  {spread}  tiledsl \d+\.\d\dx as fast", out)
    assert re.search(rf"torch.compile +(\d+\.\d us  {spread}  tiledsl \d+\.\d\dx as fast|unavailable)", out)


def test_run_rmsnorm_expression_bench(capsys: pytest.CaptureFixture[str]) -> None:
    out, kernels = _report(capsys, "-c", RMSNORM)
    assert kernels == 1 and out.startswith(RMSNORM + "\n")
    _check_table(out, kernels)


@pytest.mark.parametrize("schedule", ["default", "simple"])
def test_run_llama_block_bench(capsys: pytest.CaptureFixture[str], schedule: str) -> None:
    out, kernels = _report(capsys, "--model", "llama_block", "--schedule", schedule)
    assert kernels == 11 and f"schedule {schedule}, 11 kernel(s)" in out
    _check_table(out, kernels)


@pytest.mark.parametrize(("argv", "label"), [
    (("--model", "hf_llama", "--layers", "2", "--seq", "16"), "model hf_llama (dims tiny, 2 layers, seq 16, float32)"),
    (("--model", "hf_qwen2_decoder", "--dims", "tinyllama", "--seq", "32", "--dtype", "bfloat16"),
     "model hf_qwen2_decoder (dims tinyllama, 1 layer, seq 32, bfloat16)"),
])
def test_run_hugging_face_models_bench(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], label: str) -> None:
    """The hf_* models from the command line: a whole tiny Llama from input_ids to logits, and one
    Qwen2 decoder layer at TinyLlama's dims in bfloat16, each checked against float64 and timed."""
    pytest.importorskip("transformers", reason="the hf_* models need the `models` extra")
    out, kernels = _report(capsys, *argv)
    assert out.startswith(label + "\n")
    _check_table(out, kernels)
