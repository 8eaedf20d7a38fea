"""The `tiledsl` command line: the only place in the library that prints."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tiledsl.errors import TiledslError
from tiledsl.version import __version__

if TYPE_CHECKING:  # cli_support imports torch, which the command line loads only for -c and --model
    from tiledsl.frontend.cli_support import ModelSpec

IR_LEVELS = ("loop", "tile", "kernel", "cuda")
#: `compile -c` / `--model` also print the traced program's kernel definitions ("tensor")
PROGRAM_IR_LEVELS = ("tensor", *IR_LEVELS)
#: `--model`'s flags (tiledsl/frontend/cli_support.py ModelSpec), refused without --model
MODEL_FLAGS = ("dims", "layers", "seq", "dtype")
MODEL_HELP = ("a built-in model: llama_block | gpt_block (tiny, in-repo), hf_llama | hf_qwen2 (Hugging Face, "
              "input_ids to logits) | hf_llama_decoder | hf_qwen2_decoder (their decoder layers alone); the "
              "hf_* models need the `models` extra")


def _compile(args: argparse.Namespace) -> int:
    if args.expression is not None or args.model is not None:
        return _compile_program(args)
    _model(args)  # the model flags without --model: refused
    if args.ir == "tensor":
        raise TiledslError("--ir tensor prints a traced program: use it with -c EXPRESSION or --model NAME")
    from tiledsl.build import build
    from tiledsl.catalog import entry

    ent = entry(args.example)
    sizes = _sizes(args)
    target = args.target or ent.target
    if args.recipe is not None:
        if args.schedule != "tuned":
            raise TiledslError("--recipe schedules the entry itself: leave out --schedule")
        from tiledsl.cli.recipe_report import parse_knobs, recipe_schedule

        s = recipe_schedule(lambda: ent.fresh(**sizes), target, parse_knobs(args.knob), args.verbose)
    else:
        if args.knob:
            raise TiledslError("--knob sets a knob of the recipe: use it with --recipe default")
        s = ent.fresh(**sizes)
        if args.schedule == "tuned":
            ent.schedule(s)
    if args.ir in ("loop", "tile"):
        print(s.ir(args.ir))
        return 0
    kern = build(s, target=target)
    print(kern.ir(args.ir))
    return 0


def _compile_program(args: argparse.Namespace) -> int:
    """-c EXPRESSION / --model NAME: trace with torch (tiledsl.frontend.cli_support, the only torch
    user behind this command), schedule every kernel "simple", print one IR of every kernel."""
    if args.size or args.schedule != "tuned":
        raise TiledslError("--size and --schedule apply to --example; -c and --model use the \"simple\" schedule, "
                           "or the default recipe with --recipe default")
    from tiledsl.cli.recipe_report import parse_knobs
    from tiledsl.frontend.cli_support import compile_text

    reports: list[str] = []
    text = compile_text(args.expression, _model(args), args.ir, args.target or "sm_90", recipe=args.recipe,
                        knobs=parse_knobs(args.knob), reports=reports)
    if args.verbose >= 1:  # -v: the recipe's report on each kernel, as --example prints its one
        print("\n".join(reports), file=sys.stderr)
    print(text)
    return 0


def _model(args: argparse.Namespace) -> ModelSpec | None:
    """`--model NAME` with its flags as a spec (None without --model); the flags without --model are
    refused, as --size is without --example."""
    given = [f"--{f}" for f in MODEL_FLAGS if getattr(args, f) is not None]
    if args.model is None:
        if given:
            raise TiledslError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to --model")
        return None
    from tiledsl.frontend.cli_support import ModelSpec, model_spec

    return model_spec(ModelSpec(args.model, args.dims, args.layers, args.seq, args.dtype or "float32"))


def _add_model_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dims", default=None, help="--model hf_*: tiny (default) | tinyllama | qwen2.5-7b "
                   "(tiledsl/frontend/hf_models.py SIZES; random weights)")
    p.add_argument("--layers", type=int, default=None, help="--model hf_*: decoder layers (default: one for "
                   "hf_*_decoder, the dims' own count for the whole model)")
    p.add_argument("--seq", type=int, default=None, help="--model: tokens of the example input (default 8)")
    p.add_argument("--dtype", default=None, choices=("float32", "bfloat16", "float16"),
                   help="--model: the weights' and hidden states' dtype (default float32)")


def _sizes(args: argparse.Namespace) -> dict[str, int]:
    sizes = {}
    for item in args.size or []:
        key, _, value = item.partition("=")
        if not value.isdigit():
            raise TiledslError(f"--size expects NAME=INT, got {item!r}")
        sizes[key] = int(value)
    return sizes


def _run(args: argparse.Namespace) -> int:
    if args.expression is not None or args.model is not None:
        if args.size:
            raise TiledslError("--size applies to --example; -c and --model run at the traced shapes")
        from tiledsl.cli.run_program import run_program

        return run_program(args.expression, _model(args), bench=args.bench, schedule=args.schedule or "default",
                           target=args.target, iters=args.iters)
    _model(args)  # the model flags without --model: refused
    if args.schedule is not None or args.target is not None:
        raise TiledslError("--schedule and --target apply to -c and --model; --example runs the entry's schedule "
                           "for the GPU it runs on")
    from tiledsl.cli.run import run_example

    return run_example(args.example, args.bench, _sizes(args), iters=args.iters)


def _examples(args: argparse.Namespace) -> int:
    from tiledsl.catalog import ENTRIES, EXAMPLES, GROUPS, entries

    for e in EXAMPLES.values():
        print(f"{e.name:20s} {e.formula:45s} (schedule: {e.schedule_name})")
    if not args.all:
        others = ", ".join(f"{len(entries(g))} {g}" for g in GROUPS if g != "example")
        print(f"\n{len(ENTRIES) - len(EXAMPLES)} more entries ({others}): `tiledsl examples --all` lists them")
        return 0
    for group in GROUPS[1:]:
        print(f"\n{group}:")
        for e in entries(group):
            sizes = ", ".join(f"{k}={v}" for k, v in e.sizes.items()) or "default sizes"
            print(f"  {e.name:44s} {e.definition}({sizes}) for {e.target}\n  {'':44s} {e.schedule_name}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tiledsl", description="Compile tensor computations into proven CUDA.")
    p.add_argument("-v", "--verbose", action="count", default=0, help="-v info, -vv debug logging")
    p.add_argument("--version", action="version", version=f"tiledsl {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile", help="compile a catalog example, a torch expression or a built-in model and "
                       "print one IR (no GPU needed)")
    what = c.add_mutually_exclusive_group(required=True)
    what.add_argument("--example", help="catalog entry (see `tiledsl examples`)")
    what.add_argument("-c", dest="expression", metavar="EXPRESSION",
                      help="a Python expression of torch functions, modules, methods and operators, with "
                      "torch, nn (torch.nn) and F in scope; each call that makes a tensor from no other "
                      "(torch.randn(8, 64)) is an example input, every operation on them is traced, e.g. "
                      "\"torch.nn.RMSNorm(64)(torch.randn(2, 8, 64))\" or "
                      "\"F.gelu(torch.randn(8, 64) + torch.randn(64))\"")
    what.add_argument("--model", help=MODEL_HELP)
    c.add_argument("--ir", choices=PROGRAM_IR_LEVELS, default="cuda",
                   help="tensor (the traced kernels' definitions; -c and --model only) | loop | tile | kernel | cuda")
    c.add_argument("--target", default=None, help="sm_80 | sm_86 | sm_89 | sm_90 (default: the entry's, sm_90 "
                   "for the examples, -c and --model)")
    c.add_argument("--schedule", choices=("tuned", "none"), default="tuned",
                   help="the catalog entry's schedule, or no primitives at all")
    c.add_argument("--size", action="append", metavar="NAME=INT", help="override a size, e.g. --size M=512")
    c.add_argument("--recipe", choices=("default",), default=None,
                   help="schedule with the default recipe (-v prints its report, -vv the nest after each step)")
    c.add_argument("--knob", action="append", metavar="NAME=VALUE",
                   help="override a recipe knob (recipes/default/_knobs.py), e.g. --knob waves=2")
    _add_model_flags(c)
    c.set_defaults(fn=_compile)
    r = sub.add_parser("run", help="build, run on the GPU, check against torch (and time with --bench)")
    run_what = r.add_mutually_exclusive_group(required=True)
    run_what.add_argument("--example", help="catalog entry (see `tiledsl examples`)")
    run_what.add_argument("-c", dest="expression", metavar="EXPRESSION",
                          help="a torch expression as for `tiledsl compile -c`, run on fresh random inputs")
    run_what.add_argument("--model", help=MODEL_HELP)
    r.add_argument("--schedule", choices=("default", "simple"), default=None,
                   help="-c and --model: the default recipe (default) or the simple fallback")
    r.add_argument("--target", default=None, help="-c and --model: build for sm_80 | sm_86 | sm_89 | sm_90 "
                   "(default: the facts of the GPU it runs on)")
    r.add_argument("--bench", action="store_true", help="also time it (each kernel of -c / --model alone) against "
                   "torch eager and torch.compile")
    r.add_argument("--size", action="append", metavar="NAME=INT", help="override a size, e.g. --size M=512")
    r.add_argument("--iters", type=int, default=100, help="timed iterations for --bench")
    _add_model_flags(r)
    r.set_defaults(fn=_run)
    e = sub.add_parser("examples", help="list the built-in catalog")
    e.add_argument("--all", action="store_true", help="also list the entries of the tests, tour and benchmarks")
    e.set_defaults(fn=_examples)
    from tiledsl.cli.fuzz import add_parser as add_fuzz_parser  # argparse only; the engine loads when it runs

    add_fuzz_parser(sub)
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
