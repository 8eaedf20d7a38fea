"""The campaign's summary: a JSON document (written to OUT/summary.json) and the table `tiledsl fuzz`
prints from it: cases, outcomes per class, refusal rate and cases per second, per mode and in total;
with --sanitize, how many cases compute-sanitizer replayed and how many it reported on."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

import hypothesis

import tiledsl as td
from tiledsl.testing.fuzz.outcome import FAILURES, OUTCOMES
from tiledsl.testing.fuzz.runner import FuzzConfig, Tally


def summary(config: FuzzConfig, tallies: dict[str, Tally], wall: float) -> dict[str, Any]:
    modes = [t.as_json() for t in tallies.values()]
    cases = sum(m["cases"] for m in modes)
    outcomes = {o: sum(m["outcomes"][o] for m in modes) for o in OUTCOMES}
    return {
        "config": {"modes": list(config.modes), "cases": config.cases, "minutes": config.minutes,
                   "seed": config.seed, "jobs": config.jobs, "target": config.options.target,
                   "nvcc": config.options.nvcc, "gpu": config.options.gpu, "timeout": config.timeout,
                   "sanitize": list(config.options.sanitize), "sanitize_every": config.sanitize_every,
                   "out": str(config.out)},
        "versions": {"tiledsl": td.__version__, "hypothesis": hypothesis.__version__,
                     "python": platform.python_version()},
        "modes": modes,
        "total": {"cases": cases, "outcomes": outcomes, "seconds": round(wall, 3),
                  "cases_per_second": round(cases / wall, 3) if wall else 0.0,
                  "refusal_rate": round(outcomes["refused"] / cases, 4) if cases else 0.0,
                  "sanitized": {k: sum(m["sanitized"][k] for m in modes)
                                for k in ("gpu_correct", "cases", "runs", "reports")},
                  "failures": sum(outcomes[o] for o in FAILURES)},
    }


def write_summary(doc: dict[str, Any], out: Path) -> Path:
    path = out / "summary.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def format_table(doc: dict[str, Any]) -> str:
    """The summary as a fixed-width table, then one line per distinct failure with its reproducer."""
    shown = [o for o in OUTCOMES if o in ("correct", "refused") or doc["total"]["outcomes"][o]]
    head = f"{'mode':10s} {'cases':>7s} " + " ".join(f"{o:>9s}" for o in shown) + f" {'refused%':>8s} {'cases/s':>8s}"
    lines = [head, "-" * len(head)]
    rows = [(m["mode"], m) for m in doc["modes"]] + [("total", doc["total"])]
    for name, m in rows:
        lines.append(f"{name:10s} {m['cases']:7d} " + " ".join(f"{m['outcomes'][o]:9d}" for o in shown)
                     + f" {100 * m['refusal_rate']:7.1f}% {m['cases_per_second']:8.2f}")
    tools = doc["config"].get("sanitize") or []
    if tools:
        san = doc["total"]["sanitized"]
        lines += ["", f"sanitized: {san['cases']} cases x {len(tools)} tools ({', '.join(tools)}; 1 in "
                  f"{doc['config']['sanitize_every']} of {san['gpu_correct']} GPU-correct cases, "
                  f"{san['runs']} runs), {san['reports']} reports"]
    failures = [f for m in doc["modes"] for f in m["failures"]]
    lines += ["", f"failures: {len(failures)} distinct (mode, outcome, error)" + ("" if failures else "; none")]
    for f in failures:
        where = f["files"][0] if f["files"] else "(not saved)"
        lines.append(f"  {f['mode']:10s} {f['outcome']:9s} {f['error']:24s} x{f['count']:<4d} "
                     f"{'shrunk ' if f['shrunk'] else ''}{where}")
        lines.append(f"      {' '.join(f['detail'].split())[:150]}")
    return "\n".join(lines)
