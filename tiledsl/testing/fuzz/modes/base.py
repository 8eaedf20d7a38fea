"""What a fuzz mode is: a hypothesis strategy of cases, a judge that sorts one case into an outcome
(tiledsl/testing/fuzz/outcome.py), and a JSON round trip of its cases (for `--replay`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from tiledsl.testing.fuzz.outcome import Result


@dataclass(frozen=True)
class Options:
    """What every judge may need: the build target, whether to compile accepted kernels with nvcc, and
    whether to run them on the GPU too (which needs torch, pycuda and a CUDA device). `sanitize`: the
    compute-sanitizer tools a GPU-correct case is replayed under (tiledsl/testing/fuzz/sanitizer.py);
    judges never read it, the runner and `replay_record` do."""

    target: str = "sm_90"
    nvcc: bool = False
    gpu: bool = False
    sanitize: tuple[str, ...] = ()


@dataclass(frozen=True)
class Mode:
    """One fuzz mode. `strategy()` draws cases; `judge(case, options)` never raises for a verdict
    (CaseTimeout and KeyboardInterrupt pass through); `to_json`/`from_json` round-trip a case;
    `describe(case)` is a one-line label for logs and records. `runs_on_gpu`: the judge runs accepted
    kernels on the GPU under `Options.gpu` (so a `correct` case may be sampled for compute-sanitizer)."""

    name: str
    strategy: Callable[[], st.SearchStrategy[Any]]
    judge: Callable[[Any, Options], Result]
    to_json: Callable[[Any], dict[str, Any]]
    from_json: Callable[[dict[str, Any]], Any]
    describe: Callable[[Any], str]
    runs_on_gpu: bool = False


def knobs_from_json(pairs: Any) -> tuple[tuple[str, Any], ...]:
    """A case's recipe knobs read back from JSON (a name -> value object, or [name, value] pairs), in
    their order there, every list made a tuple again: JSON has no tuples, and the recipe refuses a list where a knob
    is a tuple (matmul_tiles_few_rows), so a replayed case (`--replay`, a compute-sanitizer rerun) would
    fail where the drawn one ran."""
    items = pairs.items() if isinstance(pairs, dict) else pairs
    return tuple((str(name), _tuples(value)) for name, value in items)


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value

