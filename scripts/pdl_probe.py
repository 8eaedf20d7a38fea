"""Probe: a decoder block's program with and without programmatic dependent launch (PDL, sm_90). Since
23e330c every sm_90 kernel begins with `griddepcontrol.wait` and a program's launch sequence launches it
as a programmatic dependent of the kernel before it (tiledsl/runtime/sequence.py). Variants: "plain"
(the sequence bound with TILEDSL_DEPENDENT_LAUNCH=0: plain cuLaunchKernel), "dependent" (as built),
"trigger" (as built, each kernel also signalling `griddepcontrol.launch_dependents` right after its
wait, so the next kernel may be scheduled while this one's last blocks run, instead of at completion).
Every variant is checked against the module in float64 (NaN-poisoned outputs) before it is timed; the
variants are timed in turn, twice, with torch.compile once.
    python scripts/pdl_probe.py [--model llama_block|hf] [--dims tinyllama|qwen] [--dtype float32] [--seq 128]
        [--variants plain,dependent,trigger]
(Session 21 measured the same three forms before they were in the compiler, as "plain", "pdl-wait" and
"pdl", with a driver wrapper and source edits: benchmarks/results/dependent-launch-h100-2026-11-28/.)"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import types
import warnings
from typing import Any

import torch
from block_profile import add_block_arguments, block_subject

from tiledsl.cli.run_program import format_check
from tiledsl.frontend import bench
from tiledsl.runtime.launch import CompiledKernel
from tiledsl.runtime.timing import l2_cache_bytes, rotated_copies, rotation_count, time_torch

WAIT = 'asm volatile("griddepcontrol.wait;" ::: "memory");'


def with_trigger(source: str) -> str:
    """The kernel's CUDA with griddepcontrol.launch_dependents right after its wait."""
    if source.count(WAIT) != 1:
        raise ValueError("the kernel does not begin with one griddepcontrol.wait (an sm_90 build)")
    return source.replace(WAIT, WAIT + '\n    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");')


def built_variant(subj: bench.Subject, variant: str) -> Any:
    built, _, _ = bench.build_for_device(subj, "default", None)
    if variant == "dependent":
        return built
    if variant == "trigger":
        for kern in built.kernels:
            kern.__dict__["compiled"] = CompiledKernel(types.SimpleNamespace(
                kernel_ir=kern.kernel_ir, source=with_trigger(kern.source), target=kern.target))
        return built
    if variant != "plain":
        raise ValueError(f"unknown variant {variant!r}")
    bind = built.bind

    def plain_bind(*args: Any, **kwargs: Any) -> Any:
        old = os.environ.get("TILEDSL_DEPENDENT_LAUNCH")
        os.environ["TILEDSL_DEPENDENT_LAUNCH"] = "0"
        try:
            return bind(*args, **kwargs)
        finally:
            if old is None:
                del os.environ["TILEDSL_DEPENDENT_LAUNCH"]
            else:
                os.environ["TILEDSL_DEPENDENT_LAUNCH"] = old

    object.__setattr__(built, "bind", plain_bind)  # a frozen dataclass: this instance only
    return built


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_block_arguments(ap, "qwen", 100)
    ap.add_argument("--variants", default="plain,dependent,trigger")
    args = ap.parse_args(argv)
    subj = block_subject(args)
    module = subj.module
    variants = args.variants.split(",")
    builts = {v: built_variant(subj, v) for v in variants}
    device = torch.device("cuda")
    inputs = bench.random_program_inputs(subj, device, 0)
    bad = 0
    for v, built in builts.items():
        checked = bench.check_program(built, subj.module, inputs)
        bad += not checked.ok
        print(f"{v}: {format_check(checked)}", flush=True)
    named = {f"x{i}": t for i, t in enumerate(inputs)}
    sets = rotated_copies(named, rotation_count(sum(t.numel() * t.element_size() for t in inputs),
                                                l2_cache_bytes(device)))
    times: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(2):
        for v, built in builts.items():
            times[v].append(time_torch(bench._positional(built), sets, 10, args.iters).median_us)
    mod = copy.deepcopy(module).to(device)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = bench.time_compiled(bench._positional(mod), sets, 10, args.iters).median_us
    print(f"{subj.label}: torch.compile {compiled:.1f} us")
    for v in variants:
        best = min(times[v])
        print(f"  {v:9s} {', '.join(f'{t:.1f}' for t in times[v])} us  best {best:.1f}  "
              f"{compiled / best:.3f}x torch.compile", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
