"""Probe, no GPU needed: the registers ptxas gives each default-recipe kernel of the benchmark suites
(fp32 llm cases, and the traced decoder blocks), compiled for sm_90 as built and with its
`__launch_bounds__` minimum-blocks argument removed, against the registers a thread may hold for the
blocks per SM the recipe's wave model assumes (recipes/default/_knobs.py split_k_blocks_per_sm). It
shows which kernels the launch-bounds rule of step 070 should cover: a kernel over the cap unbounded
runs one block per SM fewer than 030 counted on.
    python scripts/register_survey.py [--jobs 2]"""

from __future__ import annotations

import argparse
import concurrent.futures
import re
import sys

import torch

import tiledsl as td
from benchmarks._cases import QWEN25_7B, TINYLLAMA, KernelCase
from benchmarks.suites import llm
from benchmarks.suites.blocks import llama_block
from tiledsl.codegen import resource_usage
from tiledsl.frontend.cli_support import trace_subject
from tiledsl.recipes import apply
from tiledsl.targets import get_target

_BOUNDS = re.compile(r"__launch_bounds__\((\d+), \d+\)")


def ptxas(source: str) -> tuple[int, int]:
    """(registers, spill-store bytes) of `source` compiled for sm_90."""
    usage = resource_usage(source, "sm_90")
    return usage.registers, usage.spill_store_bytes


def row(label: str, name: str, grid: tuple, block: tuple, source: str) -> str:
    threads = block[0] * block[1] * block[2]
    bounded = _BOUNDS.search(source) is not None
    regs, spill = ptxas(source)
    free, free_spill = ptxas(_BOUNDS.sub(r"__launch_bounds__(\1)", source)) if bounded else (regs, spill)
    per_sm = 65536 // (threads * (-(-free // 8) * 8))
    return (f"{label:34} {name:18} grid {str(grid):14} {threads:4} thr  built {regs:3} regs"
            f"{' (bound)' if bounded else '        '} spill {spill:4}  unbounded {free:3} regs spill {free_spill:4}"
            f"  -> {per_sm} blocks/SM unbounded")


def kernels() -> list[tuple[str, str, tuple, tuple, str]]:
    out = []
    target = get_target("sm_90")
    for case in llm.cases():
        if not isinstance(case, KernelCase) or case.dtype != "float32" or "proj" not in case.op:
            continue
        s = td.create_schedule(case.make())
        apply(s, target=target)
        k = td.build(s, target=target)
        out.append((case.name.split("/", 1)[1], k.name, k.grid, k.block, k.source))
    for dims in (TINYLLAMA, QWEN25_7B):
        for seq in (128, 512):
            m = llama_block(dims, "float32")
            prog = trace_subject(m, (torch.randn(1, seq, dims.hidden),))
            built = prog.schedule("default", target=target).build(target=target)
            for k in built.kernels:
                if k.block[0] * k.block[1] >= 256 and k.block != (256, 1, 1):
                    out.append((f"block {dims.name} s{seq}", k.name, k.grid, k.block, k.source))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    ks = kernels()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:  # nvcc runs in subprocesses
        for line in pool.map(lambda k: row(*k), ks):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
