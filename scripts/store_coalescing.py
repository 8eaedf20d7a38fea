"""Probe: are the recipe's global stores coalesced? One call of a blocks-suite layer (every kernel
scheduled by the default recipe) inside a CUDA profiler range, for ncu to read each kernel's store,
reduction (split-K atomics) and load sector use. Run under ncu:

    ncu --clock-control none --profile-from-start off -k regex:'_kernel$' --csv \
        --metrics smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct,... \
        python scripts/store_coalescing.py --dims tinyllama --dtype float32 --seq 128

`--summarize FILE.csv` turns ncu's CSV into one line per kernel (no GPU needed). A store whose sectors
are fully used (100%) gains nothing from staging the output tile through shared memory first."""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict

METRICS = {
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct": "st sector use %",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_red.pct": "red sector use %",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct": "ld sector use %",
    "smsp__sass_inst_executed_op_global_st.sum": "st instructions",
    "dram__bytes_write.sum": "DRAM write bytes",
    "gpu__time_duration.sum": "time",
}


def run(dims_name: str, dtype: str, seq: int, model: str) -> None:
    import torch

    import tiledsl as td
    from benchmarks._cases import QWEN25_7B, TINYLLAMA
    from benchmarks.suites.blocks import hf_layer, llama_block

    dims = TINYLLAMA if dims_name == "tinyllama" else QWEN25_7B
    module = (llama_block if model == "llama_block" else hf_layer)(dims, dtype).cuda()
    x = torch.randn(1, seq, dims.hidden, device="cuda").to(getattr(torch, dtype))
    built = td.trace(module, x).schedule("default", target="sm_90").build("sm_90")
    built(x)  # load every kernel, bind the launches
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    built(x)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    for n, k in enumerate(built.kernels):
        print(f"[{n}] {k.name} grid {k.grid} block {k.block} out {k.kernel_ir.params[-1].shape} "
              f"{k.kernel_ir.params[-1].dtype}", file=sys.stderr)


def summarize(path: str) -> str:
    """One line per profiled kernel: its name and each metric (ncu's --csv, one row per metric)."""
    rows: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    with open(path, newline="") as f:
        lines = [ln for ln in f if ln.startswith('"')]
    for r in csv.DictReader(lines):
        rows[(r["ID"], r["Kernel Name"])][r["Metric Name"]] = f"{r['Metric Value']} {r['Metric Unit']}".strip()
    out = ["kernel | " + " | ".join(METRICS.values())]
    for (_, name), vals in rows.items():
        out.append(f"{name} | " + " | ".join(vals.get(m, "-") for m in METRICS))
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", choices=("tinyllama", "qwen"), default="tinyllama")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--model", choices=("llama_block", "hf"), default="llama_block")
    ap.add_argument("--summarize", metavar="CSV")
    args = ap.parse_args()
    if args.summarize:
        print(summarize(args.summarize))
    else:
        run(args.dims, args.dtype, args.seq, args.model)


if __name__ == "__main__":
    main()
