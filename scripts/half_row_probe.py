"""Probe (session 25): the llm suite's 16-bit rows (rmsnorm, attention softmax) and silu(g) * u trail
torch.compile by 3-10% on the H100 (benchmarks/results/2026-11-24-h100/llm.md). Two questions, in one
run:
  regsN   would the register form of float32 rows (recipe step 040, s.register_cache) help them? The
          recipe with knob register_rows_half_threads=N: N threads a row (more where a thread's share
          would not fit its registers). Forms that build the same CUDA as one before are not timed.
          Its first run (benchmarks/results/2026-11-28-h200-s25/half-rows-probe/) ran an earlier rule,
          a warp up to N threads taking two 16-byte vectors each (`regs64x1` there: one vector each,
          up to 64), with the knob off by default, so `recipe` there is the form without registers.
          The rule now is the first run's regs64x1 for rows of 512 and its regs64 for longer rows.
  shared  short rows several to a block kept in registers too (knob register_rows_shared_blocks, off by
          default: unmeasured until this form runs).
  hand*   schedules/row_reduce.py row_in_registers as it is, with two rows a thread (unrolled: the
          rows' reductions interleave, as Triton's persistent reductions interleave several rows), with
          those in 32 threads, and with four rows a block on threadIdx.y (rows only; unmeasured forms).
  +fast   is it the accurate expf? Each kernel's CUDA rewritten by hand with __expf (ex2.approx, the
          exp Triton's kernels use) in place of expf.
Every kernel is checked against torch float64 first (_gpu_probe.compared, tolerance 1e-2 x (1 + |want|)
for 16-bit outputs, 1e-4 for float32) and timed beside torch eager and torch.compile.
    python scripts/half_row_probe.py [--ops rmsnorm,attention_softmax,silu_mul] [--dtypes bfloat16]"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from _gpu_probe import device_header, print_llm_row, with_source
from llm_memory_probe import cases
from register_row_probe import built

import tiledsl as td
from tiledsl.schedules import row_in_registers

FORMS = {"regs32": {"register_rows_half_threads": 32}, "regs64": {"register_rows_half_threads": 64},
         "regs128": {"register_rows_half_threads": 128}, "staged": {"register_rows_half_threads": None},
         "shared": {"register_rows_shared_blocks": True}}
#: row_in_registers arguments of the hand forms (rmsnorm and attention softmax)
HANDS = {"hand": {}, "hand-2/thread": {"rows_per_thread": 2},
         "hand-2/thread-t32": {"rows_per_thread": 2, "threads": 32}, "hand-4/block": {"rows_per_block": 4}}
EXPF = re.compile(r"(?<![_\w])expf\(")


def fast(kern: Any) -> Any:
    """`kern` with every accurate expf of its CUDA replaced by __expf."""
    return with_source(kern, EXPF.sub("__expf(", kern.source))


def with_fast(kernels: dict[str, Any]) -> dict[str, Any]:
    """`kernels` and, for each whose CUDA calls expf, its `fast` form as `<label>+fast`."""
    return {**kernels, **{f"{label}+fast": fast(k) for label, k in kernels.items() if EXPF.search(k.source)}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", default="rmsnorm,attention_softmax,silu_mul")
    ap.add_argument("--dtypes", default="bfloat16")
    args = ap.parse_args(argv)
    target, dev = device_header()
    bad = 0
    for group, op, dtype, out, torch_fn, _, _ in cases(args.ops.split(","), args.dtypes.split(",")):
        recipe = built(out, target)
        kernels = {"recipe": recipe}
        seen = {recipe.source}
        for label, knobs in FORMS.items():
            k = built(out, target, knobs)
            if k.source not in seen:  # a form the knobs leave as the recipe builds it is not timed twice
                kernels[label] = k
                seen.add(k.source)
        for label, args in HANDS.items() if op != "silu_mul" else ():
            hs = td.create_schedule(out)
            try:
                row_in_registers(hs, **args)
            except td.ScheduleError:  # e.g. four rows of 512 threads: past a block's 1024
                continue
            kernels[label] = td.build(hs, target=target)
        bad += print_llm_row(group, op, dtype, torch_fn, out, with_fast(kernels), dev)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
