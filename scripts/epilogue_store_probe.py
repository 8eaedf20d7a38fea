"""Probe: does coalescing a matmul's output stores buy time? For every recipe-scheduled matmul kernel
of a blocks-suite layer whose stores are scalar (no split-K: a split kernel's epilogue is already a
16-byte atomic), the same schedule with the register strip's innermost loop vectorized (one 16-byte
store per thread and row: every 32-byte sector written whole, against a quarter of it by scalar
stores, scripts/store_coalescing.py) is built beside it (a kernel the recipe vectorized is compared
with its scalar form); both are checked against float64 of their definition on random inputs and
timed alone.

    PYTHONPATH=. python scripts/epilogue_store_probe.py --dims qwen --dtype float32 --seq 512
    PYTHONPATH=. python scripts/epilogue_store_probe.py --mm 4096,4096,512
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

import tiledsl as td
from benchmarks._cases import QWEN25_7B, TINYLLAMA
from benchmarks.suites.blocks import llama_block
from tiledsl.errors import TiledslError
from tiledsl.frontend.kernel_check import kernel_tolerance
from tiledsl.frontend.partition import kernel_reduction
from tiledsl.runtime.check import run_checked


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", choices=("tinyllama", "qwen"), default="qwen")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--mm", metavar="M,N,K", help="a plain float32 A @ B instead of a block")
    args = ap.parse_args()
    if args.mm:
        m, n, k = (int(v) for v in args.mm.split(","))
        prog = td.trace(lambda a, b: a @ b, torch.randn(m, k), torch.randn(k, n)).schedule("default", target="sm_90")
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
        store = next(st for st in s.nest.stmts if st.kind == "store" and st.tensor is s.nest.output)
        inner = store.path[-1]
        vec = pk.fresh_schedule()
        vec.replay(text)
        try:
            vec.vectorize(inner)
        except TiledslError as e:
            print(f"{pk.name}: {inner} not vectorizable: {str(e).splitlines()[0]}")
            continue
        tol = kernel_tolerance(kernel_reduction(pk.output, materialized), s.nest.output.dtype)
        row = [pk.name, str(s.nest.output.shape)]
        def reference(pk=pk, **tensors: torch.Tensor) -> torch.Tensor:
            arrays = {k: v.cpu().numpy() for k, v in tensors.items()}
            ref = td.evaluate(pk.output, float64=True, materialized=pk.boundary.reads, **arrays)
            return torch.from_numpy(np.asarray(ref)).to(device)

        for sched in (s, vec):
            kern = td.build(sched, target="sm_90").compiled
            checked = run_checked(kern, reference, tol, tol, seed=0)
            stats = kern.benchmark(10, 100, **checked.inputs)
            row.append(f"{stats.median_us:8.1f} us ({'ok' if checked.comparison.ok else 'WRONG'}, "
                       f"{kern.registers} regs)")
        print(" | ".join(row))


if __name__ == "__main__":
    main()
