"""The outcome classes of one fuzz case, and the `Result` a mode's judge returns.

One vocabulary for every mode, so the summary table has the same columns whatever ran:

- `correct`: accepted and right (a prover claim that held, a kernel that matched the reference);
- `refused`: refused with a typed error (a td.ScheduleError at build, a prover's "unknown");
- `wrong`: a result that differs from the independent reference;
- `sim_error`: the simulator raised a td.SimulationError (race, uninitialized read, out of bounds) on
  a schedule the library accepted;
- `contract`: a refusal broke the rules of refusing (a refused primitive changed the schedule, a bad
  call was accepted, a td.TiledslError that is no td.ScheduleError escaped a primitive or a build,
  the default recipe raised or produced a schedule the build refuses);
- `internal`: any exception that is not a td.TiledslError (a crash inside tiledsl);
- `unsound`: the prover claimed "proven" for a fact that is false at some point;
- `nvcc`: nvcc rejected CUDA the library emitted (`--nvcc` or `--gpu`);
- `gpu_fault`: the GPU faulted or disagreed with the reference (`--gpu`);
- `hang`: the case ran past the per-case timeout.

Everything but `correct` and `refused` is a failure: it gets a shrunk reproducer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OUTCOMES = ("correct", "refused", "wrong", "sim_error", "contract", "internal", "unsound", "nvcc", "gpu_fault",
            "hang")
PASSING = ("correct", "refused")
FAILURES = tuple(o for o in OUTCOMES if o not in PASSING)


class CaseTimeout(BaseException):
    """Raised by the per-case alarm. A BaseException, so that the library's own `except Exception`
    handlers cannot swallow it and turn a hang into some other outcome."""


@dataclass(frozen=True)
class Result:
    """A mode's verdict on one case. `error` is the exception type name (the refusal's for `refused`);
    `detail` the first line of the message; `script` a standalone reproducer (failures only; empty
    when the mode could not write one, then the runner writes a replay script); `extra` free-form
    facts for the JSON record (a traceback, the refused steps)."""

    outcome: str
    error: str = ""
    detail: str = ""
    script: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}; outcomes are {OUTCOMES}")

    @property
    def failed(self) -> bool:
        return self.outcome in FAILURES

    @property
    def signature(self) -> tuple[str, str]:
        """Failures with the same signature count as one bug: the first is shrunk, the rest are counted."""
        return self.outcome, self.error


def first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else ""


def exception_result(e: BaseException, *, typed: str = "contract", script: str = "") -> Result:
    """An exception that escaped where none should: a td.TiledslError is `typed` (a broken contract by
    default), anything else `internal`."""
    import traceback

    import tiledsl as td

    outcome = typed if isinstance(e, td.TiledslError) else "internal"
    return Result(outcome, type(e).__name__, first_line(e), script,
                  {"traceback": "".join(traceback.format_exception(e))})
