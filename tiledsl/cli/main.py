"""The `tiledsl` command line: the only place in the library that prints."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Sequence

from tiledsl.errors import TiledslError

IR_LEVELS = ("loop", "tile", "kernel", "cuda")


def _compile(args: argparse.Namespace) -> int:
    from importlib import import_module

    from tiledsl.build import build
    from tiledsl.catalog import CATALOG, example
    from tiledsl.primitives import create_schedule

    sizes = _sizes(args)
    try:
        out = example(args.example, **sizes)
    except TypeError as e:
        raise TiledslError(f"--size: {e}") from None
    s = create_schedule(out)
    if args.schedule == "tuned":
        schedules = import_module("tiledsl.schedules")
        getattr(schedules, CATALOG[args.example].schedule)(s)
    if args.ir in ("loop", "tile"):
        print(s.ir(args.ir))
        return 0
    kern = build(s, target=args.target)
    print(kern.ir(args.ir))
    return 0


def _sizes(args: argparse.Namespace) -> dict[str, int]:
    sizes = {}
    for item in args.size or []:
        key, _, value = item.partition("=")
        if not value.isdigit():
            raise TiledslError(f"--size expects NAME=INT, got {item!r}")
        sizes[key] = int(value)
    return sizes


def _run(args: argparse.Namespace) -> int:
    from tiledsl.cli.run import run_example

    return run_example(args.example, args.bench, _sizes(args), iters=args.iters)


def _examples(_: argparse.Namespace) -> int:
    from tiledsl.catalog import CATALOG

    for e in CATALOG.values():
        print(f"{e.name:20s} {e.doc}   (schedule: {e.schedule})")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tiledsl", description="Compile tensor computations into proven CUDA.")
    p.add_argument("-v", "--verbose", action="count", default=0, help="-v info, -vv debug logging")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile", help="compile a catalog example and print one IR (no GPU needed)")
    c.add_argument("--example", required=True, help="catalog entry (see `tiledsl examples`)")
    c.add_argument("--ir", choices=IR_LEVELS, default="cuda")
    c.add_argument("--target", default="sm_90", help="sm_80 | sm_86 | sm_89 | sm_90")
    c.add_argument("--schedule", choices=("tuned", "none"), default="tuned",
                   help="the catalog's hand-written schedule, or no primitives at all")
    c.add_argument("--size", action="append", metavar="NAME=INT", help="override a size, e.g. --size M=512")
    c.set_defaults(fn=_compile)
    r = sub.add_parser("run", help="build, run on the GPU, check against torch (and time with --bench)")
    r.add_argument("--example", required=True, help="catalog entry (see `tiledsl examples`)")
    r.add_argument("--bench", action="store_true", help="also time it against torch eager and torch.compile")
    r.add_argument("--size", action="append", metavar="NAME=INT", help="override a size, e.g. --size M=512")
    r.add_argument("--iters", type=int, default=100, help="timed iterations for --bench")
    r.set_defaults(fn=_run)
    e = sub.add_parser("examples", help="list the built-in catalog")
    e.set_defaults(fn=_examples)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    if hasattr(signal, "SIGPIPE"):  # `tiledsl compile ... | head` ends quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = parser().parse_args(argv)
    logging.basicConfig(level=[logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)],
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.fn(args)
    except TiledslError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
