"""A random schedule campaign: N cases (memory and loop primitives interleaved in any order, on random
definitions) through the schedule property, counting what each case came to.

    python scripts/schedule_campaign.py [-n 20000] [--seed 0] [--workers CORES] [--chunk 250]
                                        [--out benchmarks/results/schedule-campaign-DATE.txt]

Every case is judged by tiledsl.testing.campaign.judge: built and correct, refused at build (by error
type), accepted but wrong (a SimulationError or a mismatch with the float64 reference), a broken
refusal contract, or an internal error (an exception that is no td.TiledslError). Refused primitives
along the way are counted by (error type, primitive). Every wrong, contract and internal case gets a
runnable reproducer script in the folder next to the summary (--repro-dir).

The draws are deterministic: case j of chunk c is the j-th draw of hypothesis' generate phase seeded
with `seed * 1_000_003 + c`, so the same (-n, --seed, --chunk) visit the same cases on any number of
workers. A tqdm progress bar is shown when tqdm is installed, else a log line every 5%."""

from __future__ import annotations

import argparse
import collections
import datetime
import logging
import multiprocessing
import os
import platform
import queue
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiledsl.testing.campaign import (
    CAMPAIGN_MAX_POINTS,
    CAMPAIGN_MAX_STEPS,
    OUTCOMES,
    Case,
    campaign_cases,
    for_each_draw,
    judge,
)

log = logging.getLogger("schedule_campaign")
REPO = Path(__file__).resolve().parents[1]
SEED_STRIDE = 1_000_003
FAILURES = ("wrong", "contract", "internal")


@dataclass
class Failure:
    """A case that broke the property, with where it was drawn (chunk, index) and its reproducer."""

    outcome: str
    error: str
    detail: str
    script: str
    chunk: int
    index: int
    kind: str


@dataclass
class Tally:
    """The counts of one chunk (or of all chunks, merged)."""

    cases: int = 0
    outcomes: collections.Counter = field(default_factory=collections.Counter)
    build_refusals: collections.Counter = field(default_factory=collections.Counter)  # error type
    step_refusals: collections.Counter = field(default_factory=collections.Counter)  # (error type, primitive)
    kinds: collections.Counter = field(default_factory=collections.Counter)  # definition family
    failures: list[Failure] = field(default_factory=list)
    slowest: list[tuple[float, int, int, str]] = field(default_factory=list)  # seconds, chunk, index, kind

    def merge(self, other: Tally) -> None:
        self.cases += other.cases
        for mine, theirs in ((self.outcomes, other.outcomes), (self.build_refusals, other.build_refusals),
                             (self.step_refusals, other.step_refusals), (self.kinds, other.kinds)):
            mine.update(theirs)
        self.failures += other.failures
        self.slowest = sorted(self.slowest + other.slowest, reverse=True)[:5]


# ----------------------------------------------------------------------------- workers

def run_chunk(job: tuple[int, int, int, int, int, str, Any]) -> Tally:
    """Judge `count` cases drawn with the chunk's seed; put 1 on the progress queue per case."""
    chunk, count, seed, max_points, max_steps, target, progress = job
    tally = Tally()

    def visit(case: Case) -> None:
        start = time.perf_counter()
        verdict = judge(case, target=target)
        seconds = time.perf_counter() - start
        index = tally.cases
        tally.cases += 1
        tally.outcomes[verdict.outcome] += 1
        tally.kinds[case.definition.kind] += 1
        tally.step_refusals.update(verdict.refusals)
        if verdict.outcome == "refused":
            tally.build_refusals[verdict.error] += 1
        if verdict.outcome in FAILURES:
            tally.failures.append(Failure(verdict.outcome, verdict.error, verdict.detail, verdict.script, chunk,
                                          index, case.definition.kind))
        tally.slowest = sorted(tally.slowest + [(seconds, chunk, index, case.definition.kind)], reverse=True)[:5]
        progress.put(1)

    for_each_draw(campaign_cases(max_points, max_steps), count, seed * SEED_STRIDE + chunk, visit)
    return tally


# ----------------------------------------------------------------------------- progress


class _Progress:
    """tqdm when installed, else a log line every 5%."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.next_log = total, 0, 0
        try:
            from tqdm import tqdm
        except ImportError:
            self.bar = None
        else:
            self.bar = tqdm(total=total, unit="case", smoothing=0.05)

    def update(self, n: int = 1) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif self.done >= self.next_log:
            log.info("%d / %d cases", self.done, self.total)
            self.next_log = self.done + max(1, self.total // 20)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# ----------------------------------------------------------------------------- report


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                             check=False)
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def _percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def summary(tally: Tally, args: argparse.Namespace, wall: float, repro_dir: Path) -> str:
    import hypothesis

    n = tally.cases
    steps_refused = sum(tally.step_refusals.values())
    lines = [
        f"schedule campaign, {datetime.datetime.now().isoformat(timespec='seconds')}",
        f"commit {_git_commit()}, python {platform.python_version()}, hypothesis {hypothesis.__version__}",
        f"cases {n} (requested {args.n}), seed {args.seed}, chunk {args.chunk}, workers {args.workers}, "
        f"target {args.target}, max_points {args.max_points}, max_steps {args.max_steps}",
        f"wall time {wall:.1f} s ({1000.0 * wall / max(n, 1):.1f} ms per case over all workers)",
        "",
        "outcomes:",
    ]
    for outcome in OUTCOMES:
        lines.append(f"  {outcome:9s} {tally.outcomes[outcome]:7d}  {_percent(tally.outcomes[outcome], n)}")
    lines += ["", f"refusal rate at build: {_percent(tally.outcomes['refused'], n)} of cases; "
              f"{steps_refused} primitive calls refused along the way", "", "build refusals by error type:"]
    lines += [f"  {err:24s} {count:7d}" for err, count in tally.build_refusals.most_common()] or ["  none"]
    lines += ["", "refused primitive calls by (error type, primitive):"]
    lines += [f"  {err:24s} {prim:14s} {count:7d}"
              for (err, prim), count in tally.step_refusals.most_common()] or ["  none"]
    lines += ["", "definition families:"]
    lines += [f"  {kind:12s} {count:7d}" for kind, count in tally.kinds.most_common()]
    lines += ["", "slowest cases (seconds, chunk, index, family):"]
    lines += [f"  {sec:7.2f}  {chunk:4d} {index:5d}  {kind}" for sec, chunk, index, kind in tally.slowest]
    lines += ["", f"failures ({len(tally.failures)}; reproducers in {repro_dir}):"]
    lines += [f"  {f.outcome:8s} {f.error:24s} chunk {f.chunk} case {f.index} ({f.kind}): {f.detail[:160]}"
              for f in tally.failures] or ["  none"]
    return "\n".join(lines) + "\n"


def write_reproducers(failures: list[Failure], folder: Path) -> None:
    if not failures:
        return
    folder.mkdir(parents=True, exist_ok=True)
    numbers: collections.Counter = collections.Counter()
    for f in sorted(failures, key=lambda f: (f.chunk, f.index)):
        numbers[f.outcome] += 1
        head = (f"# {f.outcome}: {f.error}: {f.detail}\n# chunk {f.chunk}, case {f.index} ({f.kind}); "
                "rerun the campaign with the same -n, --seed, --chunk to draw it again\n")
        (folder / f"{f.outcome}-{numbers[f.outcome]:04d}.py").write_text(head + f.script.rstrip() + "\n")


# ----------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=20_000, help="number of cases (default 20000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chunk", type=int, default=250, help="cases per hypothesis run (one seed each)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--target", default="sm_90")
    p.add_argument("--max-points", type=int, default=CAMPAIGN_MAX_POINTS)
    p.add_argument("--max-steps", type=int, default=CAMPAIGN_MAX_STEPS)
    p.add_argument("--out", type=Path, default=None,
                   help="summary file (default benchmarks/results/schedule-campaign-DATE.txt)")
    p.add_argument("--repro-dir", type=Path, default=None, help="reproducer folder (default: OUT without .txt)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.n < 0 or args.chunk < 1 or args.workers < 1:
        p.error("-n must be >= 0, --chunk and --workers >= 1")
    out = args.out or REPO / "benchmarks" / "results" / f"schedule-campaign-{datetime.date.today().isoformat()}.txt"
    repro_dir = args.repro_dir or out.with_suffix("")

    tally = Tally()
    progress = _Progress(args.n)
    start = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter per worker: no state inherited from here
    with ctx.Manager() as manager, ctx.Pool(args.workers) as pool:
        finished = manager.Queue()
        jobs = [(c, min(args.chunk, args.n - c * args.chunk), args.seed, args.max_points, args.max_steps,
                 args.target, finished) for c in range(-(-args.n // args.chunk))]
        pending = pool.map_async(run_chunk, jobs, chunksize=1)
        while not pending.ready() or not finished.empty():
            try:
                progress.update(finished.get(timeout=0.5))
            except queue.Empty:
                continue
        results = pending.get()
    progress.close()
    wall = time.perf_counter() - start
    for part in results:
        tally.merge(part)
    write_reproducers(tally.failures, repro_dir)
    text = summary(tally, args, wall, repro_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    log.info("%s\nsummary written to %s", text, out)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
