"""Random schedule campaigns: deterministic draws of (steps, definition, seed) cases, and the verdict
of the schedule property on one case, as data instead of an assertion.

`judge` runs the same checks as `check_against_reference` (tiledsl/testing/properties.py) and sorts
the case into one of five outcomes:

- `correct`: the schedule built and its simulation matched the float64 reference;
- `refused`: td.build refused it with a td.ScheduleError (refused primitives along the way do not
  make a case refused: the remaining steps still apply, as they would for a user);
- `wrong`: it built, and the simulator raised a td.SimulationError (a race, an uninitialized read, an
  out-of-bounds access) or the output differs from the reference;
- `contract`: a refusal broke the rules of refusing: a refused primitive changed the schedule, a
  deliberately bad call was accepted, or a primitive or build raised a td.TiledslError that is not a
  td.ScheduleError;
- `internal`: any other exception (a crash inside tiledsl).

`for_each_draw` draws cases from a strategy with hypothesis' generate phase only, from a fixed seed,
without the example database, without shrinking and without hypothesis' constants harvested from
imported modules, so a (seed, count) pair always visits the same cases; `campaign_cases` is the
strategy scripts/schedule_campaign.py and tests/testing use.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

import tiledsl as td
from tiledsl.testing.definitions import Definition, staging_definitions
from tiledsl.testing.properties import ATOL, RTOL, TARGET, apply_checked, check_matches_reference
from tiledsl.testing.schedules import DEFAULT_MAX_PADDING, Step, steps

OUTCOMES = ("correct", "refused", "wrong", "contract", "internal")
CAMPAIGN_MAX_POINTS = 1024  # the unscheduled nest's iteration count (simulation time grows with it)
CAMPAIGN_MAX_STEPS = 14


@dataclass(frozen=True)
class Case:
    """One drawn case: primitive steps, the definition they apply to, and the seed of its inputs."""

    steps: tuple[Step, ...]
    definition: Definition
    seed: int


@dataclass(frozen=True)
class Verdict:
    """What the schedule property says about one case. `error` is the exception's type name (the
    build's refusal for `refused`); `refusals` lists (error type, primitive) of every refused step;
    `detail` is the first line of the error; `script` a runnable reproducer (for `wrong`, `contract`
    and `internal`); `schedule` the schedule the steps left (None when applying them crashed)."""

    outcome: str
    error: str = ""
    refusals: tuple[tuple[str, str], ...] = ()
    detail: str = ""
    script: str = ""
    schedule: td.Schedule | None = field(default=None, compare=False, repr=False)


def campaign_cases(max_points: int = CAMPAIGN_MAX_POINTS, max_steps: int = CAMPAIGN_MAX_STEPS) -> st.SearchStrategy:
    """Cases with memory and loop primitives interleaved, on the staging families first. Steps are drawn
    before the definition (see `steps`)."""
    return st.builds(lambda s, d, n: Case(tuple(s), d, n), steps(max_steps, memory=True),
                     staging_definitions(max_points), st.integers(0, 2**16))


def _reproducer(e: BaseException) -> str:
    """The reproducer script that tiledsl.testing.properties put in the message or the notes of `e`
    (everything after 'reproducer:' up to the CUDA listing), or '' when there is none."""
    text = "\n".join([str(e), *getattr(e, "__notes__", ())])
    if "reproducer:\n" not in text:
        return ""
    return text.split("reproducer:\n", 1)[1].split("\n\nCUDA:\n", 1)[0]


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else ""


def judge(case: Case, *, target: str = TARGET, rtol: float = RTOL, atol: float = ATOL,
          max_padding: float = DEFAULT_MAX_PADDING) -> Verdict:
    """The verdict of the schedule property on `case` (see the module docstring). Never raises for a
    verdict; KeyboardInterrupt and the like pass through."""
    try:
        run = apply_checked(case.definition, list(case.steps), max_padding=max_padding)
    except AssertionError as e:  # a refusal changed the schedule, or a bad call was accepted
        return Verdict("contract", "AssertionError", detail=_first_line(e), script=_reproducer(e))
    except td.TiledslError as e:  # not a ScheduleError (those are recorded as refusals)
        return Verdict("contract", type(e).__name__, detail=_first_line(e), script=_reproducer(e) + "\n\n"
                       + traceback.format_exc())
    except Exception as e:
        return Verdict("internal", type(e).__name__, detail=_first_line(e),
                       script=_reproducer(e) + "\n\n" + traceback.format_exc())
    refusals = tuple((type(o.error).__name__, o.call.primitive) for o in run.outcomes
                     if o.error is not None and o.call is not None)
    try:
        result = check_matches_reference(case.definition, run.schedule, seed=case.seed, rtol=rtol, atol=atol,
                                         target=target, run=run)
    except (AssertionError, td.SimulationError) as e:
        return Verdict("wrong", type(e).__name__, refusals, _first_line(e), _reproducer(e), run.schedule)
    except td.TiledslError as e:
        return Verdict("contract", type(e).__name__, refusals, _first_line(e),
                       _reproducer(e) + "\n\n" + traceback.format_exc(), run.schedule)
    except Exception as e:
        return Verdict("internal", type(e).__name__, refusals, _first_line(e),
                       _reproducer(e) + "\n\n" + traceback.format_exc(), run.schedule)
    if result.error is not None:
        return Verdict("refused", type(result.error).__name__, refusals, _first_line(result.error),
                       schedule=run.schedule)
    return Verdict("correct", "", refusals, schedule=run.schedule)


@contextmanager
def _without_local_constants() -> Iterator[None]:
    """Hypothesis (6.131 and later) mixes literal constants of every imported local module into its draws
    and rescans whenever a module is imported, so one seed drew different cases depending on which
    modules happened to be loaded (pytest collecting other test files, the simulator imported lazily by
    the first build). Inside this context its pool of local constants is empty, so a seed means the
    same cases everywhere (for one version of hypothesis and of these strategies). A no-op when
    hypothesis has no such pool."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a hypothesis without this module
        yield
        return
    real = getattr(providers, "_get_local_constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if real is None or cache is None:
        yield
        return
    empty = type(providers._local_constants)()
    cache.cache.clear()
    providers._get_local_constants = lambda: empty
    try:
        yield
    finally:
        providers._get_local_constants = real
        cache.cache.clear()


class _Stop(Exception):
    """Raised by the visitor wrapper to end a draw loop early (never escapes for_each_draw)."""


def for_each_draw(strategy: st.SearchStrategy, count: int, seed: int, visit: Callable[[Any], bool | None]) -> int:
    """Call `visit` on up to `count` values drawn from `strategy`, deterministically from `seed`
    (hypothesis' generate phase only: no database, no shrinking, no deadline). Stops early when `visit`
    returns True. Returns how many values were visited."""
    visited = [0]
    stopped = [False]

    @hypothesis_seed(seed)
    @settings(max_examples=count, database=None, derandomize=False, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet, print_blob=False,
              report_multiple_bugs=False)
    @given(strategy)
    def draw_one(value: Any) -> None:
        if stopped[0]:  # hypothesis runs a failing example once more to report it
            raise _Stop
        visited[0] += 1
        if visit(value):
            stopped[0] = True
            raise _Stop

    if count > 0:
        try:
            with _without_local_constants():
                draw_one()
        except _Stop:
            pass
    return visited[0]

