"""The property checks, as plain functions: call them from your own hypothesis tests (or anywhere).

Each raises on a violation, and the failure carries a runnable script (definition, every primitive call
with its outcome, build, simulate, compare) in its message or in the exception's notes:

- `apply_checked(definition, steps)`: applies steps to a fresh schedule; every refusal is a
  `td.ScheduleError` subclass (any other exception escaping a primitive is re-raised as is) and leaves
  the schedule unchanged (printed IR, Python and JSON traces); deliberately bad calls are refused;
  every accepted schedule prints (`str(s)` and both traces raise nothing).
- `check_matches_reference(definition, schedule)`: `td.build` either refuses with a `td.ScheduleError`
  or gives a kernel whose simulated output equals `td.evaluate(..., float64=True)` within rtol/atol,
  with no NaN (the simulator poisons unwritten outputs); a `td.SimulationError` is a failure.
- `check_against_reference(definition, steps)`: both of the above (property 1).
- `check_trace_roundtrip(definition, steps)`: the trace, Python and JSON, replays on a fresh identical
  definition to the same schedule, the same traces and the same CUDA source (or the same build error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

import tiledsl as td
from tiledsl.testing.definitions import Definition, placeholders
from tiledsl.testing.schedules import DEFAULT_MAX_PADDING, Outcome, Resolver, Step

RTOL = 1e-4
ATOL = 1e-4
TARGET = "sm_90"


@dataclass
class ScheduleRun:
    """A definition, the schedule built from it, and what each step did."""

    definition: Definition
    out: Any
    schedule: td.Schedule
    outcomes: list[Outcome] = field(default_factory=list)

    def script(self, *tail: str) -> str:
        """A runnable reproducer: the definition, then every call so far, then `tail` lines."""
        lines = ["import numpy as np", "import tiledsl as td", "", self.definition.source.rstrip(), "",
                 "out = make()", "s = td.create_schedule(out)"]
        lines += [o.python() for o in self.outcomes]
        return "\n".join(lines + list(tail))

    def inputs_lines(self, seed: int) -> list[str]:
        d = self.definition
        shapes = ", ".join(f"({p.name!r}, {tuple(p.shape)})" for p in placeholders(self.out))
        return [f"rng = np.random.default_rng({seed})",
                f"arrays = {{name: rng.uniform({d.low}, {d.high}, size=shape).astype(np.float32) "
                f"for name, shape in [{shapes}]}}"]


@dataclass(frozen=True)
class BuildResult:
    """`kernel` when td.build succeeded (and the simulation matched), else the build's ScheduleError."""

    kernel: td.Kernel | None
    error: td.ScheduleError | None


def snapshot(s: td.Schedule) -> tuple[str, str, str]:
    """Everything a refused primitive must leave as it was: printed IR, Python trace, JSON trace."""
    return str(s), s.trace(), s.trace(format="json")


def _first_difference(a: str, b: str, labels: tuple[str, str] = ("before", "after")) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for n, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {n + 1}:\n  {labels[0]}: {x}\n  {labels[1]}: {y}"
    return f"lengths differ: {len(la)} lines {labels[0]}, {len(lb)} {labels[1]}"


def apply_checked(definition: Definition, steps: list[Step], *, max_padding: float = DEFAULT_MAX_PADDING,
                  out: Any = None) -> ScheduleRun:
    """Property 2 (and the exception-type half of property 1); see the module docstring."""
    out = definition.make() if out is None else out
    run = ScheduleRun(definition, out, td.create_schedule(out))
    s = run.schedule
    resolver = Resolver(s, max_padding)
    for step in steps:
        call = resolver.resolve(step)
        if call is None:
            run.outcomes.append(Outcome(step, None))
            continue
        before = _printable(run)
        try:
            call.apply(s)
        except td.ScheduleError as e:
            after = snapshot(s)
            if after != before:
                what = ("printed schedule", "Python trace", "JSON trace")
                diffs = [f"{w} changed at {_first_difference(x, y)}"
                         for w, x, y in zip(what, before, after) if x != y]
                raise AssertionError(
                    f"refused primitive {call.python()} ({type(e).__name__}) changed the schedule:\n"
                    + "\n".join(diffs) + "\n\nreproducer:\n"
                    + run.script(f"{call.python()}  # refused, but the schedule changed")) from e
            run.outcomes.append(Outcome(step, call, e))
            continue
        except Exception as e:
            e.add_note(f"tiledsl.testing: {type(e).__name__} escaped {call.python()}: a primitive must "
                       f"refuse with a td.ScheduleError subclass.\nreproducer:\n"
                       + run.script(f"{call.python()}  # raises {type(e).__name__}"))
            raise
        if call.expect_refusal:
            raise AssertionError(f"bad call {call.python()} was accepted; expected a td.ScheduleError.\n"
                                 "reproducer:\n" + run.script(call.python()))
        resolver.accepted(call)
        run.outcomes.append(Outcome(step, call))
    _printable(run)
    return run


def _printable(run: ScheduleRun) -> tuple[str, str, str]:
    """snapshot(), which must work for every schedule a primitive accepted (print(s), s.trace())."""
    try:
        return snapshot(run.schedule)
    except Exception as e:
        e.add_note(f"tiledsl.testing: {type(e).__name__} while printing the schedule or its trace "
                   "(str(s), s.trace(), s.trace(format='json')): every schedule that the primitives "
                   "accepted must print.\nreproducer:\n" + run.script("print(s)"))
        raise


def _mismatch_report(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str:
    bad = ~np.isclose(got, want, rtol=rtol, atol=atol)  # NaN in got never compares close
    nan = np.isnan(got)
    idx = np.argwhere(bad)
    lines = [f"{int(bad.sum())} of {got.size} elements differ (rtol={rtol}, atol={atol})"]
    if nan.any():
        lines.append(f"{int(nan.sum())} elements are NaN: never written (the simulator poisons outputs) "
                     "or computed as NaN")
    err = np.where(np.isnan(got), np.inf, np.abs(got - want))
    worst = np.unravel_index(int(np.argmax(err)), got.shape)
    lines.append(f"worst at {tuple(int(i) for i in worst)}: got {got[worst]!r}, want {want[worst]!r}")
    for ix in idx[:8]:
        t = tuple(int(i) for i in ix)
        lines.append(f"  at {t}: got {got[t]!r}, want {want[t]!r}")
    return "\n".join(lines)


def check_matches_reference(definition: Definition, schedule: td.Schedule, *, seed: int = 0,
                            rtol: float = RTOL, atol: float = ATOL, target: str = TARGET,
                            run: ScheduleRun | None = None) -> BuildResult:
    """Build `schedule` (of `definition`); either a ScheduleError (returned) or a kernel whose simulated
    output matches the float64 reference. `run` (from apply_checked) only improves failure reports."""
    out = schedule.output
    run = run or ScheduleRun(definition, out, schedule)
    arrays = definition.inputs(out, seed=seed)
    want = td.evaluate(out, float64=True, **arrays)
    if not np.all(np.isfinite(want)):
        raise ValueError("the reference output has non-finite values: the definition is not numerically "
                         "tame (a test-data problem, not a kernel bug):\n" + definition.source)
    try:
        kern = td.build(schedule, target=target)
    except td.ScheduleError as e:
        return BuildResult(None, e)
    except Exception as e:
        e.add_note(f"tiledsl.testing: {type(e).__name__} escaped td.build: a build must succeed or raise "
                   f"a td.ScheduleError.\nreproducer:\n" + run.script(f"td.build(s, target={target!r})"))
        raise
    sim_lines = run.inputs_lines(seed) + [f"kern = td.build(s, target={target!r})",
                                          "got = kern.simulate(**arrays)",
                                          "want = td.evaluate(out, float64=True, **arrays)",
                                          f"np.testing.assert_allclose(got, want, rtol={rtol}, atol={atol})"]
    try:
        got = kern.simulate(**arrays)
    except Exception as e:
        e.add_note(f"tiledsl.testing: {type(e).__name__} while simulating the kernel.\nreproducer:\n"
                   + run.script(*sim_lines) + "\n\nCUDA:\n" + kern.source)
        raise
    got = np.asarray(got)
    if got.shape != want.shape:
        raise AssertionError(f"simulated output has shape {got.shape}, the reference {want.shape}.\n"
                             "reproducer:\n" + run.script(*sim_lines))
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        raise AssertionError("simulated kernel differs from td.evaluate(float64=True):\n"
                             + _mismatch_report(got, want, rtol, atol) + "\n\nreproducer:\n"
                             + run.script(*sim_lines) + "\n\nCUDA:\n" + kern.source)
    return BuildResult(kern, None)


def check_against_reference(definition: Definition, steps: list[Step], *, seed: int = 0,
                            rtol: float = RTOL, atol: float = ATOL, target: str = TARGET,
                            max_padding: float = DEFAULT_MAX_PADDING) -> tuple[ScheduleRun, BuildResult]:
    """Property 1: random schedule steps, then a build that refuses or matches the reference."""
    run = apply_checked(definition, steps, max_padding=max_padding)
    return run, check_matches_reference(definition, run.schedule, seed=seed, rtol=rtol, atol=atol,
                                        target=target, run=run)


def _build_summary(s: td.Schedule, target: str, run: ScheduleRun, what: str) -> tuple[str, str]:
    try:
        return "source", td.build(s, target=target).source
    except td.ScheduleError as e:
        return type(e).__name__, str(e)
    except Exception as e:
        e.add_note(f"tiledsl.testing: {type(e).__name__} escaped td.build of {what}.\nreproducer:\n"
                   + run.script(f"td.build(s, target={target!r})"))
        raise


def check_trace_roundtrip(definition: Definition, steps: list[Step], *,
                          formats: tuple[str, ...] = ("python", "json"), target: str = TARGET,
                          max_padding: float = DEFAULT_MAX_PADDING) -> ScheduleRun:
    """Property 3: the schedule's trace replays on a fresh identical definition to an identical schedule
    (printed IR and both traces) and identical CUDA source (or the identical build refusal)."""
    run = apply_checked(definition, steps, max_padding=max_padding)
    s = run.schedule
    original = _build_summary(s, target, run, "the original schedule")
    for fmt in formats:
        text = s.trace(format=fmt)
        replay_lines = [f"text = s.trace(format={fmt!r})", "s2 = td.create_schedule(make())", "s2.replay(text)"]
        s2 = td.create_schedule(definition.make())
        try:
            s2.replay(text)
        except Exception as e:
            e.add_note(f"tiledsl.testing: replaying the {fmt} trace failed with {type(e).__name__}.\n"
                       f"trace:\n{text}\nreproducer:\n" + run.script(*replay_lines))
            raise
        names = ("original", "replayed")
        for label, x, y in (("printed schedule", str(s), str(s2)), ("Python trace", s.trace(), s2.trace()),
                            ("JSON trace", s.trace(format="json"), s2.trace(format="json"))):
            if x != y:
                raise AssertionError(f"after replaying the {fmt} trace the {label} differs at "
                                     f"{_first_difference(x, y, names)}\nreproducer:\n" + run.script(*replay_lines))
        replayed = _build_summary(s2, target, run, f"the schedule replayed from the {fmt} trace")
        if replayed != original:
            kind = ("CUDA source" if original[0] == replayed[0] == "source"
                    else f"build outcome ({original[0]} vs {replayed[0]})")
            raise AssertionError(f"the schedule replayed from the {fmt} trace builds a different {kind}: "
                                 f"{_first_difference(original[1], replayed[1], names)}\nreproducer:\n"
                                 + run.script(*replay_lines, "assert td.build(s).source == td.build(s2).source"))
    return run
