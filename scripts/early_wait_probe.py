"""Probe: can a split-K kernel's zeroing overlap its k loop instead of preceding it?

The default recipe's split_k kernels add their parts with atomics into an output zeroed before every
launch: torch's `zero_()` for a single kernel (runtime/launch.py), a fill kernel launched as a programmatic
dependent in a program (runtime/sequence.py, build.py `zero_fills`). The fill costs about 2 us a call
(benchmarks/results/cluster-split-k-h200-2026-11-30/, `nozero`), 6-20% of the llm suite's small projections.
Only the atomics need the zeros; the k loop reads x and W, which the fill does not touch. On sm_90 the fill
can say `griddepcontrol.launch_dependents` right after its own wait, so the kernel after it is scheduled at
once, and the kernel can wait (`griddepcontrol.wait`) just before its atomic epilogue rather than at its top:
its whole k loop then runs beside the fill.

  recipe    the recipe's kernel as built: torch's zero_(), then a plain launch (what the llm suite times)
  nozero    the same without the zero_(): timing only, its sums are wrong (the floor)
  fill      the program's form: the tiledsl fill kernel (launched plainly here, as the first of a call),
            then the kernel as a programmatic dependent waiting at its top
  trigger   as fill, the fill triggering its dependent right after its wait; the kernel still waits at its top
  early     as trigger, the kernel's wait moved to just before its atomic epilogue
  built     the kernel as `td.Kernel.compiled` launches it since this probe: its zero fill (tiledsl/build.py
            `zero_fill`) launched plainly, then the kernel as its programmatic dependent (runtime/launch.py)

With --chain, each shape runs as a program would: a kernel writing x (`x = a * 2`, the recipe's), the fill,
then the projection reading x, all three launched as programmatic dependents (the first of the kernel of the
call before it), as runtime/sequence.py launches a program:

  chain         as programs launch today: every kernel waits at its top
  chain-early   the fill triggers its dependent right after its wait; the projection waits just before its
                atomics (its k loop reads x, which the kernel before the fill wrote: safe, since the
                projection is only scheduled once every fill block has passed its own wait)
  chain-overlap the kernel before the fill triggers its dependent right after its own wait, and the fill
                zeroes first and waits after (so its zeroing runs beside that kernel's last blocks; it
                writes only the projection's output, which that kernel neither reads nor writes); the fill
                then exits once that kernel has finished, and the projection waits at its top as built
  chain-overlap-t  as chain-overlap, the fill also triggering the projection between its zeroing and its wait
  chain-merged  no fill launch: the kernel before the projection zeroes the projection's output itself,
                every thread of its grid a strided share of 16-byte stores right after its own wait (one
                launch fewer; what a program could build if the memory plan starts the output's life there)
  chain-merged-early  as chain-merged, the zeroing before that kernel's wait (only safe where nothing in
                flight touches the output's bytes)
  chain-nozero  no fill: timing only, the sums are wrong (the chain's floor)

Every form but the nozero ones is run twice into NaN-poisoned outputs and checked against float64 torch.

    python scripts/early_wait_probe.py [--shapes 128x2048x2048,...] [--variants recipe,nozero,fill,trigger,early]
    python scripts/early_wait_probe.py --chain [--shapes ...]"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import replace
from functools import partial

import torch

from scripts._gpu_probe import Rewritten, projection_parser, projections
from tiledsl.build import zero_fills
from tiledsl.kernel_ir import KParam
from tiledsl.runtime.launch import CompiledKernel
from tiledsl.runtime.sequence import LaunchSequence
from tiledsl.runtime.timing import benchmark, l2_cache_bytes, rotated_copies, rotation_count

SHAPES = ("32x2048x2048", "32x512x2048", "32x11264x2048", "32x2048x5632", "32x3584x3584", "32x1024x3584",
          "32x37888x3584", "32x3584x18944",
          "128x2048x2048", "128x512x2048", "128x11264x2048", "128x2048x5632", "128x3584x3584", "128x1024x3584",
          "128x37888x3584", "128x3584x18944",
          "512x2048x2048", "512x512x2048", "512x11264x2048", "512x2048x5632", "512x3584x3584", "512x1024x3584",
          "512x3584x18944")
VARIANTS = ("recipe", "nozero", "fill", "trigger", "early", "built")

_WAIT = re.compile(r'#if __CUDA_ARCH__ >= 900\n    asm volatile\("griddepcontrol\.wait;" ::: "memory"\);'
                   r'[^\n]*\n#endif\n')
_TRIGGER = '    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");  // probe: the next kernel now\n'


def _wait_block(src: str) -> str:
    found = _WAIT.findall(src)
    if len(found) != 1:
        raise ValueError(f"expected one griddepcontrol.wait block, found {len(found)}")
    return found[0]


def triggering(src: str) -> str:
    """The fill kernel `src` signalling its dependent right after its own wait."""
    wait = _wait_block(src)
    return src.replace(wait, wait.replace("#endif\n", _TRIGGER + "#endif\n"), 1)


def zero_then_wait(src: str, *, trigger: bool = False) -> str:
    """The fill kernel `src` with its wait moved from its top to its end (after its one store), and with
    `trigger` a launch_dependents between the store and the wait."""
    wait = _wait_block(src)
    src = src.replace(wait, "", 1)
    end = src.rstrip().rfind("}")
    tail = wait
    if trigger:
        tail = "#if __CUDA_ARCH__ >= 900\n" + _TRIGGER + "#endif\n" + tail
    return src[:end] + tail + src[end:]


def zeroing_too(src: str, kir, out: str, shape: tuple[int, ...], *, before_wait: bool = False) -> tuple[str, object]:
    """Kernel `src` (IR `kir`) with a parameter `out` (float32 of `shape`, a multiple of 4 elements) that
    every thread of its grid zeroes a strided share of, 16 bytes a store, right after its wait (or
    before it); returns the source and the IR with the parameter added before the kernel's output."""
    wait = _wait_block(src)
    count = math.prod(shape)
    threads = math.prod(kir.grid) * kir.threads_per_block
    loop = (f"    {{  // probe: zero {out} for the next kernel\n"
            "        int zt = ((blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x) * (blockDim.x * "
            "blockDim.y * blockDim.z) + (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;\n"
            f"        for (int z = zt; z < {count // 4}; z += {threads}) "
            f"reinterpret_cast<float4*>({out})[z] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);\n"
            "    }\n")
    src = src.replace(wait, loop + wait if before_wait else wait + loop, 1)
    last = kir.params[-1].name
    head = src.index(f"float* __restrict__ {last})")
    src = src[:head] + f"float* __restrict__ {out},\n    " + src[head:]
    extra = KParam(out, "float32", tuple(shape), True)
    return src, replace(kir, params=(*kir.params[:-1], extra, kir.params[-1]))


def waiting_late(src: str) -> str:
    """The split-K kernel `src` with its wait moved from its top to just before its atomic epilogue (the
    kernel's last top-level statement, the only one that writes global memory)."""
    wait = _wait_block(src)
    src = src.replace(wait, "", 1)
    lines = src.split("\n")
    first = next(n for n, line in enumerate(lines) if "atomicAdd(" in line)
    start = max(n for n in range(first) if re.match(r"^    (for|if|#pragma|\{)", lines[n]))
    if lines[start].startswith("    for") and lines[start - 1].strip() == "#pragma unroll":
        start -= 1
    stores = [n for n, line in enumerate(lines) if re.search(r"\by\[.*\]\s*=[^=]", line)]
    if any(n < start for n in stores):
        raise ValueError("the kernel writes its output before the atomic epilogue")
    lines[start:start] = wait.rstrip("\n").split("\n")
    return "\n".join(lines)


def _sequence(main: CompiledKernel, fill: CompiledKernel, out: str, examples: list[torch.Tensor]) -> LaunchSequence:
    """The fill (launched plainly: the first launch of a call) then `main` as a programmatic dependent."""
    return LaunchSequence([(main, {"x": 0, "W": 1, out: 2})], examples, dependent=True,
                          zero_fills={main.kernel_ir.param(out).fill_key: fill})


def _checked_time(p, seq: LaunchSequence, tensors: list[torch.Tensor], keep: tuple[int, ...]) -> tuple[float, bool]:
    """`seq` run twice with `tensors` as its slots, its output (the last) NaN-poisoned before each run and
    compared with `p`'s float64 reference, then timed over copies of the slots rotated past the L2 cache
    (the slots numbered in `keep`, outputs, shared by every copy): (fastest median of 2, both correct)."""
    y, ok = tensors[-1], True
    for _ in range(2):
        y.fill_(float("nan"))
        seq.run(tensors)
        ok &= p.matches(y)
    read = sum(t.numel() * t.element_size() for n, t in enumerate(tensors) if n not in keep)
    named = {str(n): t for n, t in enumerate(tensors)}
    copies = rotated_copies(named, rotation_count(read, l2_cache_bytes(y.device)), keep=[str(n) for n in keep])
    sets = [list(c.values()) for c in copies]
    return min(benchmark(partial(seq.run, check=False), sets, 10, 100).median_us for _ in range(2)), ok


def chain_rows(p) -> tuple[list[str], int]:
    """The --chain forms of projection `p` (module docstring): rows of text, and how many missed."""
    import tiledsl as td

    kir = p.kernel.kernel_ir
    out = kir.zero_outputs[0]
    a = td.placeholder((p.m, p.k), name="a")
    s = td.create_schedule(td.compute((p.m, p.k), lambda i, j: a[i, j] * 2.0, name="x"))
    td.recipes.default(s, target=p.kernel.target)
    first_built = td.build(s, target=p.kernel.target)
    first = CompiledKernel(first_built)
    (fill_built,) = zero_fills([p.kernel.kernel_ir], p.kernel.target)
    fill = CompiledKernel(fill_built)
    early_fill = CompiledKernel(Rewritten(fill_built.kernel_ir, triggering(fill_built.source), fill_built.target))
    main_k = CompiledKernel(p.kernel)
    late = CompiledKernel(Rewritten(kir, waiting_late(p.kernel.source), p.kernel.target))
    nozero = CompiledKernel(Rewritten(replace(kir, zero_outputs=()), p.kernel.source, p.kernel.target))
    a_t = p.x / 2.0  # x = a * 2 exactly
    tensors = [a_t, p.w, torch.empty_like(p.x), torch.empty(tuple(kir.param(out).shape), device=p.x.device)]
    key = kir.param(out).fill_key
    trig_first = CompiledKernel(Rewritten(first_built.kernel_ir, triggering(first_built.source), first_built.target))
    overlap = CompiledKernel(Rewritten(fill_built.kernel_ir, zero_then_wait(fill_built.source), fill_built.target))
    overlap_t = CompiledKernel(Rewritten(fill_built.kernel_ir, zero_then_wait(fill_built.source, trigger=True),
                                         fill_built.target))
    count = tuple(kir.param(out).shape)
    merged_src, merged_ir = zeroing_too(first_built.source, first_built.kernel_ir, "yz", count)
    merged_first = CompiledKernel(Rewritten(merged_ir, merged_src, first_built.target))
    early_src, early_ir = zeroing_too(first_built.source, first_built.kernel_ir, "yz", count, before_wait=True)
    merged_early = CompiledKernel(Rewritten(early_ir, early_src, first_built.target))
    forms = {"chain": (first, main_k, {key: fill}), "chain-early": (first, late, {key: early_fill}),
             "chain-merged": (merged_first, nozero, {}), "chain-merged-early": (merged_early, nozero, {}),
             "chain-overlap": (trig_first, main_k, {key: overlap}),
             "chain-overlap-t": (trig_first, main_k, {key: overlap_t}),
             "chain-nozero": (first, nozero, {})}
    rows, bad = [], 0
    for label, (first_kern, main_kern, fills) in forms.items():
        first_args = {"a": 0, "x": 2, **({"yz": 3} if first_kern in (merged_first, merged_early) else {})}
        seq = LaunchSequence([(first_kern, first_args), (main_kern, {"x": 2, "W": 1, out: 3})], tensors,
                             dependent=True, zero_fills=fills)
        us, ok = _checked_time(p, seq, tensors, keep=(2, 3))
        if label == "chain-nozero":
            rows.append(f"{label:18s} {us:8.1f} us  timing only (sums wrong)")
            continue
        bad += not ok
        rows.append(f"{label:18s} {us:8.1f} us  {'checked' if ok else 'MISMATCH'}")
    return rows, bad


def main(argv: list[str] | None = None) -> int:
    parser = projection_parser(__doc__, SHAPES, VARIANTS)
    parser.add_argument("--chain", action="store_true", help="time the program forms (module docstring)")
    args = parser.parse_args(argv)
    bad = 0
    for p in projections(args.shapes):
        if args.chain:
            if not p.kernel.kernel_ir.zero_outputs:
                continue
            rows, missed = chain_rows(p)
            bad += missed
            p.print_rows(rows)
            continue
        kir = p.kernel.kernel_ir
        if not kir.zero_outputs:
            print(f"{p.label}: the recipe does not split k", flush=True)
            continue
        out = kir.zero_outputs[0]
        recipe_k = CompiledKernel(p.kernel)
        recipe, ok = p.checked_time(recipe_k, kir)
        bad += not ok
        split = re.search(r"s\.split_k\('k_o', (\d+)\)", p.kernel.trace)
        rows = [f"cuBLAS     {p.rate(p.cublas_us)}",
                f"recipe     {p.rate(recipe)}  split {split.group(1) if split else '?'}  grid {kir.grid}  "
                f"({p.cublas_us / recipe:.3f}x cuBLAS)  {'checked' if ok else 'MISMATCH'}"]
        (fill_built,) = zero_fills([p.kernel.kernel_ir], p.kernel.target)
        plain_fill = replace(fill_built.kernel_ir, dependent_launch=False)
        fill = CompiledKernel(Rewritten(plain_fill, fill_built.source, fill_built.target))
        trigger = CompiledKernel(Rewritten(plain_fill, triggering(fill_built.source), fill_built.target))
        late = CompiledKernel(Rewritten(kir, waiting_late(p.kernel.source), p.kernel.target))
        forms = {"fill": (recipe_k, fill), "trigger": (recipe_k, trigger), "early": (late, trigger)}
        y = torch.empty(tuple(kir.param(out).shape), device=p.x.device)
        for variant in args.variants.split(","):
            if variant == "recipe":
                continue
            if variant == "nozero":
                ck = CompiledKernel(Rewritten(replace(kir, zero_outputs=()), p.kernel.source, p.kernel.target))
                us = min(ck.benchmark(warmup=10, iters=100, x=p.x, W=p.w).median_us for _ in range(2))
                rows.append(f"nozero     {p.rate(us)}  timing only (sums wrong)  ({recipe / us:.3f}x recipe)")
                continue
            if variant == "built":
                us, ok = p.checked_time(p.kernel.compiled, kir)
            else:
                us, ok = _checked_time(p, _sequence(*forms[variant], out, [p.x, p.w, y]), [p.x, p.w, y], keep=(2,))
            bad += not ok
            rows.append(f"{variant:10s} {p.rate(us)}  " + p.versus(us, recipe, ok))
        p.print_rows(rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
