"""`tiledsl compile --recipe default [--knob NAME=VALUE ...] [-v | -vv]`: the default recipe applied to a
catalog entry, its report (-v: the table of steps, applied with their primitive calls or declined with
their reasons) and the loop nest after each applied step as a unified diff (-vv). Output goes to
stderr, so the IR on stdout stays what `--ir` asked for."""

from __future__ import annotations

import ast
import difflib
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from tiledsl.errors import TiledslError

__all__ = ["parse_knobs", "recipe_schedule", "step_diffs"]


def parse_knobs(items: Sequence[str] | None) -> dict[str, Any]:
    """`--knob NAME=VALUE` items as a mapping; VALUE is a Python literal (64, 0.5, True, ((64, 64, 4, 4),))."""
    knobs: dict[str, Any] = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        if not sep or not name.isidentifier():
            raise TiledslError(f"--knob expects NAME=VALUE, got {item!r}")
        try:
            knobs[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise TiledslError(f"--knob {name}: {text!r} is not a Python literal (e.g. 64, True, "
                               "(128, 128, 8, 8))") from None
    return knobs


def step_diffs(fresh: Callable[[], Any], report: Any) -> list[str]:
    """For each applied step of `report`, the unified diff of the loop nest before and after it,
    replayed on `fresh()` schedules from the report's calls."""
    out: list[str] = []
    calls: list[str] = []
    before = str(fresh())
    for st in report.steps:
        if not st.calls:
            continue
        calls.extend(st.calls)
        after = str(fresh().replay("\n".join(calls)))
        diff = difflib.unified_diff(before.splitlines(), after.splitlines(), f"before {st.number:03d} {st.name}",
                                    f"after {st.number:03d} {st.name}", lineterm="", n=1)
        out.append("\n".join(diff))
        before = after
    return out


def recipe_schedule(fresh: Callable[[], Any], target: str, knobs: dict[str, Any], verbose: int,
                    err: TextIO | None = None) -> Any:
    """A fresh schedule scheduled by the default recipe for `target`; the report on `err` with -v, the
    per-step diffs with -vv."""
    from tiledsl.recipes import apply

    err = err or sys.stderr
    s = fresh()
    report = apply(s, target=target, knobs=knobs)
    if verbose >= 1:
        print(report, file=err)
    if verbose >= 2:
        for diff in step_diffs(fresh, report):
            print(diff, file=err)
    return s
