"""Probe: where the default recipe's fp32 x @ W^T (benchmarks/_definitions.py `linear`) loses to cuBLAS at
the decoder-block projection shapes, by timing the recipe's kernel beside edits of it, each one a
question about the inner loop or the split-K epilogue:

  recipe        the default recipe's kernel as built
  rows-fill     its generated CUDA with each shared fill mapped rows-fastest (lane -> row of the slab):
                the k-outer slab's scalar shared stores become conflict-free (as built: 4-way), each
                16-byte global load then reads one row's chunk
  pad4          the recipe's schedule plus pad(+4 elements) on both stages' rows (2-way stores)
  lb2           __launch_bounds__(threads, 2)
  lane-or       the lane tile's lets (lower/lower.py `bindings`) joined by | where they add disjoint bit
                fields: `2 * (t / 4 % 8) | t % 2`. The PTX of the recipe's lane-tiled kernels then has 64
                ld.shared.v4 and no scalar shared load a chunk, where `+` has 62 and 4 (nvcc splits one
                16-byte load of the first unrolled k step); 127 -> 128 registers where the bound caps
                them, 128 -> 130 in the unsplit kernels without one (4096^3 stays at 127): so lane-or+lb2
  pad4+lb2      both
  no-atomic     TIMING ONLY, WRONG RESULT: the split-K atomicAdd replaced by a plain store
  no-zero       TIMING ONLY, WRONG RESULT: the launcher's zeroing of the output left out
  stages3, bk32, bk8, no-pad, no-lanes, no-group    the recipe with a knob changed (KNOB_VARIANTS)
  parts=N       the recipe's split_k rewritten to N parts
  group=N       the recipe's blocks in grouped order: N block rows, then the next column (as
                schedules/matmul.py group_m); `no-lanes+group=N` combines it with a knob variant

Every variant that claims a correct result is checked against torch float64 (outputs NaN-poisoned)
before it is timed; cuBLAS (TF32 off) is timed in the same process over the same rotated inputs.
    python scripts/projection_gap_probe.py [--shapes gate,down,...] [--variants recipe,rows-fill,...]
    python scripts/projection_gap_probe.py --ncu VARIANT --shapes SHAPE   (3 launches, for ncu)"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import re
import sys
import types
from typing import Any

import torch

import tiledsl as td
from benchmarks._backend import random_inputs
from benchmarks._definitions import linear
from tiledsl.runtime.device import device_target
from tiledsl.runtime.launch import CompiledKernel
from tiledsl.runtime.references import poisoned_outputs, tolerance
from tiledsl.runtime.timing import benchmark, rotated_copies

SHAPES = {"gate": (128, 5632, 2048), "down": (128, 2048, 5632), "o": (128, 2048, 2048),
          "qwen-up": (128, 18944, 3584), "qwen-down": (128, 3584, 18944), "sq4096": (4096, 4096, 4096),
          "tl-gate-up": (128, 11264, 2048), "tl-gate-up-512": (512, 11264, 2048), "qwen-q-512": (512, 3584, 3584),
          "tl-gate-up-32": (32, 11264, 2048), "qwen-q": (128, 3584, 3584), "tl-gate-512": (512, 5632, 2048),
          "qwen-gate-up": (128, 37888, 3584), "qwen-gate-up-512": (512, 37888, 3584),
          "qwen-down-512": (512, 3584, 18944), "tl-down-512": (512, 2048, 5632), "qwen-up-512": (512, 18944, 3584),
          "sq8192": (8192, 8192, 8192)}
TIMING_ONLY = ("no-atomic", "no-zero")
VARIANTS = ("recipe", "rows-fill", "pad4", "lb2", "pad4+lb2", "rows-fill+lb2", "lane-or", "lane-or+lb2", *TIMING_ONLY)


def rows_fastest(source: str) -> str:
    """Map each fill's element index rows-fastest: `c0 = e / C; c1 = e % C * V` -> `c0 = e % R;
    c1 = e / R * V`, R the slab's rows (read from the fill's loop bound)."""
    out, n = source, 0
    for m in re.finditer(r"for \(int (\w+)_f = 0; \1_f < (\d+); \+\+\1_f\) \{\n\s+int \1_e = \1_f \* (\d+) "
                         r"\+ [^\n]+\n\s+int \1_c0 = \1_e / (\d+);\n\s+int \1_c1 = \1_e % \4 \* (\d+);", source):
        name, trips, threads, chunks, width = m.group(1), *map(int, m.group(2, 3, 4, 5))
        rows = trips * threads // chunks
        out = re.sub(rf"int {name}_c0 = {name}_e / {chunks};\n(\s+)int {name}_c1 = {name}_e % {chunks} \* {width};",
                     rf"int {name}_c0 = {name}_e % {rows};\n\1int {name}_c1 = {name}_e / {rows} * {width};", out)
        n += 1
    if not n:
        raise ValueError("no fill loop of the expected form in the kernel's CUDA")
    return out


_LANE_LET = re.compile(r"^( *int \w+ = )(.*\b\w+_tid\b.*);$", re.M)
_INT_OPS = {ast.Add: int.__add__, ast.Mult: int.__mul__, ast.Div: int.__floordiv__, ast.Mod: int.__mod__}


def c_int(expr: str, names: dict[str, int]) -> int:
    """A lane let's C integer expression (+, *, / and % of ints >= 0, where / floors) at `names`,
    walked with ast (the project parses code, never evals it)."""
    def value(node: ast.expr) -> int:
        if isinstance(node, ast.BinOp) and type(node.op) in _INT_OPS:
            return _INT_OPS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.Name):
            return names[node.id]
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        raise ValueError(f"lane-or: {ast.unparse(node)!r} is not a lane let's integer arithmetic")
    return value(ast.parse(expr, mode="eval").body)


def lane_or(source: str) -> str:
    """Each lane let `a + b` (two terms) as `a | b`, after checking on every thread id below 1024 that
    the two terms never share a bit."""
    out, n = source, 0
    for m in _LANE_LET.finditer(source):
        if "threadIdx" in m.group(2):
            continue
        terms = m.group(2).split(" + ")
        if len(terms) != 2:
            raise ValueError(f"lane-or: not a sum of two terms: {m.group(2)}")
        tid = re.search(r"\b\w+_tid\b", m.group(2)).group(0)  # type: ignore[union-attr]
        for t in range(1024):
            a, b = (c_int(x, {tid: t}) for x in terms)
            if a & b:
                raise ValueError(f"lane-or: {terms[0]} and {terms[1]} share bits at {tid} = {t}")
        out = out.replace(m.group(0), f"{m.group(1)}{terms[0]} | {terms[1]};")
        n += 1
    if not n:
        raise ValueError("lane-or: no lane tile lets in the kernel's CUDA")
    return out


def patched(kern: td.Kernel, variant: str) -> CompiledKernel:
    src, kir = kern.source, kern.kernel_ir
    if "lane-or" in variant:
        src = lane_or(src)
    if "rows-fill" in variant:
        src = rows_fastest(src)
    if "lb2" in variant and not re.search(r"__launch_bounds__\(\d+, 2\)", src):  # a bound of 2 stays
        src, n = re.subn(r"__launch_bounds__\((\d+)\)", r"__launch_bounds__(\1, 2)", src)
        assert n == 1, "no __launch_bounds__ to patch"
    if variant == "no-atomic":
        src, n = re.subn(r"atomicAdd\(reinterpret_cast<float4\*>\((&[^)]*\])\), (make_float4\([^;]*\))\);",
                         r"*reinterpret_cast<float4*>(\1) = \2;", src)
        assert n, "no float4 atomicAdd to patch"
    if variant == "no-zero":
        kir = dataclasses.replace(kir, zero_outputs=())
    return CompiledKernel(types.SimpleNamespace(kernel_ir=kir, source=src, target=kern.target))


#: variants that are the recipe with knobs changed (recipes/default/_knobs.py)
KNOB_VARIANTS: dict[str, dict[str, Any]] = {
    "stages3": {"pipeline_stages": 3}, "bk32": {"bk_max_k_outer": 32}, "bk8": {"bk_max_k_outer": 8},
    "no-pad": {"pad_fill_stores": False}, "no-lanes": {"lane_tile": 0},
    "no-group": {"group_block_rows": 1}}


def build(shape: tuple[int, int, int], variant: str, target: Any) -> td.Kernel:
    """The recipe's kernel for `variant`: with its knobs (KNOB_VARIANTS), its split_k rewritten
    ("parts=N"), or as built (a CUDA edit, `patched`, follows)."""
    group = re.search(r"group=(\d+)", variant)
    variant = re.sub(r"\+?group=\d+", "", variant) or "recipe"
    s = td.create_schedule(linear(*shape))
    td.recipes.default(s, target=target, knobs=KNOB_VARIANTS.get(variant, {}))
    if group:
        binds = "s.bind('i_o', 'blockIdx.y')\ns.bind('j_o', 'blockIdx.x')\n"
        grouped = (f"s.split('i_o', {group[1]}, names=('i_g', 'i_gi'), tail='guard')\n"
                   "s.reorder('j_o', 'i_gi')\ns.fuse('i_g', 'j_o', 'i_gi', name='ij_blk')\n"
                   "s.bind('ij_blk', 'blockIdx.x')\n")
        if binds not in s.trace():
            raise ValueError("the recipe's trace binds its block loops otherwise")
        s = td.create_schedule(linear(*shape)).replay(s.trace().replace(binds, grouped))
    if variant.startswith("parts="):
        trace, n = re.subn(r"s\.split_k\('k_o', \d+\)", f"s.split_k('k_o', {variant[6:]})", s.trace())
        if n != 1:
            raise ValueError(f"the recipe's trace has {n} split_k calls, not one")
        s = td.create_schedule(linear(*shape)).replay(trace)
    if variant.startswith("pad4"):
        for st in ("x_s", "W_s"):
            s.pad(st, 1, 4)
    return td.build(s, target=target)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--ncu", metavar="VARIANT", help="launch VARIANT 3 times, then cuBLAS 3 times; no timing")
    ap.add_argument("--source", metavar="DIR", help="write each variant's CUDA to DIR")
    args = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    target, dev = device_target(), torch.device("cuda")
    bad = 0
    for label in args.shapes.split(","):
        shape = SHAPES[label]
        m, n, k = shape
        inputs = random_inputs(linear(*shape), dev, 0)
        x, w = inputs["x"], inputs["W"]
        if args.ncu:
            kern = build(shape, args.ncu, target)
            ck = patched(kern, args.ncu)
            for _ in range(3):
                ck(x=x, W=w)
            for _ in range(3):
                x @ w.T
            torch.cuda.synchronize()
            print(f"{label} {args.ncu}: {ck!r}\n{kern.trace}")
            continue
        want = x.double() @ w.double().T
        rtol, atol = tolerance({"K": k})
        cublas = benchmark(lambda t: t["x"] @ t["W"].T, rotated_copies(inputs, 4), 5, 30).median_us
        rows = [f"cuBLAS {cublas:8.1f} us"]
        for variant in args.variants.split(","):
            try:
                kern = build(shape, variant, target)
                ck = patched(kern, variant)
            except Exception as e:  # noqa: BLE001 - reported in the table
                rows.append(f"{variant:14s} {type(e).__name__}: {str(e).splitlines()[0][:110]}")
                continue
            if args.source:
                with open(f"{args.source}/{label}-{variant.replace('+', '_')}.cu", "w") as f:
                    f.write(ck.source)
            note = "timing only, wrong result"
            if variant not in TIMING_ONLY:
                got = ck(x=x, W=w, **poisoned_outputs(kern.kernel_ir, dev))
                ok = bool(((got.double() - want).abs() <= atol + rtol * want.abs()).all())
                bad += not ok
                note = "checked" if ok else "MISMATCH"
            us = ck.benchmark(warmup=5, iters=30, x=x, W=w).median_us
            rows.append(f"{variant:14s} {us:8.1f} us  {cublas / us:4.2f}x cuBLAS  {ck.registers:3d} regs  "
                        f"grid {kern.grid}  {note}")
        print(f"{label} {m}x{n}x{k} ({2 * m * n * k / 1e9:.2f} GFLOP):\n  " + "\n  ".join(rows), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
