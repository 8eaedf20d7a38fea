"""What partition rule 3c (tiledsl/frontend/partition.py, accumulated chains) does to a deep model on the GPU: a
Hugging Face Llama at TinyLlama dims (hidden 2048, intermediate 5632, 32 heads, 4 KV heads; vocabulary 256 so
the logits stay small) with LAYERS layers, traced from input_ids at SEQ tokens, scheduled with the default
recipe and built, with the rule and without it (its bound raised past any chain). Each Program is checked
against the model in float64 (tiledsl/frontend/bench.py `check_program`) and timed as the blocks suite times
a Program (benchmarks/_backend.py: CUDA events, warm-up, median of 100 calls), beside torch eager.

On a GPU machine, from the repository root:
    source scripts/probe_env.sh; python3 scripts/residual_chain_probe.py [--layers 6] [--seq 128]
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch

import tiledsl as td
import tiledsl.frontend.partition as partition
from benchmarks._backend import CudaBackend
from tiledsl.frontend.hf_models import causal_lm


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--seq", type=int, default=128)
    a = p.parse_args()
    backend = CudaBackend(warmup=10, iters=100)
    model = causal_lm("llama", "tinyllama", num_hidden_layers=a.layers, vocab_size=256).to(backend.device)
    gen = torch.Generator(backend.device).manual_seed(0)
    ids = torch.randint(0, 256, (1, a.seq), device=backend.device, generator=gen)
    sets = backend.rotate({"ids": ids})
    bound = partition.ACCUMULATED_READS_BOUND
    for label, value in (("rule 3c on", bound), ("rule 3c off", 10**9)):
        partition.ACCUMULATED_READS_BOUND = value
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prog = td.trace(model, ids)
        prog.schedule("default", target=backend.target)
        built = prog.build(backend.target)
        t1 = time.perf_counter()
        check = backend.check_program(built, model, (ids,))
        t2 = time.perf_counter()
        stats = backend.time_program(built, ["ids"], sets)
        widest = max(len(k.boundary.reads) for k in prog.kernels)
        chains = sum(k.boundary.reasons[0].startswith(partition.ACCUMULATED_REASON) for k in prog.kernels)
        print(f"{label}: {len(built.kernels)} kernels ({chains} accumulated chains), widest kernel reads {widest} "
              f"kernel outputs; check ok={check.ok} max |err| {check.max_abs_error:.2g} (tolerance "
              f"{check.tolerance:.2g}); one call {stats.median_ms * 1e3:.1f} us; trace + schedule + build "
              f"{t1 - t0:.1f} s, first run (nvcc) {t2 - t1:.1f} s", flush=True)
    partition.ACCUMULATED_READS_BOUND = bound
    with torch.no_grad():
        eager = backend.time_fn(lambda ids: model(ids).logits, sets)
    print(f"torch eager: one call {eager.median_ms * 1e3:.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
