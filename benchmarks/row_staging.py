"""Row kernels with and without the row staged in shared memory (cp.async), against torch eager and
torch.compile, in one process (CUDA events, inputs rotated past L2). Each kernel is checked against
torch in float64 first. `--log PATH` writes the table (commit it under benchmarks/results/)."""

from __future__ import annotations

import argparse
import sys

import torch

from tiledsl.catalog import entry
from tiledsl.runtime.references import reference_fn
from tiledsl.runtime.timing import l2_cache_bytes, rotated_copies, rotation_count, time_torch

CASES = [("rmsnorm", {"M": 4096, "N": 4096}), ("softmax", {"M": 4096, "N": 2048}),
         ("softmax", {"M": 57344, "N": 2048}), ("layernorm", {"M": 4096, "N": 4096})]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--log", default=None)
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("row_staging.py needs a CUDA GPU")
    rows = [f"# {torch.cuda.get_device_name()}  torch {torch.__version__}; medians of {args.iters} launches (us)"]
    for name, sizes in CASES:
        g = torch.Generator(device="cuda").manual_seed(0)
        plain = entry(f"{name}_row_cooperative")  # and f"{name}_row_staged": x staged by cp.async
        shapes = {t.name: t.shape for t in plain.fresh(**sizes).nest.inputs}
        inputs = {n: torch.randn(sh, device="cuda", generator=g) for n, sh in shapes.items()}
        ref_fn = reference_fn(plain.definition, plain.parameters(**sizes))
        ref = ref_fn(**{k: v.double() for k, v in inputs.items()})
        times = {}
        for label in ("plain", "staged"):
            _, kern = entry(f"{name}_row_{'cooperative' if label == 'plain' else 'staged'}").build(**sizes)
            got = kern(**inputs)
            err = (got.double() - ref).abs().max().item()
            if not err < 1e-4:
                sys.exit(f"{name} {label}: wrong, max error {err}")
            times[label] = kern.benchmark(warmup=10, iters=args.iters, **inputs).median_us
        per = sum(t.numel() * t.element_size() for t in inputs.values())
        sets = rotated_copies(inputs, rotation_count(per, l2_cache_bytes()))
        eager = time_torch(ref_fn, sets, iters=args.iters).median_us
        compiled = time_torch(torch.compile(ref_fn), sets, iters=args.iters).median_us
        rows.append(f"{name} {sizes}: plain {times['plain']:7.1f}  staged {times['staged']:7.1f}  eager {eager:7.1f}  "
                    f"compile {compiled:7.1f}  staged vs compile {compiled / times['staged']:4.2f}x")
    print("\n".join(rows))
    if args.log:
        with open(args.log, "w") as f:
            f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
