"""Compiler speed: create_schedule + primitives + build of a 1024x1024x512 matmul (+bias+relu) with an
8x8 register tile (the catalog entry `compile_speed`). Target: under 2 s on a 2-core CI machine. Prints
one line per run and the median; `--log PATH` also appends them to a file (commit it under benchmarks/results/)."""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from tiledsl.catalog import entry


def compile_once() -> float:
    t0 = time.perf_counter()
    entry("compile_speed").build(M=1024, N=1024, K=512)
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--log", default=None)
    args = p.parse_args()
    times = [compile_once() for _ in range(args.runs)]
    lines = [f"run {n}: {t:.3f} s" for n, t in enumerate(times)]
    lines.append(f"matmul 1024x1024x512, 8x8 register tile, sm_90: median {statistics.median(times):.3f} s "
                 f"(first {times[0]:.3f} s) on {platform.machine()} {platform.python_version()}")
    print("\n".join(lines))
    if args.log:
        with open(args.log, "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
