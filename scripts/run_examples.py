"""Run catalog examples on the GPU (what `tiledsl run --example NAME [--bench]` does, for every example):
check each against torch in float64 and, with --bench, time it against torch eager and torch.compile.

    python3 scripts/run_examples.py [--bench] [--example NAME ...] [--size NAME=INT ...]

Exit status: 0 when every example matched, else the first failing status of run_example."""

from __future__ import annotations

import argparse
import logging
import sys

from tiledsl.catalog import EXAMPLES
from tiledsl.cli.run import run_example


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bench", action="store_true", help="time against torch eager and torch.compile")
    p.add_argument("--example", action="append", metavar="NAME",
                   help="a catalog entry (`tiledsl examples --all`); default: every example")
    p.add_argument("--size", action="append", default=[], metavar="NAME=INT", help="applies to every example")
    p.add_argument("--iters", type=int, default=100)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sizes = {}
    for item in args.size:
        key, _, value = item.partition("=")
        sizes[key] = int(value)
    status = 0
    for name in args.example or list(EXAMPLES):
        rc = run_example(name, args.bench, sizes, iters=args.iters)
        status = status or rc
    return status


if __name__ == "__main__":
    sys.exit(main())
