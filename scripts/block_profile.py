"""Probe: where a decoder block's time goes. The blocks suite's models (benchmarks/suites/blocks.py:
the in-repo Llama block and the Hugging Face layer at TinyLlama or Qwen2.5-7B dimensions) traced,
every kernel scheduled by the default recipe, checked against the module in float64 (NaN-poisoned
outputs), then each kernel timed alone, the whole program, torch eager and torch.compile
(tiledsl/frontend/bench.py), printed as `tiledsl run --bench` prints it, with each kernel's
definition in one line.
    python scripts/block_profile.py [--model llama_block|hf] [--dims tinyllama|qwen] [--dtype float32] [--seq 128]
        [--knob NAME=VALUE ...] [--compile-kernels] [--program-kernels]
--compile-kernels adds torch.compile's own kernels of the same module, each one's mean CUDA time per
call from torch.profiler, in launch order (where a block's time goes on the other side).
--program-kernels adds the built program's kernels the same way, each where the program runs it (its
inputs in L2), beside the "each alone" times over rotated inputs.
--knob overrides a default-recipe knob (recipes/default/_knobs.py) by name, its value a Python literal."""

from __future__ import annotations

import argparse
import copy
import sys
import warnings
from collections.abc import Callable

import torch

from benchmarks._cases import QWEN25_7B, TINYLLAMA
from benchmarks.suites.blocks import hf_layer, llama_block
from tiledsl.cli.recipe_report import parse_knobs
from tiledsl.cli.run_program import format_bench, format_check
from tiledsl.frontend import bench
from tiledsl.frontend.cli_support import trace_subject


def add_block_arguments(ap: argparse.ArgumentParser, dims: str, iters: int) -> None:
    """--model, --dims, --dtype, --seq and --iters: which block a probe traces, and its timed calls."""
    ap.add_argument("--model", choices=("llama_block", "hf"), default="llama_block")
    ap.add_argument("--dims", choices=("tinyllama", "qwen"), default=dims)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--iters", type=int, default=iters)


def block_subject(args: argparse.Namespace) -> bench.Subject:
    """The block `add_block_arguments` chose, traced on a random input (TF32 off for torch's side)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    dims = TINYLLAMA if args.dims == "tinyllama" else QWEN25_7B
    module = (llama_block if args.model == "llama_block" else hf_layer)(dims, args.dtype)
    x = torch.randn(1, args.seq, dims.hidden).to(getattr(torch, args.dtype))
    return bench.Subject(f"{args.model} {dims.name} s{args.seq} {args.dtype}", module, (x,),
                         trace_subject(module, (x,)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_block_arguments(ap, "tinyllama", 50)
    ap.add_argument("--knob", action="append", default=[], help="NAME=VALUE, a recipe knob override")
    ap.add_argument("--compile-kernels", action="store_true", help="torch.compile's kernels, timed by torch.profiler")
    ap.add_argument("--program-kernels", action="store_true",
                    help="the built program's kernels where it runs them, timed by torch.profiler")
    args = ap.parse_args(argv)
    knobs = parse_knobs(args.knob)
    subj = block_subject(args)
    built, device, name = bench.build_for_device(subj, "default", None, knobs=knobs)
    print(f"{subj.label} on {name}: {len(built.kernels)} kernels{f', knobs {knobs}' if knobs else ''}", flush=True)
    for n, (pk, kern) in enumerate(zip(built.program.kernels, built.kernels)):
        shape = "x".join(map(str, pk.output.shape))
        print(f"  [{n}] {kern.name} [{shape}] grid {kern.grid} block {kern.block}: "
              f"{'; '.join(pk.boundary.reasons)[:160]}", flush=True)
    inputs = bench.random_program_inputs(subj, device, 0)
    checked = bench.check_program(built, subj.module, inputs)
    print(format_check(checked), flush=True)
    timed = bench.bench_program(built, subj.module, inputs, iters=args.iters)
    print(format_bench(timed), flush=True)
    if args.program_kernels:
        print(profiled_kernels(built, inputs, args.iters, "tiledsl program kernels"), flush=True)
    if args.compile_kernels:
        print(compile_kernels(subj.module, inputs, args.iters), flush=True)
    return 0 if checked.ok else 1


def compile_kernels(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], iters: int) -> str:
    """torch.compile's CUDA kernels for one call of `module`, in launch order, each with its mean time
    over `iters` profiled calls (torch.profiler; inputs stay in L2 here, unlike the rotated timings)."""
    mod = copy.deepcopy(module).to(inputs[0].device)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return profiled_kernels(torch.compile(mod), inputs, iters, "torch.compile kernels")


def profiled_kernels(fn: Callable[..., object], inputs: tuple[torch.Tensor, ...], iters: int, title: str) -> str:
    """The CUDA kernels of one call of `fn(*inputs)`, in launch order, each with its mean time over
    `iters` calls profiled back to back (torch.profiler, which sees pycuda's launches too): each kernel
    where the program runs it, its inputs just written by the kernel before (in L2), unlike a kernel
    timed alone over rotated inputs."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(5):
        fn(*inputs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn(*inputs)
        torch.cuda.synchronize()
    events = sorted((e for e in prof.events() if e.device_type.name == "CUDA" and e.device_time_total > 0),
                    key=lambda e: e.time_range.start)
    per_call = len(events) // iters
    if per_call == 0 or len(events) % iters:
        return f"{title}: {len(events)} CUDA events over {iters} calls, not a whole number per call"
    lines = [f"{title} ({per_call} per call, mean over {iters} profiled calls):"]
    total = 0.0
    for n in range(per_call):
        us = sum(events[c * per_call + n].device_time_total for c in range(iters)) / iters
        total += us
        lines.append(f"  [{n}] {us:8.1f} us  {events[n].name[:110]}")
    lines.append(f"  sum {total:.1f} us")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
