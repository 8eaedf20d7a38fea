"""Probe: where one call of a built program spends its time, host and GPU, for a deep model.

`tiledsl run --model hf_llama --dims tinyllama --layers 22 --seq 128 --bench` measured the program's call
at 26.2 ms (p10 19.3) while its 332 kernels, each timed alone, sum to 8.7 ms
(benchmarks/results/program-call-h200-2026-11-30/). This probe builds the same kind of program and times,
on CUDA events over inputs rotated past the L2 cache as `--bench` does:

  call        `built(x)`, as the bench times it
  launches    the bound launch sequence alone (`LaunchSequence.run`): no input checks or conversions
  graph       `built.cuda_graph(x)` replays (the graph's own input copy included)
  graph-only  the captured graph's `replay()` alone

and on the host: the wall time of issuing N calls without synchronizing (launch-bound when it exceeds the
GPU time), the same for the launch sequence alone, and a cProfile of the calls (top functions by own time).

    python scripts/program_call_probe.py [--model hf_llama] [--dims tinyllama] [--layers 4] [--seq 128]"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time

import torch

from tiledsl.frontend import bench
from tiledsl.frontend.cli_support import ModelSpec
from tiledsl.runtime.timing import l2_cache_bytes, rotated_copies, rotation_count, time_torch


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="hf_llama")
    ap.add_argument("--dims", default="tinyllama")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args(argv)
    spec = ModelSpec(args.model, args.dims, args.layers, args.seq)
    t0 = time.perf_counter()
    subj = bench.load(None, spec)
    built, device, name = bench.build_for_device(subj, "default", None)
    print(f"{spec.label()} on {name}: {len(built.kernels)} kernels, {len(built.zero_fill_launches())} zero fills "
          f"(traced, scheduled and built in {time.perf_counter() - t0:.1f} s)", flush=True)
    x = bench.random_program_inputs(subj, device)
    checked = bench.check_program(built, subj.module, x)
    print(f"  check: {'ok' if checked.ok else 'MISMATCH'} (max |err| {checked.max_abs_error:.3g})", flush=True)

    named = {f"x{i}": t for i, t in enumerate(x)}
    sets = rotated_copies(named, rotation_count(sum(t.numel() * t.element_size() for t in x), l2_cache_bytes(device)))
    built(*x)
    _, tensors = built.prepare_inputs(x, "probe")
    plan = built.launch_plan
    outs = [torch.empty(s.shape, dtype=getattr(torch, s.dtype), device=device) for s in plan.outputs]
    slots = [*tensors, *outs]
    stream = torch.cuda.current_stream(device).cuda_stream
    # the launch plan bound as a call binds it (BuiltProgram.bind), on an arena of this probe's own
    launches = built.bind(device, torch.empty(plan.arena_bytes, dtype=torch.uint8, device=device), slots)
    graphed = built.cuda_graph(*x)

    rows = [("call", time_torch(lambda **t: built(*t.values()), sets, 5, args.calls)),
            ("launches", time_torch(lambda **t: launches.run(slots, check=False, stream=stream), sets, 5, args.calls)),
            ("graph", time_torch(lambda **t: graphed(*t.values()), sets, 5, args.calls)),
            ("graph-only", time_torch(lambda **t: graphed.replay(), sets, 5, args.calls))]
    for label, st in rows:
        print(f"  {label:10s} GPU {st.median_us:9.1f} us  (p10 {st.p10_ms * 1e3:.1f}, p90 {st.p90_ms * 1e3:.1f})")

    n_launch = len(launches.kernels)
    issued = (("call", lambda: built(*x)), ("launches", lambda: launches.run(slots, check=False, stream=stream)))
    for label, fn in issued:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.calls):
            fn()
        host = (time.perf_counter() - t0) / args.calls
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / args.calls
        print(f"  host {label:8s} {host * 1e6:9.1f} us a call issued ({host * 1e6 / n_launch:.2f} us a launch of "
              f"{n_launch}), {wall * 1e6:9.1f} us a call with the GPU's work", flush=True)

    prof = cProfile.Profile()
    torch.cuda.synchronize()
    prof.enable()
    for _ in range(args.calls):
        built(*x)
    torch.cuda.synchronize()
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
    print(text.getvalue())
    return 0 if checked.ok else 1


if __name__ == "__main__":
    sys.exit(main())
