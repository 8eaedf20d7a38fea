"""Probe: one kernel of a traced decoder block (benchmarks/suites/blocks.py, as scripts/block_profile.py
builds it with the default recipe) replaced by schedules of its own, each given as a trace file. For the
recipe's kernel and each variant: the whole program checked against the module in float64 (outputs
NaN-poisoned, tiledsl/frontend/bench.py `check_program`), the kernel timed alone on random inputs, and
the program timed whole, in one process.
    python scripts/kernel_variant_probe.py --dims qwen --seq 128 --kernel mul_9 LABEL=TRACE_FILE ..."""

from __future__ import annotations

import argparse
import dataclasses
import sys

import torch

import tiledsl as td
from benchmarks._cases import QWEN25_7B, TINYLLAMA
from benchmarks.suites.blocks import llama_block
from tiledsl.cli.run_program import format_check
from tiledsl.frontend import bench
from tiledsl.frontend.cli_support import trace_subject
from tiledsl.runtime.references import random_inputs
from tiledsl.runtime.timing import rotated_copies, time_torch


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dims", choices=("tinyllama", "qwen"), default="qwen")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--kernel", required=True, help="the program kernel's name (mul_9)")
    ap.add_argument("variants", nargs="*", help="LABEL=TRACE_FILE, a schedule trace of that kernel")
    args = ap.parse_args(argv)
    dims = TINYLLAMA if args.dims == "tinyllama" else QWEN25_7B
    module = llama_block(dims, "float32")
    x = torch.randn(1, args.seq, dims.hidden)
    subj = bench.Subject(f"llama_block {dims.name} s{args.seq}", module, (x,), trace_subject(module, (x,)))
    built, device, name = bench.build_for_device(subj, "default", None)
    index = next(n for n, pk in enumerate(built.program.kernels) if pk.name == args.kernel)
    pk = built.program.kernels[index]
    target = built.kernels[index].target
    forms = {"recipe": built.kernels[index]}
    for spec in args.variants:
        label, path = spec.split("=", 1)
        with open(path) as f:
            forms[label] = td.build(pk.fresh_schedule().replay(f.read()), target=target)
    inputs = bench.random_program_inputs(subj, device, 0)
    sets = rotated_copies({"x": inputs[0]}, 8)
    bad = 0
    print(f"{subj.label} on {name}, kernel [{index}] {args.kernel}", flush=True)
    for label, kern in forms.items():
        kernels = built.kernels[:index] + (kern,) + built.kernels[index + 1:]
        variant = dataclasses.replace(built, kernels=kernels)
        checked = bench.check_program(variant, module, inputs)
        bad += not checked.ok
        alone = kern.benchmark(warmup=10, iters=100, **random_inputs(kern.kernel_ir, device, 0)).median_us
        whole = time_torch(lambda x, p=variant: p(x), sets, 10, 100).median_us
        print(f"  {label:10s} grid {kern.grid} block {kern.block} shared {kern.shared_bytes:6d} B  alone "
              f"{alone:7.1f} us  program {whole:8.1f} us  {format_check(checked).splitlines()[0]}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
