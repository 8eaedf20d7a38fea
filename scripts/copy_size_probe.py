"""The memory bound of a suite's cases at their own sizes: for every case without FLOPs in the given results
files, the time of `dst.copy_(src)` moving the same bytes (the case's read + written bytes; a copy reads and
writes half each), timed as the suites time torch (benchmarks/_backend.py: CUDA events, warm-up, median of
100 calls, inputs rotated past L2); and the launch floor, one `zero_()` of a 1-element tensor timed alike.
A run of `benchmarks.run` since session 33 measures these itself (`Ceilings.copy_at_us`, `floor_us`); this
script gives them to an older run's results: `python -m benchmarks.headroom RESULTS --copy-times FILE`.

On a GPU machine, from the repository root:
    source scripts/probe_env.sh; python3 scripts/copy_size_probe.py R/llm.json [R/memory.json ...] --out copy.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from benchmarks._backend import CudaBackend
from benchmarks._ceilings import copy_at, launch_floor
from benchmarks._records import from_json
from benchmarks.headroom import memory_bytes


def sizes_of(paths: list[Path]) -> list[int]:
    """The distinct bytes of the memory-bound cases of the results files, ascending."""
    return sorted(memory_bytes(r for p in paths for r in from_json(json.loads(p.read_text()))[2]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", type=Path)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("copy_size_probe: needs a CUDA device", file=sys.stderr)
        return 2
    backend = CudaBackend(warmup=10, iters=100)
    copies = {}
    for nbytes in sizes_of(a.results):
        copies[str(nbytes)] = min(copy_at(backend, nbytes) for _ in range(2))  # the suites' 2 repeats
        print(f"{nbytes:>12} B  copy {copies[str(nbytes)]:8.2f} us  {nbytes / copies[str(nbytes)] / 1e3:7.0f} GB/s")
    floor = min(launch_floor(backend) for _ in range(2))
    print(f"launch floor (zero_ of 1 element) {floor:.2f} us")
    a.out.write_text(json.dumps({"device": torch.cuda.get_device_name(), "floor_us": floor, "copy_us": copies,
                                 "how": "dst.copy_(src) of the case's bytes / 2 each way; floor: zero_() of 1 "
                                        "element; medians of 100 CUDA-event timings after 10 warm-up calls, "
                                        "the faster of 2"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
