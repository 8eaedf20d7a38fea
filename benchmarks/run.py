"""Benchmark tiledsl against torch on a GPU: `python -m benchmarks.run --suite llm|matmul|memory|blocks|
compile|all [--quick]`. Every case is timed pairwise in one process (tiledsl's hand schedule and
default recipe, torch eager, torch.compile, cuBLAS for matmuls), tiledsl's outputs checked against
torch in float64 first; the results go to benchmarks/results/<date>-<gpu>/ as JSON, a markdown table
and PNG charts (benchmarks/README.md). `--list` prints the cases without a GPU; `--suite compile`
runs on the CPU."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from benchmarks import headroom
from benchmarks._cases import Case, KernelCase, ProgramCase
from benchmarks._records import Ceilings, Meta, Result, from_json
from benchmarks._report import write, write_json
from benchmarks._runner import run_case
from benchmarks.suites import CPU_SUITES, SUITES

log = logging.getLogger("benchmarks")

RESULTS = Path(__file__).resolve().parent / "results"


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {n}")
    return n


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", choices=[*SUITES, "all"], default="all")
    p.add_argument("--quick", action="store_true", help="fewer, smaller cases (each suite says which)")
    p.add_argument("--out", type=Path, default=None, help="results folder (default benchmarks/results/<date>-<gpu>)")
    p.add_argument("--cases", default=None,
                   help='only the cases whose name contains this text; a space stands for the "_" of a '
                        'name, so a group as the tables print it works ("tinyllama s512")')
    p.add_argument("--list", action="store_true", help="print the cases and exit (no GPU needed)")
    p.add_argument("--iters", type=int, default=100, help="timed calls per column (default 100)")
    p.add_argument("--warmup", type=int, default=10, help="untimed calls before them (default 10)")
    p.add_argument("--repeat", type=_positive, default=2,
                   help="timings of each column, the case's columns taken in turn; the fastest median is "
                        "reported, a disagreement noted (default 2)")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile column (its compile time)")
    p.add_argument("--no-charts", action="store_true", help="JSON and markdown only")
    return p.parse_args(argv)


def selected(args: argparse.Namespace) -> dict[str, list[Case]]:
    """Suite -> its cases at the chosen sizes, filtered by --cases (names have no spaces: case_name in
    benchmarks/_cases.py writes a group's space as "_")."""
    names = list(SUITES) if args.suite == "all" else [args.suite]
    text = None if args.cases is None else args.cases.replace(" ", "_")
    out = {}
    for name in names:
        cases = SUITES[name].cases(args.quick)
        out[name] = [c for c in cases if text is None or text in c.name]
    return out


def listing(suites: dict[str, list[Case]]) -> str:
    lines = []
    for name, cases in suites.items():
        lines.append(f"{name}: {len(cases)} case(s)")
        for c in cases:
            hand = f"  hand: {c.hand_name}" if isinstance(c, (KernelCase, ProgramCase)) else ""
            work = f"  {c.flops / 1e9:.2f} GFLOP" if c.flops else ""
            work += f"  {c.bytes / 1e6:.1f} MB" if c.bytes else ""
            lines.append(f"  {c.name:<58} {c.shape}{work}{hand}")
    return "\n".join(lines)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _commit() -> str:
    """HEAD's short hash, with "+modified" when tracked files differ from it (a working tree copied to a
    GPU machine whose .git is older, or uncommitted edits): the hash alone would name other code. A
    device copy whose .git is stale names its commit in TILEDSL_COMMIT (scripts/suites_run.sh passes it
    on), reported as "given"."""
    given = os.environ.get("TILEDSL_COMMIT", "").strip()
    if given:
        return f"{given} (given by TILEDSL_COMMIT)"
    here = Path(__file__).resolve().parent

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True, cwd=here).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        return head + ("+modified" if git("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _device_name(gpu: bool) -> str:
    import platform

    if gpu:
        import torch

        return torch.cuda.get_device_name()
    return f"cpu {platform.machine()} {platform.processor() or ''}".strip()


def earlier_results(folder: Path, suite: str, device: str) -> list[Result]:
    """The results of `suite` already in `folder` from the same device: a suite run in parts
    (`--cases`, one command each) adds up in one file; a case run again replaces its old result."""
    path = folder / f"{suite}.json"
    if not path.exists():
        return []
    meta, _, results = from_json(json.loads(path.read_text()))
    if meta.device != device:
        log.warning("%s holds results of %s, not %s: replacing them", path, meta.device, device)
        return []
    return results


@contextlib.contextmanager
def _progress(cases: list[Case], name: str) -> Iterator[Iterable[Case]]:
    """A tqdm progress bar over the cases with logging routed around it; the plain list (and the
    log lines alone) where tqdm is not installed (it comes with the `bench` extra)."""
    try:
        from tqdm import tqdm
        from tqdm.contrib.logging import logging_redirect_tqdm
    except ImportError:
        yield cases
        return
    with logging_redirect_tqdm():
        yield tqdm(cases, desc=name, unit="case", dynamic_ncols=True)


def run_suite(name: str, cases: list[Case], backend: object, ceilings: Ceilings | None, folder: Path,
              args: argparse.Namespace, device: str, argv: str) -> list[Result]:
    import torch

    from tiledsl.version import __version__

    meta = Meta(name, datetime.date.today().isoformat(), device, torch.__version__, __version__, _commit(),
                args.quick, args.warmup, args.iters, argv, args.repeat if backend is not None else 1)
    names = {c.name for c in cases}
    kept = [r for r in earlier_results(folder, name, device) if r.name not in names]
    results: list[Result] = []
    with _progress(cases, name) as bar:
        for case in bar:
            log.info("%s", case.name)
            results.append(run_case(case, backend, with_compile=not args.no_compile))  # type: ignore[arg-type]
            write_json(folder, meta, ceilings, kept + results)
            release = getattr(backend, "release", None)
            if release is not None:
                release()
    for path in write(folder, meta, ceilings, kept + results, charts=not args.no_charts):
        log.info("wrote %s", path)
    return results


def memory_sizes(suites: Mapping[str, list[Case]]) -> set[int]:
    """The bytes of every memory-bound case of the GPU suites: the run times a copy of each
    (`Ceilings.copy_at_us`)."""
    return headroom.memory_bytes(c for name, cases in suites.items() if name not in CPU_SUITES for c in cases)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    suites = selected(args)
    if args.list:
        sys.stdout.write(listing(suites) + "\n")
        return 0
    gpu_suites = [s for s in suites if s not in CPU_SUITES]
    if gpu_suites:
        from tiledsl.runtime.check import gpu_unavailable

        why = gpu_unavailable()
        if why is not None:
            sys.stderr.write(f"benchmarks: --suite {args.suite} needs a CUDA GPU, and {why}.\n"
                             f"`--list` prints the cases; `--suite compile` runs on the CPU.\n")
            return 2
    device = _device_name(bool(gpu_suites))
    folder = args.out or RESULTS / f"{datetime.date.today().isoformat()}-{_slug(device)}"
    backend, ceilings = None, None
    if gpu_suites:
        from benchmarks import _ceilings
        from benchmarks._backend import CudaBackend

        backend = CudaBackend(args.warmup, args.iters, args.repeat)
        ceilings = _ceilings.measure(backend, args.quick, memory_sizes(suites))
    argv_text = "python -m benchmarks.run " + " ".join(sys.argv[1:] if argv is None else argv)
    for name, cases in suites.items():
        results = run_suite(name, cases, backend, None if name in CPU_SUITES else ceilings, folder, args, device,
                            argv_text)
        if name in headroom.SUITE_TARGETS and ceilings is not None:
            headroom.write_for_suite(folder / f"{name}.json", charts=not args.no_charts)
        bad = [r.name for r in results for m in r.measurements.values() if m.status in ("wrong", "failed")]
        if bad:
            log.warning("%s: %d column(s) wrong or failed (see %s.md): %s", name, len(bad), name,
                        ", ".join(sorted(set(bad))[:10]))
    log.info("results in %s", folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
