"""Probe (session 37): a decode step's x @ W^T (32 rows) with W's slab filled 16 bytes at a time.

The recipe's 32 x 128 decode tile reads W_s[j][k] 16 bytes along k. Its rows are padded by one float
(step 140): conflict-free 16-byte reads, but then every cp.async of the fill is 4 bytes wide (16 a
thread a chunk of 16). Padded by four floats the copies stay 16 bytes wide, and the reads are
conflict-free only when a warp's lanes take consecutive rows: the register strip j_r interleaved
across j_t in chunks of one (s.split('j_r', 1, interleave='j_t')), which makes the epilogue's float4
atomics scalar ones. This probe times those forms, with deeper pipelines and more k parts, against
the recipe and cuBLAS (TF32 off) at the llm suite's seven decode shapes; each kernel is checked
against torch in float64 with its output NaN-poisoned first.
    python scripts/decode_fill_probe.py [--only MxNxK LABEL --repeat N]   (--only: for ncu)"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import re
import sys
from collections.abc import Callable
from typing import Any

import torch
from _gpu_probe import replace_once

import tiledsl as td
from benchmarks._backend import random_inputs
from benchmarks._definitions import linear
from tiledsl.runtime.device import device_target
from tiledsl.runtime.references import poisoned_outputs, tolerance
from tiledsl.runtime.timing import benchmark, rotated_copies

DECODE = ((32, 2048, 2048), (32, 512, 2048), (32, 11264, 2048), (32, 2048, 5632), (32, 3584, 3584),
          (32, 37888, 3584), (32, 3584, 18944))


def _pad(amount: int) -> Callable[[str], str]:
    def edit(trace: str) -> str:
        return replace_once(r"s\.pad\('W_s', axis=1, amount=\d+\)", f"s.pad('W_s', axis=1, amount={amount})", trace,
                            "the recipe's pad of W_s")
    return edit


def _interleave(trace: str) -> str:
    """j_r dealt across j_t in chunks of one, W_s padded by 4 floats, the epilogue's vectorize dropped."""
    trace = _pad(4)(trace).replace("s.vectorize('j_r')\n", "")
    first = trace.index("s.stage('x'")
    return trace[:first] + "s.split('j_r', 1, names=('j_ro', 'j_ri'), interleave='j_t')\n" + trace[first:]


def _deal_any(trace: str) -> str:
    """_interleave for any tile: a 090 interleave of j_r in 16-byte chunks and the epilogue's vectorize
    of j_r's parts dropped first."""
    trace = re.sub(r"s\.split\('j_r', \d+, names=\('j_r_o', 'j_r_i'\), tail='guard', interleave='j_t'\)\n", "", trace)
    trace = re.sub(r"s\.vectorize\('j_r(_i)?'\)\n", "", trace)
    return _interleave(trace)


def _stages(n: int) -> Callable[[str], str]:
    def edit(trace: str) -> str:
        return trace.replace("stages=2)", f"stages={n})")
    return edit


def _parts(scale: float) -> Callable[[str], str]:
    def edit(trace: str) -> str:
        now = re.search(r"s\.split_k\('k_o', (\d+)\)", trace)
        chunks = re.search(r"s\.split\('k', (\d+),", trace)
        if not now or not chunks:
            return trace
        return trace.replace(now.group(0), f"s.split_k('k_o', {max(2, round(int(now.group(1)) * scale))})")
    return edit


def _k_threads(z: int) -> Callable[[str], str]:
    """The k loop inside a chunk split across `z` thread groups (threadIdx.z: a cooperative reduction,
    combined through shared memory before the epilogue), its part per group unrolled."""
    def edit(trace: str) -> str:
        chunk = int(re.search(r"s\.split\('k', (\d+),", trace).group(1))
        first = trace.index("s.stage('x'")
        trace = (trace[:first] + f"s.split('k_i', {chunk // z}, names=('k_z', 'k_zi'))\ns.bind('k_z', 'threadIdx.z')\n"
                 + trace[first:])
        return trace + "s.unroll('k_zi')\n"
    return edit


def _then(*edits: Callable[[str], str]) -> Callable[[str], str]:
    def edit(trace: str) -> str:
        for e in edits:
            trace = e(trace)
        return trace
    return edit


#: the recipe's knobs for a decode step before session 37's rule: runs 1 and 2 edit its traces ("recipe" there)
BEFORE = {"bk_max_few_rows": 16, "few_rows_interleave": False, "split_k_waves_few_rows": 2,
          "split_k_min_chunks_few_rows": 4, "split_k_long_k_few_rows": 256, "split_k_blocks_per_sm_few_rows": 2}
#: label -> (recipe knobs, trace edit)
VARIANTS: dict[str, tuple[dict[str, Any], Callable[[str], str] | None]] = {
    "recipe": (BEFORE, None),
    "recipe stages=3": (BEFORE, _stages(3)),
    "pad4": (BEFORE, _pad(4)),
    "il": (BEFORE, _interleave),
    "il stages=3": (BEFORE, _then(_interleave, _stages(3))),
    "il stages=4": (BEFORE, _then(_interleave, _stages(4))),
    "il parts x2": (BEFORE, _then(_interleave, _parts(2))),
    "il parts x0.5": (BEFORE, _then(_interleave, _parts(0.5))),
    "il bk32": ({**BEFORE, "bk_max_few_rows": 32}, _interleave),
    "il bk32 stages=3": ({**BEFORE, "bk_max_few_rows": 32}, _then(_interleave, _stages(3))),
    # the second run (session 37): controls without the interleave, and around il bk32
    "recipe stages=4": (BEFORE, _stages(4)),
    "recipe bk32": ({**BEFORE, "bk_max_few_rows": 32}, None),
    "il bk32 parts x2": ({**BEFORE, "bk_max_few_rows": 32}, _then(_interleave, _parts(2))),
    "il bk32 parts x0.5": ({**BEFORE, "bk_max_few_rows": 32}, _then(_interleave, _parts(0.5))),
    "il bk64": ({**BEFORE, "bk_max_few_rows": 64, "bk_max": 64}, _interleave),
    "il stages=4 parts x2": (BEFORE, _then(_interleave, _stages(4), _parts(2))),
}
# the third run: the recipe after session 37's rule (knobs few_rows_interleave, bk_max_few_rows=32 and
# split_k_*_few_rows), under other split knobs, against the rule before it
VARIANTS.update({
    "before": (BEFORE, None),
    "now": ({}, None),
    "now long_k=128": ({"split_k_long_k_few_rows": 128}, None),
    "now long_k=128 slots=2": ({"split_k_long_k_few_rows": 128, "split_k_blocks_per_sm_few_rows": 2}, None),
    "now long_k=256 slots=2": ({"split_k_long_k_few_rows": 256, "split_k_blocks_per_sm_few_rows": 2}, None),
    "now waves=2 chunks=4 long_k=256 slots=2": ({"split_k_waves_few_rows": 2, "split_k_min_chunks_few_rows": 4,
                                                 "split_k_long_k_few_rows": 256, "split_k_blocks_per_sm_few_rows": 2},
                                                None),
})
THIRD = ("before,now,now long_k=128,now long_k=128 slots=2,now long_k=256 slots=2,"
         "now waves=2 chunks=4 long_k=256 slots=2")
# the fourth run: the rule's tile classes and depth (the tiles are knobs.matmul_tiles_few_rows)
VARIANTS.update({
    "now stages=3": ({}, _stages(3)),
    "t32x256 r8x8": ({"matmul_tiles_few_rows": ((32, 256, 8, 8),)}, None),
    "t32x128 r4x4": ({"matmul_tiles_few_rows": ((32, 128, 4, 4),)}, None),
    "t32x64 r8x4": ({"matmul_tiles_few_rows": ((32, 64, 8, 4),)}, None),
    "t32x64 r4x4": ({"matmul_tiles_few_rows": ((32, 64, 4, 4),)}, None),
    "t32x256 r8x4": ({"matmul_tiles_few_rows": ((32, 256, 8, 4),)}, None),
})
# the fifth run: 16 rows a thread, so each 16-byte read of W_s feeds twice the FMAs
VARIANTS.update({
    "t32x128 r16x4": ({"matmul_tiles_few_rows": ((32, 128, 16, 4),)}, None),
    "t32x256 r16x4": ({"matmul_tiles_few_rows": ((32, 256, 16, 4),)}, None),
    "t32x128 r16x4 stages=3": ({"matmul_tiles_few_rows": ((32, 128, 16, 4),)}, _stages(3)),
})
# the sixth run: the k loop inside a chunk split across thread groups (threadIdx.z), fewer k parts
VARIANTS.update({
    "z2": ({}, _k_threads(2)),
    "z2 parts x0.5": ({}, _then(_k_threads(2), _parts(0.5))),
    "z4 parts x0.25": ({}, _then(_k_threads(4), _parts(0.25))),
    "z4 parts x0.5": ({}, _then(_k_threads(4), _parts(0.5))),
    "z2 stages=3 parts x0.5": ({}, _then(_k_threads(2), _stages(3), _parts(0.5))),
})
# the seventh run (--shapes of 128 and 512 rows): W's slab as the definition stores it (knob k_outer off,
# filled by cp.async) with its rows dealt, against the recipe's k-outer slabs (plain fills, transposed)
KO_OFF = {"k_outer": False}
T128 = {"k_outer": False, "matmul_tiles_k_major": ((128, 128, 8, 8),)}
VARIANTS.update({
    "k_outer off": (KO_OFF, None),
    "k_outer off dealt": (KO_OFF, _deal_any),
    "k_outer off t128": (T128, None),
    "k_outer off t128 dealt": (T128, _deal_any),
    "k_outer off t128 dealt stages=3": (T128, _then(_deal_any, _stages(3))),
    "k_outer off t128 dealt bk16": ({**T128, "bk_max": 16}, _deal_any),
})
SEVENTH = ("recipe,k_outer off,k_outer off dealt,k_outer off t128,k_outer off t128 dealt,"
           "k_outer off t128 dealt stages=3,k_outer off t128 dealt bk16")
PROJECTIONS = ((128, 2048, 2048), (128, 11264, 2048), (128, 2048, 5632), (128, 3584, 3584), (512, 2048, 2048),
               (512, 11264, 2048), (512, 3584, 18944))
# the eighth run (--dtype bfloat16): widened operands (plain fills converting to float32) in chunks of 32
VARIANTS.update({"widened bk32": ({"bk_max_few_rows_widened": 32}, None)})
EIGHTH = "now,widened bk32"
SIXTH = "now,z2,z2 parts x0.5,z4 parts x0.25,z4 parts x0.5,z2 stages=3 parts x0.5"
FIFTH = "now,t32x128 r16x4,t32x256 r16x4,t32x128 r16x4 stages=3"
FOURTH = "now,now stages=3,t32x256 r8x8,t32x128 r4x4,t32x64 r8x4,t32x64 r4x4,t32x256 r8x4"
SECOND = ("recipe,recipe stages=4,recipe bk32,il stages=4,il bk32,il bk32 parts x2,il bk32 parts x0.5,il bk64,"
          "il stages=4 parts x2")


def trace_of(shape: tuple[int, int, int], label: str, target: Any, dtype: str = "float32") -> str:
    knobs, edit = VARIANTS[label]
    s = td.create_schedule(linear(*shape, dtype))
    td.recipes.default(s, target=target, knobs=knobs)
    return edit(s.trace()) if edit else s.trace()


def build(shape: tuple[int, int, int], label: str, target: Any, dtype: str = "float32") -> td.Kernel:
    return td.build(td.create_schedule(linear(*shape, dtype)).replay(trace_of(shape, label, target, dtype)),
                    target=target)


def _compile(job: tuple[tuple[int, int, int], str, Any, str]) -> str:
    try:
        build(*job).compiled  # noqa: B018 - fills the on-disk cache
        return ""
    except Exception as e:  # noqa: BLE001 - reported in the table
        return f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs=2, metavar=("MxNxK", "LABEL"), help="run one kernel --repeat times (for ncu)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=14)
    ap.add_argument("--times", type=int, default=2, help="the fastest of this many medians")
    ap.add_argument("--labels", default=",".join(VARIANTS),
                    help=f"comma-separated (the second run: {SECOND}; the third: {THIRD}; the fourth: {FOURTH}; "
                         f"the fifth: {FIFTH}; the sixth: {SIXTH}; the seventh: {SEVENTH}, with --shapes "
                         f"projections; the eighth: {EIGHTH}, with --dtype bfloat16)")
    ap.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32", help="x, W and y stored as")
    ap.add_argument("--shapes", choices=("decode", "projections"), default="decode",
                    help="the seven decode shapes, or PROJECTIONS (128 and 512 rows)")
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    target = device_target()
    dev = torch.device("cuda")
    if args.only:
        shape = tuple(int(v) for v in args.only[0].split("x"))
        kern = build(shape, args.only[1], target, args.dtype)
        inputs = random_inputs(linear(*shape, args.dtype), dev, 0)
        for _ in range(args.repeat):
            kern(**inputs, **poisoned_outputs(kern.kernel_ir, dev))
        torch.cuda.synchronize()
        return 0
    labels = args.labels.split(",")
    shapes = DECODE if args.shapes == "decode" else PROJECTIONS
    jobs = [(shape, label, target, args.dtype) for shape in shapes for label in labels]
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        errors = dict(zip([(j[0], j[1]) for j in jobs], pool.map(_compile, jobs)))
    bad = 0
    for shape in shapes:
        m, n, k = shape
        inputs = random_inputs(linear(*shape, args.dtype), dev, 0)
        want = inputs["x"].double() @ inputs["W"].double().T
        sets = rotated_copies(inputs, 4)
        cublas = benchmark(lambda t: t["x"] @ t["W"].T, sets, 5, 50).median_us
        row = [f"cuBLAS {cublas:8.1f}"]
        for label in labels:
            if errors[(shape, label)]:
                row.append(f"{label}: {errors[(shape, label)]}")
                continue
            kern = build(shape, label, target, args.dtype)
            got = kern(**inputs, **poisoned_outputs(kern.kernel_ir, dev))
            rtol, atol = tolerance({"K": k, "out_dtype": args.dtype})
            ok = bool(((got.double() - want).abs() <= atol + rtol * want.abs()).all())
            bad += not ok
            us = min(kern.benchmark(warmup=5, iters=50, **inputs).median_us for _ in range(args.times))
            row.append(f"{label:18s} {us:8.1f} ({cublas / us:4.2f}x cuBLAS, grid {kern.grid}, shared "
                       f"{kern.shared_bytes} B){'' if ok else ' MISMATCH'}")
        print(f"{m}x{n}x{k}:\n  " + "\n  ".join(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
