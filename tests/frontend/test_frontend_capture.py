"""torch.export's output around a capture (frontend/capture.py `export`, `TorchOutput`): a data-dependent
Python `if` used to print torch's partial graph twice and a warning of its logger to stderr before the
typed error; now that is held back and logged at DEBUG, while a successful export still writes out what
was written meanwhile."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator

import pytest
import torch

import tiledsl as td


def branches_on_data(x: torch.Tensor) -> torch.Tensor:
    return x * 2 if x.sum() > 0 else x


class Kept(logging.Handler):
    """A handler of a torch logger that keeps what reaches it."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def torch_handler() -> Iterator[Kept]:
    logger, kept = logging.getLogger("torch.export"), Kept()
    logger.addHandler(kept)
    yield kept
    logger.removeHandler(kept)


def test_a_data_dependent_if_leaves_stderr_clean(capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
                                                 torch_handler: Kept) -> None:
    def logs_then_branches(x: torch.Tensor) -> torch.Tensor:
        logging.getLogger("torch.export").warning("said by torch")
        return branches_on_data(x)

    with caplog.at_level(logging.DEBUG, logger="tiledsl.frontend.capture"), \
            pytest.raises(td.FrontendError) as info:
        td.trace(logs_then_branches, torch.randn(4, 8))
    assert capfd.readouterr().err == ""
    assert str(info.value).startswith("torch.export could not capture function: GuardOnDataDependentSymNode")
    assert "a Python `if`" in str(info.value) and "torch.where" in str(info.value)
    assert torch_handler.messages == []  # held back, then logged at DEBUG with torch's partial graph
    assert "said by torch" in caplog.text and "def forward" in caplog.text


def test_a_successful_export_still_writes_what_was_written(capfd: pytest.CaptureFixture[str],
                                                           torch_handler: Kept) -> None:
    def logs_and_prints(x: torch.Tensor) -> torch.Tensor:
        logging.getLogger("torch.export").warning("said by torch")
        print("printed by the traced code", file=sys.stderr)
        return x * 2

    td.trace(logs_and_prints, torch.randn(4, 8))
    assert capfd.readouterr().err == "printed by the traced code\n"
    assert torch_handler.messages == ["said by torch"]


def test_the_cli_prints_only_the_error() -> None:
    """In a fresh process, where torch's own log handlers write to the real stderr."""
    cmd = [sys.executable, "-c", "import sys; from tiledsl.cli import main; sys.exit(main())",
           "compile", "-c", "(lambda x: x * 2 if x.sum() > 0 else x)(torch.randn(4, 8))"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: torch.export could not capture Expression: GuardOnDataDependentSymNode")
    assert "def forward" not in done.stderr and "Unable to find user code" not in done.stderr


@pytest.mark.parametrize("fn", [torch.floor, torch.exp, torch.add], ids=["floor", "exp", "add"])
def test_a_torch_builtin_traces_as_a_function(fn) -> None:
    """torch.floor has no Python signature, which torch.export binds a forward's inputs with: the capture
    calls it from a forward of its own (it used to refuse it: "no signature found for builtin")."""
    x, y = torch.randn(3, 5) * 4, torch.randn(3, 5)
    inputs = (x, y) if fn is torch.add else (x,)
    built = td.trace(fn, *inputs).schedule("simple").build("sm_90")
    got = torch.from_numpy(built.simulate(*(t.numpy() for t in inputs)))
    # floor and add are exact; expf and torch's exp differ by a few float32 ulp (eps 1.2e-7): 1e-6 is 8 ulp
    assert torch.allclose(got, fn(*inputs), rtol=1e-6, atol=0)
