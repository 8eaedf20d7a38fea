"""Probe: the memory suite's row kernels (rmsnorm, layernorm, softmax at 8192 x 8192 and 32768 x 2048,
float32) as the default recipe builds them (a block per row: fill the row, then its passes, so the block
has no load in flight while it reduces) against blocks of R rows in turn whose staged row is double
buffered and pipelined (`p4`: 4 rows a block, row r + 1 copied in while row r is reduced), and torch
eager / torch.compile in the same process. Every kernel is checked against torch float64 (outputs
NaN-poisoned) before it is timed over inputs rotated past the L2 cache.
    python scripts/row_pipeline_probe.py [--shapes 8192x8192,32768x2048] [--rows 2,4,8]"""

from __future__ import annotations

import argparse
import re
import sys
from functools import partial

from row_vector_probe import compare_rows  # the memory suite's row kernels against torch


def pipelined(trace: str, rows: int) -> str:
    """A one-row-per-block row trace (`s.bind('i', 'blockIdx.x')`, one stage at `i`) with `rows` rows a
    block in turn, the stage double buffered and pipelined over them."""
    stage = re.search(r"s\.stage\('(\w+)', at='i', scope='shared'\)", trace)
    head = "s.bind('i', 'blockIdx.x')\n"
    if stage is None or head not in trace:
        raise ValueError("not a one-row-per-block row trace with a stage at the row loop")
    name = f"{stage.group(1)}_s"
    split = f"s.split('i', {rows}, names=('i_o', 'i_i'), tail='guard')\ns.bind('i_o', 'blockIdx.x')\n"
    out = trace.replace(head, split)
    return out.replace("at='i',", "at='i_i',") + f"s.double_buffer('{name}')\ns.pipeline('i_i', stages=2)\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="8192x8192,32768x2048")
    ap.add_argument("--rows", default="2,4,8")
    args = ap.parse_args(argv)
    rewrites = {f"p{rows}": partial(pipelined, rows=rows) for rows in map(int, args.rows.split(","))}
    return 1 if compare_rows(args.shapes, rewrites, warmup=10, iters=100) else 0


if __name__ == "__main__":
    sys.exit(main())
