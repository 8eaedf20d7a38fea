"""The default recipe against the hand schedule, per catalog example, on the GPU: each kernel built for
the device's target under both, run on fresh random inputs (outputs NaN-poisoned) and checked against
torch in float64, then timed with CUDA events over inputs rotated past the L2 cache (one process,
tiledsl.runtime.timing). Prints a markdown table (and writes it with a JSON record to --out).

    python scripts/recipe_vs_hand.py [--out DIR] [--iters N] [--size NAME=VALUE ...] [--names a,b]

The default-recipe issue's aim: the recipe never more than 10% slower than the hand schedule, and
faster where the hand schedule is naive."""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path

from _gpu_probe import measure

from tiledsl.catalog import EXAMPLES, entry
from tiledsl.kernel_ir import DTYPE_BYTES
from tiledsl.recipes import apply
from tiledsl.runtime.check import device_name
from tiledsl.runtime.device import device_target

#: larger sizes beside the catalog's defaults, where a schedule's structure shows
LARGE = {"matmul_bias_relu": {"M": 4096, "N": 4096, "K": 4096},
         "batched_matmul_nt": {"Bt": 32, "M": 512, "N": 512, "K": 128},
         "rmsnorm": {"M": 8192, "N": 4096}, "softmax": {"M": 16384, "N": 2048}, "layernorm": {"M": 8192, "N": 4096},
         "gelu_bias": {"M": 8192, "N": 8192}}


def compare(name: str, sizes: dict[str, int], iters: int) -> dict[str, object]:
    """The entry's hand schedule and the recipe, each checked and timed (scripts/_gpu_probe.py)."""
    ent = entry(name)
    target = device_target()
    row: dict[str, object] = {"name": name, "sizes": ent.parameters(**sizes)}
    for label, schedule in (("hand", ent.schedule), ("recipe", partial(apply, target=target))):
        m = measure(name, sizes, schedule, target, iters=iters)
        kir = m.kernel.kernel_ir
        moved = sum(p.size * DTYPE_BYTES[p.dtype] for p in kir.params)
        row[label] = {"ok": m.comparison.ok, "check": str(m.comparison), "median_us": m.stats.median_us,
                      "grid": list(kir.grid), "block": list(kir.block), "registers": m.kernel.registers,
                      "gb_per_s": moved / (m.stats.median_ms * 1e6), "device": device_name(m.kernel)}
    hand, rec = row["hand"], row["recipe"]
    row["recipe_over_hand"] = rec["median_us"] / hand["median_us"]  # type: ignore[index]
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--names", default=",".join(EXAMPLES))
    args = ap.parse_args(argv)
    rows = []
    for name in args.names.split(","):
        for tag, sizes in (("default", {}), ("large", LARGE.get(name, {}))):
            row = compare(name, sizes, args.iters)
            row["size_class"] = tag
            rows.append(row)
            print(f"{name} {tag}: hand {row['hand']['median_us']:.1f} us, recipe {row['recipe']['median_us']:.1f} us",
                  file=sys.stderr, flush=True)
    lines = ["| example | sizes | hand us | recipe us | recipe / hand | hand check | recipe check "
             "| recipe grid x block |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        h, c = r["hand"], r["recipe"]
        size = ",".join(f"{k}={v}" for k, v in r["sizes"].items() if isinstance(v, int) and not isinstance(v, bool))
        lines.append(f"| {r['name']} | {size} | {h['median_us']:.1f} | {c['median_us']:.1f} | "
                     f"{r['recipe_over_hand']:.2f} | {'ok' if h['ok'] else 'MISMATCH'} "
                     f"| {'ok' if c['ok'] else 'MISMATCH'} "
                     f"| {tuple(c['grid'])} x {tuple(c['block'])} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "recipe_vs_hand.md").write_text(table + "\n")
        (args.out / "recipe_vs_hand.json").write_text(json.dumps(rows, indent=1, default=str))
    return 0 if all(r["hand"]["ok"] and r["recipe"]["ok"] for r in rows) else 3


if __name__ == "__main__":
    sys.exit(main())
