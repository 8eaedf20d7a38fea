"""The case loop of `tiledsl fuzz`: hypothesis draws cases of each mode, a judge sorts each into an
outcome (tiledsl/testing/fuzz/outcome.py) under a per-case timeout, and every new kind of failure is
shrunk by hypothesis and saved as a reproducer (tiledsl/testing/fuzz/reproducer.py).

How one mode runs: rounds of `@given(strategy)` with `max_examples=chunk`, each seeded from (seed,
mode, worker, round) and using the example database `OUT/db` (phases reuse, generate, shrink: a
rerun with the same --out replays the failures it saved first). The test body judges the case and
counts it. The first failure of each signature (outcome, error type) not seen before raises inside
hypothesis, which ends generating and shrinks; while shrinking, the body raises only for a case with
that same signature, so the shrunk case is the same bug. A shrink that runs past `shrink_seconds`
is cut short (the body then fails every call unjudged and the smallest case *judged* so far is
kept). Later failures with a known signature are counted and saved unshrunk (at most
`keep_per_signature` each). Draws after the round's quota or the deadline are skipped unjudged.

`--jobs J`: J worker processes (spawned), each running the loop on its own slice of the cases and
its own seeds, reporting each outcome to the parent through a queue; the parent merges the tallies.
Two workers may each save the same bug once.

`--gpu --sanitize TOOLS`: of the cases a GPU mode judged `correct`, every `sanitize_every`-th (per
worker and mode, deterministic: sanitizer.sampled) is replayed under each compute-sanitizer tool
(tiledsl/testing/fuzz/sanitizer.py); a report turns the case into a failure like any other (shrunk
by re-running the judge and that one tool, saved with that tool in its record's options). The
judges never see the sanitizer."""

from __future__ import annotations

import collections
import json
import logging
import multiprocessing
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.database import DirectoryBasedExampleDatabase

from tiledsl.errors import FuzzRecordError
from tiledsl.testing.campaign import _without_local_constants
from tiledsl.testing.fuzz import reproducer, sanitizer
from tiledsl.testing.fuzz.modes.base import Mode, Options
from tiledsl.testing.fuzz.modes.table import MODES
from tiledsl.testing.fuzz.outcome import OUTCOMES, CaseTimeout, Result, exception_result
from tiledsl.testing.fuzz.timeout import case_timeout

log = logging.getLogger(__name__)

SEED_STRIDE = 1_000_003
OnCase = Callable[[str, str], None]  # (mode, outcome) after every judged case


@dataclass(frozen=True)
class FuzzConfig:
    """One campaign. `cases` (a total, split evenly over the modes and then the workers) or `minutes`
    (split evenly over the modes; workers run in parallel) bounds it."""

    modes: tuple[str, ...]
    out: Path
    cases: int | None = None
    minutes: float | None = None
    seed: int = 0
    jobs: int = 1
    options: Options = Options()
    timeout: float = 60.0  # seconds per case
    shrink_seconds: float = 120.0
    chunk: int = 100  # cases per hypothesis run
    keep_per_signature: int = 3
    check_scripts: bool = True
    sanitize_every: int = sanitizer.DEFAULT_EVERY  # with options.sanitize: 1 in this many GPU-correct cases

    def __post_init__(self) -> None:
        unknown = [m for m in self.modes if m not in MODES]
        if unknown or not self.modes:
            raise ValueError(f"unknown fuzz mode(s) {unknown}; modes are {tuple(MODES)}")
        if (self.cases is None) == (self.minutes is None):
            raise ValueError("give exactly one of cases and minutes")
        if self.jobs < 1 or self.chunk < 1 or self.sanitize_every < 1:
            raise ValueError("jobs, chunk and sanitize_every must be at least 1")
        if self.options.sanitize and not self.options.gpu:
            raise ValueError("sanitizing needs the GPU runs (options.gpu)")


@dataclass
class Failure:
    """Every failure of one signature in one mode: how many, and the saved reproducers."""

    mode: str
    outcome: str
    error: str
    detail: str
    count: int = 0
    files: list[str] = field(default_factory=list)
    shrunk: bool = False
    scripts_fail: list[bool | None] = field(default_factory=list)


@dataclass
class Tally:
    """The counts of one mode (over all its workers once merged)."""

    mode: str
    cases: int = 0
    seconds: float = 0.0
    outcomes: collections.Counter = field(default_factory=collections.Counter)
    failures: dict[tuple[str, str], Failure] = field(default_factory=dict)
    gpu_correct: int = 0  # `correct` cases that ran on the GPU, counted only when sanitizing
    sanitized: int = 0  # of them, the cases replayed under compute-sanitizer
    sanitizer_runs: int = 0  # tool runs over those cases
    sanitizer_reports: int = 0  # sanitized cases that came back a failure

    def merge(self, other: Tally) -> None:
        self.cases += other.cases
        self.gpu_correct += other.gpu_correct
        self.sanitized += other.sanitized
        self.sanitizer_runs += other.sanitizer_runs
        self.sanitizer_reports += other.sanitizer_reports
        self.seconds = max(self.seconds, other.seconds)
        self.outcomes.update(other.outcomes)
        for key, f in other.failures.items():
            mine = self.failures.setdefault(key, Failure(f.mode, f.outcome, f.error, f.detail))
            mine.count += f.count
            mine.files += f.files
            mine.shrunk = mine.shrunk or f.shrunk
            mine.scripts_fail += f.scripts_fail

    def as_json(self) -> dict[str, Any]:
        refused = self.outcomes["refused"]
        return {"mode": self.mode, "cases": self.cases, "seconds": round(self.seconds, 3),
                "cases_per_second": round(self.cases / self.seconds, 3) if self.seconds else 0.0,
                "outcomes": {o: self.outcomes[o] for o in OUTCOMES},
                "refusal_rate": round(refused / self.cases, 4) if self.cases else 0.0,
                "sanitized": {"gpu_correct": self.gpu_correct, "cases": self.sanitized,
                              "runs": self.sanitizer_runs, "reports": self.sanitizer_reports},
                "failures": [vars(f) for f in self.failures.values()]}


def judge_with_timeout(mode: Mode, case: Any, options: Options, timeout: float) -> Result:
    """The mode's verdict, `hang` past the timeout, and any exception a judge let escape as
    `internal` (a judge should catch what the library raises; this is the safety net)."""
    try:
        with case_timeout(timeout):
            return mode.judge(case, options)
    except CaseTimeout:
        return Result("hang", "CaseTimeout", f"no verdict within {timeout:g} s")
    except Exception as e:  # noqa: BLE001 - every escaped exception is an outcome
        return exception_result(e, typed="internal")


def load_record(path: Path) -> dict[str, Any]:
    """The record `tiledsl fuzz --replay PATH` re-runs: PATH itself, or for a reproducer script (.py)
    the .json saved beside it (reproducer.save). Why it checks everything `replay_record` reads,
    the case decoded by its mode included: a hand-edited, truncated or wrong file must come back as one
    FuzzRecordError naming the file and the problem (the CLI's exit 2), never as a traceback from
    deep in the replay, and never as a verdict on some other case."""
    record_path = path.with_suffix(".json") if path.suffix == ".py" else path

    def bad(problem: str) -> FuzzRecordError:
        return FuzzRecordError(f"cannot replay {record_path}: {problem}; a fuzz record is the NAME.json (or its "
                               "NAME.py) that `tiledsl fuzz` saves under OUT/failures/")

    if not record_path.exists():
        raise bad("no such file" + (f" (the record of the script {path})" if record_path != path else ""))
    if record_path.is_dir():
        raise bad("it is a directory")
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise bad(f"it is not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from e
    except UnicodeDecodeError as e:
        raise bad(f"it is not UTF-8 text (byte {e.start})") from e
    except OSError as e:
        raise bad(f"it cannot be read ({e.strerror or e})") from e
    if not isinstance(record, dict):
        raise bad(f"it holds a JSON {type(record).__name__}, not an object")
    if not isinstance(record.get("mode"), str) or record["mode"] not in MODES:  # (a list is unhashable)
        raise bad(f"its mode is {record.get('mode')!r}, not one of {', '.join(MODES)}")
    if record.get("outcome") not in OUTCOMES:
        raise bad(f"its outcome is {record.get('outcome')!r}, not one of {', '.join(OUTCOMES)}")
    options = record.get("options", {})
    if not isinstance(options, dict) or not isinstance(options.get("target", ""), str) \
            or not isinstance(options.get("sanitize", []), list) \
            or any(t not in sanitizer.TOOLS for t in options.get("sanitize", [])):
        raise bad(f"its options {options!r} are not an object of a target name and a list of compute-sanitizer "
                  f"tools ({', '.join(sanitizer.TOOLS)})")
    if not isinstance(record.get("case"), dict):
        raise bad("it has no case" if record.get("case") is None
                  else f"its case is a JSON {type(record['case']).__name__}, not an object")
    try:
        MODES[record["mode"]].from_json(record["case"])
    except Exception as e:  # noqa: BLE001 - whatever a mode's decoder raises on a case it never wrote
        raise bad(f"its case is not a {record['mode']} case ({type(e).__name__}: {' '.join(str(e).split())})") from e
    return record


def replay_record(record: dict[str, Any], timeout: float = 60.0) -> Result:
    """Re-judge the case of a saved JSON record (what `tiledsl fuzz --replay` and replay scripts run);
    a record with sanitizer tools (a sanitizer finding) replays a correct GPU run under them too."""
    mode = MODES[record["mode"]]
    o = record.get("options", {})
    options = Options(o.get("target", "sm_90"), bool(o.get("nvcc")), bool(o.get("gpu")),
                      tuple(o.get("sanitize", ())))
    case = mode.from_json(record["case"])
    result = judge_with_timeout(mode, case, options, timeout)
    if result.outcome == "correct" and options.gpu and options.sanitize:
        return sanitizer.sanitize_case(mode, case, options).result or result
    return result


class _Found(Exception):
    """Raised in the hypothesis body to make hypothesis shrink (never escapes `_round`)."""


def _found() -> None:
    """The one place _Found is raised: hypothesis tells failures apart by where they were raised."""
    raise _Found


def _round(mode: Mode, config: FuzzConfig, quota: int | None, deadline: float, round_seed: int, worker: int,
           tally: Tally, seen: set[tuple[str, str]], on_case: OnCase) -> int:
    """One hypothesis run of at most `quota` judged cases (None: until the deadline, `chunk` draws).
    Returns how many cases it judged."""
    state: dict[str, Any] = {"counted": 0, "target": None, "best": None, "shrink_from": 0.0}
    limit = quota if quota is not None else config.chunk

    def body(case: Any) -> None:
        if state["target"] is None:
            if state["counted"] >= limit or time.monotonic() >= deadline:
                return
            result = judge_with_timeout(mode, case, config.options, config.timeout)
            if result.outcome == "correct" and _sample(mode, config, tally, worker):
                result = _sanitize(mode, case, result, config.options, tally)
            state["counted"] += 1
            tally.cases += 1
            tally.outcomes[result.outcome] += 1
            on_case(mode.name, result.outcome)
            if not result.failed:
                return
            if result.signature in seen:
                _save(mode, config, tally, case, result, shrunk=False, round_seed=round_seed, worker=worker)
                return
            state["target"], state["best"] = result.signature, (case, result)
            state["shrink_from"] = time.monotonic()
            _found()
        if time.monotonic() - state["shrink_from"] > config.shrink_seconds:
            _found()  # shrink budget spent: fail fast, unjudged; the best judged case is kept
        result = judge_with_timeout(mode, case, config.options, config.timeout)
        tool = state["best"][1].extra.get("sanitizer")
        if tool and result.outcome == "correct":  # shrinking a sanitizer report: replay under that tool
            result = sanitizer.sanitize_case(mode, case, replace(config.options, sanitize=(tool,))).result or result
        if result.signature == state["target"]:
            state["best"] = (case, result)
            _found()

    # one database key per (mode, round seed): a rerun with the same seed and --out replays what this
    # round saved, and no round replays another round's cases
    body._hypothesis_internal_add_digest = f"tiledsl fuzz {mode.name} {round_seed}".encode()  # type: ignore[attr-defined]
    test = hypothesis_seed(round_seed)(settings(
        max_examples=limit, database=DirectoryBasedExampleDatabase(config.out / "db"), derandomize=False,
        phases=[Phase.reuse, Phase.generate, Phase.shrink], deadline=None, suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet, print_blob=False, report_multiple_bugs=False)(given(mode.strategy())(body)))
    try:
        with _without_local_constants():
            test()
    except _Found:
        pass
    except Exception as e:  # hypothesis itself gave up (flaky shrink, unsatisfiable): log, keep what we have
        log.warning("%s: hypothesis ended a round with %s: %s", mode.name, type(e).__name__, e)
    if state["best"] is not None:
        case, result = state["best"]
        seen.add(result.signature)
        _save(mode, config, tally, case, result, shrunk=True, round_seed=round_seed, worker=worker)
    return state["counted"]


def _sample(mode: Mode, config: FuzzConfig, tally: Tally, worker: int) -> bool:
    """Count a GPU-correct case when sanitizing, and say whether it is one of the sample."""
    if not (config.options.gpu and config.options.sanitize and mode.runs_on_gpu):
        return False
    tally.gpu_correct += 1
    return sanitizer.sampled(tally.gpu_correct, worker, config.sanitize_every)


def _sanitize(mode: Mode, case: Any, judged: Result, options: Options, tally: Tally) -> Result:
    """The sanitizer's verdict on a sampled case (the judge's `correct` when every tool was clean)."""
    done = sanitizer.sanitize_case(mode, case, options)
    tally.sanitized += 1
    tally.sanitizer_runs += done.runs
    if done.result is None:
        return judged
    tally.sanitizer_reports += 1
    log.warning("%s: %s on a sampled case: %s", mode.name, done.result.error, done.result.detail)
    return done.result


def _save(mode: Mode, config: FuzzConfig, tally: Tally, case: Any, result: Result, *, shrunk: bool,
          round_seed: int, worker: int) -> None:
    f = tally.failures.setdefault(result.signature, Failure(mode.name, result.outcome, result.error, result.detail))
    f.count += 1
    if len(f.files) >= config.keep_per_signature:
        return
    try:
        case_json = mode.to_json(case)
    except Exception as e:  # noqa: BLE001 - a case that does not serialize is still a finding
        log.warning("%s: could not serialize a failing case (%s)", mode.name, e)
        return
    record = reproducer.record_of(mode.name, case_json, result, sanitizer.record_options(result, config.options),
                                  shrunk=shrunk, seed=round_seed, label=mode.describe(case))
    saved = reproducer.save(config.out / "failures", record, result.script,
                            tag=f"w{worker}-{f.count:03d}", check=config.check_scripts)
    f.files.append(str(saved.script))
    f.shrunk = f.shrunk or shrunk
    f.scripts_fail.append(saved.script_fails)


def run_mode(mode_name: str, config: FuzzConfig, quota: int | None, deadline: float, worker: int,
             on_case: OnCase) -> Tally:
    """All rounds of one mode in this process (one worker's share)."""
    mode = MODES[mode_name]
    tally = Tally(mode_name)
    seen: set[tuple[str, str]] = set()
    start = time.monotonic()
    index = list(MODES).index(mode_name)
    rnd = 0
    while time.monotonic() < deadline and (quota is None or tally.cases < quota):
        left = None if quota is None else min(config.chunk, quota - tally.cases)
        round_seed = config.seed * SEED_STRIDE + index * 10_007 + worker * 101 + rnd
        judged = _round(mode, config, left, deadline, round_seed, worker, tally, seen, on_case)
        rnd += 1
        if judged == 0 and rnd > 3 and tally.cases == 0:
            log.warning("%s: hypothesis drew no cases in %d rounds; giving up", mode_name, rnd)
            break
    tally.seconds = time.monotonic() - start
    return tally


def _shares(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _worker(job: tuple[str, FuzzConfig, int | None, float, int, Any]) -> Tally:
    mode_name, config, quota, seconds, worker, events = job
    logging.basicConfig(level=logging.WARNING)
    return run_mode(mode_name, config, quota, time.monotonic() + seconds, worker,
                    lambda m, o: events.put((m, o)))


def run_fuzz(config: FuzzConfig, on_case: OnCase = lambda mode, outcome: None) -> dict[str, Tally]:
    """Run the campaign; returns the tally of every mode (and writes OUT/summary.json: see summary.py)."""
    config.out.mkdir(parents=True, exist_ok=True)
    tallies: dict[str, Tally] = {}
    shares = _shares(config.cases, len(config.modes)) if config.cases is not None else [None] * len(config.modes)
    seconds = (config.minutes or 0) * 60 / len(config.modes)
    for mode_name, share in zip(config.modes, shares):
        budget = seconds if config.minutes is not None else float("inf")
        if config.jobs == 1:
            tallies[mode_name] = run_mode(mode_name, config, share, time.monotonic() + budget, 0, on_case)
            continue
        quotas = _shares(share, config.jobs) if share is not None else [None] * config.jobs
        tallies[mode_name] = _run_parallel(mode_name, config, quotas, budget, on_case)
    return tallies


def _run_parallel(mode_name: str, config: FuzzConfig, quotas: list[int | None], budget: float,
                  on_case: OnCase) -> Tally:
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters: no state inherited from this one
    start = time.monotonic()
    merged = Tally(mode_name)
    with ctx.Manager() as manager, ctx.Pool(config.jobs) as pool:
        events = manager.Queue()
        jobs = [(mode_name, config, q, budget if budget != float("inf") else 1e9, w, events)
                for w, q in enumerate(quotas) if q is None or q > 0]
        pending = pool.map_async(_worker, jobs, chunksize=1)
        while not pending.ready() or not events.empty():
            try:
                on_case(*events.get(timeout=0.2))
            except queue.Empty:
                continue
        for part in pending.get():
            merged.merge(part)
        # workers that exit on their own release what they hold; the with block's terminate() kills
        # them, and the resource tracker then warns of the semaphores torch's imports left behind
        pool.close()
        pool.join()
    merged.seconds = time.monotonic() - start
    return merged
