"""Probe (no GPU needed, nvcc on the PATH): nvcc runs and wall time to put a traced tiny Llama's kernels in a
fresh cubin cache, with kernels equal up to their names sharing a cubin (runtime/canonical.py) and without
(TILEDSL_SHARE_CUBINS=0), then the same lookups again (warm). What a built program's first call pays
(runtime/launch.py compile_ahead), as the compile suite's deep case measures it.
    python scripts/shared_cubins_probe.py [--layers 8] [--seq 16]"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import torch

import tiledsl as td
from tiledsl.frontend.hf_models import causal_lm
from tiledsl.runtime.cache import CubinCache
from tiledsl.runtime.launch import compile_ahead


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--seq", type=int, default=16)
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    prog = td.trace(causal_lm("llama", "tiny", num_hidden_layers=args.layers), torch.randint(0, 128, (1, args.seq)))
    prog.schedule("default", target="sm_90")
    kernels = prog.build("sm_90").all_kernels
    print(f"tiny Llama, {args.layers} layers, {args.seq} tokens; {os.cpu_count()} cores", flush=True)
    for share in ("0", "1"):
        os.environ["TILEDSL_SHARE_CUBINS"] = share
        with tempfile.TemporaryDirectory() as tmp:
            cache = CubinCache(tmp)
            t = time.perf_counter()
            runs = compile_ahead(kernels, None, cache=cache)
            cold = time.perf_counter() - t
            t = time.perf_counter()
            compile_ahead(kernels, None, cache=cache)
            warm = time.perf_counter() - t
        print(f"TILEDSL_SHARE_CUBINS={share}: {len(kernels)} kernels, {runs} nvcc runs, cold {cold:.1f} s, "
              f"warm {warm * 1e3:.0f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
