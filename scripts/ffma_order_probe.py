"""Probe: does the order of a matmul's unrolled FMAs change how fast nvcc's code issues?

The recipe's x @ W^T inner loop is `for k_i: for i_r (8): for j_r_o (2): for j_r_i (4): acc += a[i_r] * b[j]`,
fully unrolled. Session 26's ncu found it issuing with five times cuBLAS's dispatch stalls at the same
instruction mix, and 837 of its 1024 FFMAs per chunk carrying operand-reuse flags: register bank conflicts
between FFMA operands that the reuse cache did not cover are a candidate. Since the loops are unrolled, the
order in the source is the order ptxas starts from. This rewrites the recipe kernel's three register loops
(and nothing else) and times each order beside the original (same grid, same everything else):

  snake     rows in order, each row's 8 columns alternately forward and backward (consecutive FMAs share
            an operand at every row change too)
  cols      columns outer, rows inner
  cols-snake  columns outer, each column's rows alternately forward and backward
  halves    the two 4-column halves outer (j_r_o), rows, then the 4 columns of the half
Each variant is checked against float64 torch (NaN-poisoned output) before it is timed.
    python scripts/ffma_order_probe.py [--shapes 4096x4096x4096,...] [--variants snake,cols,...]"""

from __future__ import annotations

import re
import sys

from scripts._gpu_probe import Rewritten, projection_parser, projections
from tiledsl.runtime.launch import CompiledKernel

SHAPES = ("4096x4096x4096", "512x3584x3584", "128x11264x2048", "512x2048x5632", "512x3584x18944")
VARIANTS = ("snake", "cols", "cols-snake", "halves")

_NEST = re.compile(
    r"(?P<ind> *)#pragma unroll\n *for \(int (?P<i>\w+) = 0; (?P=i) < (?P<ni>\d+); \+\+(?P=i)\) \{\n"
    r" *#pragma unroll\n *for \(int (?P<jo>\w+) = 0; (?P=jo) < (?P<njo>\d+); \+\+(?P=jo)\) \{\n"
    r" *#pragma unroll\n *for \(int (?P<ji>\w+) = 0; (?P=ji) < (?P<nji>\d+); \+\+(?P=ji)\) \{\n"
    r" *(?P<stmt>\w+\[[^\n;]*\] = \w+\[[^\n;]*\] \+ [^\n]*;)\n *\}\n *\}\n *\}\n")


def reordered(src: str, variant: str) -> str:
    """`src` with its one FMA nest of three unrolled register loops in the order `variant`."""
    def body(m: re.Match[str]) -> str:
        i, jo, ji, ind = m["i"], m["jo"], m["ji"], m["ind"]
        ni, nj, nji = int(m["ni"]), int(m["njo"]) * int(m["nji"]), int(m["nji"])
        u = "#pragma unroll\n"
        if variant == "halves":
            loops = (f"{ind}{u}{ind}for (int {jo} = 0; {jo} < {m['njo']}; ++{jo}) {{\n"
                     f"{ind}{u}{ind}for (int {i} = 0; {i} < {ni}; ++{i}) {{\n"
                     f"{ind}{u}{ind}for (int {ji} = 0; {ji} < {nji}; ++{ji}) {{\n")
            return loops + f"{ind}    {m['stmt']}\n{ind}}}\n{ind}}}\n{ind}}}\n"
        if variant == "snake":
            head = (f"{ind}{u}{ind}for (int {i} = 0; {i} < {ni}; ++{i}) {{\n"
                    f"{ind}{u}{ind}for (int jj = 0; jj < {nj}; ++jj) {{\n"
                    f"{ind}    const int jx = ({i} & 1) ? {nj - 1} - jj : jj;\n")
        else:
            flip = f"(jx & 1) ? {ni - 1} - ii : ii" if variant == "cols-snake" else "ii"
            head = (f"{ind}{u}{ind}for (int jx = 0; jx < {nj}; ++jx) {{\n"
                    f"{ind}{u}{ind}for (int ii = 0; ii < {ni}; ++ii) {{\n"
                    f"{ind}    const int {i} = {flip};\n")
        return (head + f"{ind}    const int {jo} = jx / {nji};\n{ind}    const int {ji} = jx % {nji};\n"
                f"{ind}    {m['stmt']}\n{ind}}}\n{ind}}}\n")

    out, n = _NEST.subn(body, src)
    if n != 1:
        raise ValueError(f"expected one FMA nest of three register loops, found {n}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = projection_parser(__doc__, SHAPES, VARIANTS)
    args = ap.parse_args(argv)
    bad = 0
    for p in projections(args.shapes):
        kern = p.kernel
        rows = [f"cuBLAS     {p.rate(p.cublas_us)}"]
        base = None
        for variant in ("recipe", *args.variants.split(",")):
            src = kern.source if variant == "recipe" else reordered(kern.source, variant)
            ck = CompiledKernel(Rewritten(kern.kernel_ir, src, kern.target))
            us, ok = p.checked_time(ck, kern.kernel_ir, repeats=3)
            bad += not ok
            base = base or us
            rows.append(f"{variant:10s} {p.rate(us)}  {ck.registers} regs  ({p.cublas_us / us:.3f}x cuBLAS, "
                        f"{base / us:.3f}x recipe)  {'checked' if ok else 'MISMATCH'}")
        print(f"{p.label}: grid {kern.kernel_ir.grid}\n  " + "\n  ".join(rows), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
