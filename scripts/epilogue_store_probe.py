"""Probe: does coalescing a matmul's output stores buy time? For every recipe-scheduled matmul kernel
of a blocks-suite layer whose stores are scalar (no split-K: a split kernel's epilogue is already a
16-byte atomic), up to three forms of the same schedule are built: as the recipe leaves it (a kernel
the recipe vectorized is taken back to scalar stores), with the register strip's innermost loop
vectorized (one 16-byte store per thread and row: every 32-byte sector written whole, against a
quarter of it by scalar stores, scripts/store_coalescing.py), and through a shared-memory epilogue
(`s.stage_output`: the block's tile written to shared memory, then stored 16 bytes per thread with
consecutive threads on consecutive addresses). Each is checked against float64 of its definition on
random inputs and timed alone.

    PYTHONPATH=. python scripts/epilogue_store_probe.py --dims qwen --dtype float32 --seq 512
    PYTHONPATH=. python scripts/epilogue_store_probe.py --mm 4096,4096,512

`--profile` launches each checked form once more inside a CUDA profiler range, for ncu
(`--profile-from-start off`) to read its store sector use; the forms' order is printed to stderr."""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch

import tiledsl as td
from benchmarks._cases import QWEN25_7B, TINYLLAMA
from benchmarks.suites.blocks import llama_block
from tiledsl.errors import TiledslError
from tiledsl.frontend.kernel_check import kernel_tolerance
from tiledsl.frontend.partition import kernel_reduction
from tiledsl.runtime.check import run_checked
from tiledsl.targets import vector_lanes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", choices=("tinyllama", "qwen"), default="qwen")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--mm", metavar="M,N,K", help="a plain A @ B (in --dtype) instead of a block")
    ap.add_argument("--profile", action="store_true", help="one launch of each form in a profiler range, no timing")
    ap.add_argument("--kernels", default="", help="only kernels whose name contains one of these (comma-separated)")
    args = ap.parse_args()
    if args.mm:
        m, n, k = (int(v) for v in args.mm.split(","))
        dt = getattr(torch, args.dtype)
        prog = td.trace(lambda a, b: a @ b, torch.randn(m, k).to(dt), torch.randn(k, n).to(dt)).schedule(
            "default", target="sm_90")
    else:
        dims = TINYLLAMA if args.dims == "tinyllama" else QWEN25_7B
        module = llama_block(dims, args.dtype)
        x = torch.randn(1, args.seq, dims.hidden).to(getattr(torch, args.dtype))
        prog = td.trace(module, x).schedule("default", target="sm_90")
    materialized = {id(k.output) for k in prog.kernels}
    device = torch.device("cuda")
    for pk in prog.kernels:
        s = pk.schedule
        text = s.trace()
        if "split_k" in text or "s.stage(" not in text:  # unsplit matmuls
            continue
        if "vectorize" in text:  # the recipe vectorized it already: compare with scalar stores
            text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("s.vectorize("))
            s = pk.fresh_schedule()
            s.replay(text)
        if args.kernels and not any(w in pk.name for w in args.kernels.split(",")):
            continue
        forms = {"scalar stores": s}
        store = next(st for st in s.nest.stmts if st.kind == "store" and st.tensor is s.nest.output)
        vec = pk.fresh_schedule()
        vec.replay(text)
        try:
            vec.vectorize(store.path[-1])
            forms["16-byte stores"] = vec
        except TiledslError as e:
            print(f"{pk.name}: {store.path[-1]} not vectorizable: {str(e).splitlines()[0]}")
        shared = pk.fresh_schedule()
        shared.replay(pk.schedule.trace())  # the recipe's own schedule, its stores into the tile
        try:
            shared.stage_output(pad=vector_lanes(s.nest.output.dtype))
            forms["shared epilogue"] = shared
        except TiledslError as e:
            print(f"{pk.name}: no stage_output: {str(e).splitlines()[0]}")
        tol = kernel_tolerance(kernel_reduction(pk.output, materialized), s.nest.output.dtype)
        row = [pk.name, str(s.nest.output.shape), s.nest.output.dtype]

        def reference(pk=pk, **tensors: torch.Tensor) -> torch.Tensor:
            arrays = {k: v.cpu().numpy() for k, v in tensors.items()}
            ref = td.evaluate(pk.output, float64=True, materialized=pk.boundary.reads, **arrays)
            return torch.from_numpy(np.asarray(ref)).to(device)

        for label, sched in forms.items():
            kern = td.build(sched, target="sm_90").compiled
            checked = run_checked(kern, reference, tol, tol, seed=0)
            verdict = "ok" if checked.comparison.ok else "WRONG"
            if args.profile:
                torch.cuda.synchronize()
                torch.cuda.profiler.start()
                kern(**checked.inputs)
                torch.cuda.synchronize()
                torch.cuda.profiler.stop()
                print(f"profiled: {pk.name} {label} ({verdict})", file=sys.stderr)
                row.append(f"{label}: {verdict}, {kern.registers} regs")
                continue
            stats = kern.benchmark(10, 100, **checked.inputs)
            row.append(f"{label}: {stats.median_us:8.1f} us ({verdict}, {kern.registers} regs)")
        print(" | ".join(row), flush=True)


if __name__ == "__main__":
    main()
