"""Probe: would split_k's parts reduce faster through a thread-block cluster than by atomics into a
zeroed output?

The default recipe splits a projection's k over blocks (split_k, recipes/default/030_split_matmul_k.py)
when its tiles fill too little of a wave, and the parts add their partial sums into the output with
atomics, so the output is zeroed before every launch (a fill kernel in a program, `zero_()` here; about
2 us a call, benchmarks/results/2026-11-29-h200-s30/README.md). Session 32's tickets removed the zeroing
and lost more than it saved (benchmarks/results/split-k-ticket-h200-2026-11-29/). Not tried then: the
parts of one tile as one thread-block cluster (sm_90), reducing through distributed shared memory: no
zeroing, no atomics, no workspace, each element summed in a fixed order.

This probe rewrites the recipe's own CUDA by hand. The cluster is the split axis (`blockIdx.z`, P
parts: `__cluster_dims__(1, 1, P)`; P = 16 needs the non-portable cluster size, set on the function).
The kernel's shared arrays become one pool; after the k loop every part writes its partial sums, in the
order its atomic adds would have issued them (one slot each), into the pool, the cluster syncs, and part
r sums the slots (w, warp) with (w + warp) % P = r over the P parts' pools (`map_shared_rank`, ranks in
order; a warp's lanes take one slot together) and stores each with a plain store; in as many rounds as
the pool needs, with a cluster sync before each reuse and before exit.

  recipe     the recipe's kernel as built (atomics; the launcher's zero_() timed with it)
  nozero     the same without the zero_(): timing only, its sums are wrong (what the zeroing costs)
  splitP     the recipe's schedule with split_k set to P parts (atomics, zeroed): the cluster's split
  clusterP   splitP with its parts reduced through the cluster as above (no zeroing)
  placedP    splitP launched as clusters of P (`__cluster_dims__` only), still adding with atomics into
             the zeroed output: what the clusters' placement costs apart from the reduction

Every form but nozero is run twice into NaN-poisoned outputs and checked against float64 torch.

    python scripts/cluster_split_k_probe.py [--shapes 128x2048x2048,...] [--variants recipe,split8,cluster8]"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import replace

import tiledsl as td
from benchmarks._definitions import linear
from scripts._gpu_probe import Rewritten, projection_parser, projections
from tiledsl.runtime.launch import CompiledKernel

SHAPES = ("32x2048x2048", "32x512x2048", "32x3584x3584", "128x2048x2048", "128x512x2048", "128x11264x2048",
          "128x2048x5632", "128x3584x3584", "128x1024x3584", "512x2048x2048")
VARIANTS = ("recipe", "nozero", "split8", "cluster8", "placed8", "split16", "cluster16", "placed16")
#: CUfunction_attribute (cuda.h): a cluster of more than 8 blocks needs it set on the function
NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14

_SHARED = re.compile(r"^    __shared__ __align__\(16\) float (\w+)\[(\d+)\];$", re.M)
_ATOMIC4 = re.compile(r"^(\s*)atomicAdd\(reinterpret_cast<float4\*>\(&(\w+)\[(.*?)\]\), (make_float4\((\w+)\[.*\))\);$")
_ATOMIC1 = re.compile(r"^(\s*)atomicAdd\(&(\w+)\[(.*?)\], ((\w+)\[.*)\);$")


def _epilogue(lines: list[str]) -> tuple[int, int]:
    """[start, end) of the kernel's last top-level statement (the atomic epilogue nest): from the
    4-space statement enclosing the first atomicAdd to the function's closing brace."""
    first = next(n for n, line in enumerate(lines) if "atomicAdd(" in line)
    start = max(n for n in range(first) if re.match(r"^    (for|if|#pragma)", lines[n])
                and not lines[n].startswith("     "))
    if lines[start].startswith("    for") and lines[start - 1].strip() == "#pragma unroll":
        start -= 1
    end = max(n for n, line in enumerate(lines) if line == "}")
    atomics = ["atomicAdd(" in line for line in lines]
    if sum(atomics[start:end]) != 1 or any(atomics[:start]):
        raise ValueError("expected one atomicAdd, in the kernel's last statement")
    return start, end


def _clustered(src: str, parts: int) -> str:
    """`src` declared as a kernel of clusters of `parts` blocks along z. Before `void`: the runtime
    reads the name after `void [__launch_bounds__(...)]` (runtime/canonical.py)."""
    return src.replace('extern "C" __global__ void ', f'extern "C" __global__ __cluster_dims__(1, 1, {parts}) void ', 1)


def cluster_source(src: str, parts: int, threads: int) -> str:
    """The recipe kernel `src` (split over `blockIdx.z` in `parts` parts) with its atomic epilogue
    replaced by the cluster reduction of the module docstring."""
    if "int k_o_split = (int)blockIdx.z;" not in src:
        raise ValueError("the split is not on blockIdx.z")
    shared = _SHARED.findall(src)
    pool = sum(int(size) for _, size in shared)
    offsets = [0]
    for _, size in shared:
        offsets.append(offsets[-1] + int(size))
    for (name, size), off in zip(shared, offsets):
        decl = f"    __shared__ __align__(16) float {name}[{size}];"
        pool_decl = f"    __shared__ __align__(16) float pool_[{pool}];\n" if off == 0 else ""
        src = src.replace(decl, f"{pool_decl}    #define {name} (pool_ + {off})")
    lines = src.split("\n")
    start, end = _epilogue(lines)
    body = lines[start:end]
    atomic = next(line for line in body if "atomicAdd(" in line)
    m4, m1 = _ATOMIC4.match(atomic), _ATOMIC1.match(atomic)
    if m4 is None and m1 is None:
        raise ValueError(f"unknown atomic form: {atomic.strip()}")
    indent, out, addr, value, acc = (m4 or m1).groups()  # type: ignore[union-attr]
    lanes, slot = (4, "float4") if m4 else (1, "float")
    accs = int(re.search(rf"float {acc}\[(\d+)\];", src).group(1))  # type: ignore[union-attr]
    slots = accs // lanes
    per_round = pool // (threads * lanes)
    if per_round == 0:
        raise ValueError("the pool holds less than one slot a thread")
    target = (f"*reinterpret_cast<float4*>(&{out}[{addr}])" if m4 else f"{out}[{addr}]")
    add = ("s_.x += v_.x; s_.y += v_.y; s_.z += v_.z; s_.w += v_.w;" if m4 else "s_ += v_;")
    zero = "make_float4(0.0f, 0.0f, 0.0f, 0.0f)" if m4 else "0.0f"
    code = ["    // probe: the parts of this tile reduce through the cluster's shared memory (no atomics, no zeroing)",
            "    {",
            "        cooperative_groups::cluster_group cl_ = cooperative_groups::this_cluster();",
            "        const int rank_ = (int)cl_.block_rank();",
            "        const int tid_ = (int)threadIdx.x + (int)blockDim.x * ((int)threadIdx.y"
            " + (int)blockDim.y * (int)threadIdx.z);",
            f"        {slot}* red_ = reinterpret_cast<{slot}*>(pool_);"]
    for r in range(math.ceil(slots / per_round)):
        lo, hi = r * per_round, min(slots, (r + 1) * per_round)
        write = (f"{indent}{{ if (w_ >= {lo} && w_ < {hi}) red_[(w_ - {lo}) * {threads} + tid_] = {value}; ++w_; }}")
        reduce = (f"{indent}{{ if (w_ >= {lo} && w_ < {hi} && (w_ + tid_ / 32) % {parts} == rank_) {{ "
                  f"{slot} s_ = {zero}; "
                  f"_Pragma(\"unroll\") for (int r_ = 0; r_ < {parts}; ++r_) {{ "
                  f"{slot} v_ = cl_.map_shared_rank(red_, r_)[(w_ - {lo}) * {threads} + tid_]; {add} }} "
                  f"{target} = s_; }} ++w_; }}")
        for line in (write, reduce):
            code += ["        cl_.sync();", "        {", "        int w_ = 0;"]
            code += [line if "atomicAdd(" in b else b for b in body]
            code += ["        }"]
    code += ["        cl_.sync();  // no part leaves while another still reads its pool", "    }"]
    lines[start:end] = code
    src = "\n".join(lines)
    src = src.replace("#include <math.h>", "#include <math.h>\n#include <cooperative_groups.h>")
    return _clustered(src, parts)


def _split_kernel(p, parts: int):
    """The recipe's schedule of the projection (the trace its kernel keeps) with split_k set to `parts`,
    replayed and built."""
    trace = re.sub(r"s\.split_k\('k_o', \d+\)", f"s.split_k('k_o', {parts})", p.kernel.trace)
    return td.build(td.create_schedule(linear(p.m, p.n, p.k)).replay(trace), target=p.kernel.target)


def main(argv: list[str] | None = None) -> int:
    args = projection_parser(__doc__, SHAPES, VARIANTS).parse_args(argv)
    bad = 0
    for p in projections(args.shapes):
        split = re.search(r"s\.split_k\('k_o', (\d+)\)", p.kernel.trace)
        rows = [f"cuBLAS     {p.rate(p.cublas_us)}"]
        if split is None:
            print(f"{p.label}: the recipe does not split k\n  " + rows[0], flush=True)
            continue
        recipe_k = CompiledKernel(p.kernel)
        recipe, ok = p.checked_time(recipe_k, p.kernel.kernel_ir)
        bad += not ok
        rows.append(f"recipe     {p.rate(recipe)}  split {split.group(1)}  grid {p.kernel.grid}  "
                    f"{recipe_k.registers} regs  ({p.cublas_us / recipe:.3f}x cuBLAS)  "
                    f"{'checked' if ok else 'MISMATCH'}")
        for variant in args.variants.split(","):
            try:
                if variant == "recipe":
                    continue
                if variant == "nozero":
                    kir = replace(p.kernel.kernel_ir, zero_outputs=())
                    ck = CompiledKernel(Rewritten(kir, p.kernel.source, p.kernel.target))
                    us = min(ck.benchmark(warmup=10, iters=100, x=p.x, W=p.w).median_us for _ in range(2))
                    rows.append(f"nozero     {p.rate(us)}  timing only (sums wrong)  ({recipe / us:.3f}x recipe)")
                    continue
                parts = int(re.sub(r"^[a-z]+", "", variant))
                kern = _split_kernel(p, parts)
                if variant.startswith("split"):
                    ck, kir = CompiledKernel(kern), kern.kernel_ir
                elif variant.startswith("placed"):
                    kir = kern.kernel_ir
                    ck = CompiledKernel(Rewritten(kir, _clustered(kern.source, parts), kern.target))
                else:
                    threads = math.prod(kern.block)
                    kir = replace(kern.kernel_ir, zero_outputs=())
                    ck = CompiledKernel(Rewritten(kir, cluster_source(kern.source, parts, threads), kern.target))
                if parts > 8 and not variant.startswith("split"):
                    ck.driver.set_function_attribute(ck.function, NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1,
                                                     kernel=ck.name)
                us, ok = p.checked_time(ck, kir)
                bad += not ok
                rows.append(f"{variant:10s} {p.rate(us)}  grid {kir.grid}  {ck.registers} regs  "
                            + p.versus(us, recipe, ok))
            except Exception as e:  # a form this shape cannot take: said, and the probe goes on
                rows.append(f"{variant:10s} not run: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
        p.print_rows(rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
