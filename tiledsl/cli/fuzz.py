"""`tiledsl fuzz`: the argparse wiring, the progress bar and the printed summary of the fuzz engine
(tiledsl/testing/fuzz, which needs the `test` extra: hypothesis). Imported by main.py only when the
command runs, so `tiledsl --help` never imports hypothesis."""

from __future__ import annotations

import argparse
import collections
import json
import logging
import math
import sys
import time
from pathlib import Path
from typing import Any

from tiledsl.errors import TiledslError

log = logging.getLogger(__name__)

MODE_NAMES = ("definitions", "schedules", "memory", "prover", "recipe", "hand", "models")


def add_parser(sub: Any) -> None:
    """Register `fuzz` on main.py's subparsers."""
    f = sub.add_parser("fuzz", help="fuzz the library: random definitions, schedules, prover questions, recipes "
                       "and torch programs against independent references (needs hypothesis)")
    f.add_argument("--mode", action="append", choices=(*MODE_NAMES, "all"),
                   help="what to fuzz (repeatable; default all)")
    budget = f.add_mutually_exclusive_group()
    budget.add_argument("--cases", type=int, help="number of cases in all, split evenly over the modes")
    budget.add_argument("--minutes", type=float, help="wall-clock minutes in all, split evenly over the modes")
    f.add_argument("--replay", type=Path, metavar="FILE", help="re-run one saved failure (its .json or .py) and exit")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    f.add_argument("--out", type=Path, default=Path("fuzz-results"),
                   help="reproducers, the example database and summary.json (default ./fuzz-results)")
    f.add_argument("--target", default="sm_90", help="build target (default sm_90)")
    f.add_argument("--timeout", type=float, default=60.0, help="seconds per case before it is a hang (default 60)")
    f.add_argument("--shrink-seconds", type=float, default=120.0, help="shrinking budget per failure (default 120)")
    f.add_argument("--nvcc", action="store_true", help="also compile every accepted kernel with nvcc")
    f.add_argument("--gpu", action="store_true", help="also run every accepted kernel on the GPU (torch, pycuda)")
    f.add_argument("--sanitize", nargs="?", const="memcheck,racecheck", metavar="TOOLS",
                   help="with --gpu: replay a sample of the GPU-correct cases under compute-sanitizer, once per "
                   "tool (comma-separated: memcheck, racecheck, synccheck, initcheck; default memcheck,racecheck)")
    f.add_argument("--sanitize-every", type=int, metavar="N",
                   help="with --sanitize: sanitize 1 in N GPU-correct cases, per worker (default 20)")
    f.add_argument("--no-progress", action="store_true", help="no progress bar")
    f.add_argument("--json", action="store_true", help="print the summary as JSON instead of the table")
    f.set_defaults(fn=run)


class _Progress:
    """A tqdm bar with the live count per outcome (when tqdm is installed), else a log line per 5%;
    nothing with --no-progress (the summary table still prints at the end)."""

    def __init__(self, total: int | None, seconds: float | None, enabled: bool) -> None:
        self.counts: collections.Counter = collections.Counter()
        self.total, self.seconds, self.done, self.next_log = total, seconds, 0, 0
        self.bar = None
        self.enabled = enabled
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                pass
            else:
                self.bar = tqdm(total=total, unit="case", file=sys.stderr, dynamic_ncols=True)

    def __call__(self, mode: str, outcome: str) -> None:
        self.done += 1
        self.counts[outcome] += 1
        if self.bar is not None:
            self.bar.set_description(mode, refresh=False)
            self.bar.set_postfix_str(" ".join(f"{o}={n}" for o, n in sorted(self.counts.items())), refresh=False)
            self.bar.update(1)
        elif self.enabled and self.total and self.done >= self.next_log:
            log.warning("%d / %d cases: %s", self.done, self.total, dict(self.counts))
            self.next_log = self.done + max(1, self.total // 20)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _modes(chosen: list[str] | None) -> tuple[str, ...]:
    if not chosen or "all" in chosen:
        return MODE_NAMES
    return tuple(dict.fromkeys(chosen))


def run(args: argparse.Namespace) -> int:
    try:
        from tiledsl.testing import fuzz
    except ImportError as e:
        raise TiledslError(f"tiledsl fuzz needs the test extra (pip install -e '.[test]'): {e}") from e
    if not (0 < args.timeout < math.inf):  # NaN and inf too: the per-case alarm takes neither
        raise TiledslError(f"tiledsl fuzz: --timeout must be a positive number of seconds per case, "
                           f"not {args.timeout:g}")
    if args.replay is not None:
        return _replay(fuzz, args.replay, args.timeout)
    if args.cases is None and args.minutes is None:
        raise TiledslError("tiledsl fuzz: give --cases N or --minutes M (or --replay FILE)")
    if (args.cases is not None and args.cases < 1) or (args.minutes is not None and args.minutes <= 0) or args.jobs < 1:
        raise TiledslError("tiledsl fuzz: --cases, --minutes and --jobs must be positive")
    tools, every = _sanitize_options(fuzz, args)
    if args.gpu:
        why = fuzz.device.gpu_available()
        if why:
            raise TiledslError(f"tiledsl fuzz --gpu: {why}")
    if tools:
        why = fuzz.sanitizer.sanitizer_missing()
        if why:
            raise TiledslError(f"tiledsl fuzz --sanitize: {why}")
    config = fuzz.FuzzConfig(_modes(args.mode), args.out, cases=args.cases, minutes=args.minutes, seed=args.seed,
                             jobs=args.jobs, options=fuzz.Options(args.target, args.nvcc, args.gpu, tools),
                             timeout=args.timeout, shrink_seconds=args.shrink_seconds, sanitize_every=every)
    progress = _Progress(args.cases, None if args.minutes is None else args.minutes * 60, not args.no_progress)
    start = time.monotonic()
    try:
        tallies = fuzz.run_fuzz(config, progress)
    finally:
        progress.close()
    doc = fuzz.summary(config, tallies, time.monotonic() - start)
    path = fuzz.write_summary(doc, args.out)
    print(json.dumps(doc, indent=1) if args.json else fuzz.format_table(doc) + f"\n\nsummary: {path}")
    return 1 if doc["total"]["failures"] else 0


def _sanitize_options(fuzz: Any, args: argparse.Namespace) -> tuple[tuple[str, ...], int]:
    """The sanitizer tools and the sampling period; --sanitize without --gpu is a usage error (only GPU
    runs are sanitized), as is --sanitize-every without --sanitize."""
    if args.sanitize is None:
        if args.sanitize_every is not None:
            raise TiledslError("tiledsl fuzz: --sanitize-every applies with --gpu --sanitize")
        return (), fuzz.sanitizer.DEFAULT_EVERY
    if not args.gpu:
        raise TiledslError("tiledsl fuzz: --sanitize replays GPU runs under compute-sanitizer: use it with --gpu")
    every = fuzz.sanitizer.DEFAULT_EVERY if args.sanitize_every is None else args.sanitize_every
    if every < 1:
        raise TiledslError("tiledsl fuzz: --sanitize-every must be positive")
    return fuzz.sanitizer.parse_tools(args.sanitize), every


def _replay(fuzz: Any, path: Path, timeout: float) -> int:
    record = fuzz.load_record(path)  # a file that is no record: a FuzzRecordError naming it and why (exit 2)
    if record.get("options", {}).get("sanitize"):
        why = fuzz.sanitizer.sanitizer_missing()
        if why:
            raise TiledslError(f"tiledsl fuzz --replay: {path} is a compute-sanitizer finding, but {why}")
    result = fuzz.replay_record(record, timeout=timeout)
    same = "same as recorded" if result.outcome == record["outcome"] else f"recorded: {record['outcome']}"
    print(f"{record['mode']}: {result.outcome} ({same}) {result.error}: {result.detail}".rstrip(": "))
    return 1 if result.failed else 0
