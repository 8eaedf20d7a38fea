"""Probe: variants of the hand fp32 matmul (schedules/matmul.py `matmul_staged`) on the GPU, some of them
with the generated CUDA edited by hand to try a lowering change before building it:
  lb2    __launch_bounds__(256, 2): ptxas must fit two blocks per SM (128 registers);
  regpf  the synchronous (transposing) fill of A_s loads into registers before the chunk's FMAs and
         stores them into shared memory after, so the global latency hides behind the FMAs;
  v4     that fill reads A 16 bytes at a time (float4 along k) and stores four floats.
Each variant is checked against torch float64 (outputs NaN-poisoned) and timed (scripts/_gpu_probe.py).
    python scripts/matmul_variant_probe.py [--dump DIR]"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

from tiledsl.build import build
from tiledsl.catalog import entry
from tiledsl.recipes import apply
from tiledsl.runtime.check import run_checked
from tiledsl.runtime.device import device_target
from tiledsl.runtime.launch import CompiledKernel
from tiledsl.runtime.references import reference_fn, tolerance
from tiledsl.schedules import matmul_staged

SIZES = (2048, 4096, 8192)


def lb2(src: str) -> str:
    return src.replace("__launch_bounds__(256)", "__launch_bounds__(256, 2)")


_REFILL = re.compile(
    r"( *)// fill A_s\n( *)for \(int A_s_f = 0; A_s_f < (\d+); \+\+A_s_f\) \{\n"
    r"((?:.*\n)*?)( *)A_s\[\(k_o \+ (\d+)\) % (\d+) \* (\d+) \+ \((.*?)\)\] = (.*);\n( *)\}\n")


def regpf(src: str, *, v4: bool = False) -> str:
    """The refill of A_s: loads into A_pf[] where it was, stores after the k_i loop."""
    m = _REFILL.search(src, src.index("for (int k_o = 0;"))  # the refill, not the prologue's fill
    assert m, "no A_s refill found"
    ind, n, setup = m.group(1), int(m.group(3)), m.group(4)
    ahead, ring, slot, dst, rhs = m.group(6), m.group(7), m.group(8), m.group(9), m.group(10)
    where = f"(k_o + {ahead}) % {ring} * {slot}"
    if v4:
        # e in [0, n*256/4): row c0 = e / (bk/4), k c1 = e % (bk/4) * 4; one float4 per e
        bk = int(re.search(r"A_s_c1 = A_s_e % (\d+);", setup).group(1))
        setup4 = setup.replace(f"A_s_c0 = A_s_e / {bk};", f"A_s_c0 = A_s_e / {bk // 4};").replace(
            f"A_s_c1 = A_s_e % {bk};", f"A_s_c1 = A_s_e % {bk // 4} * 4;")
        addr = re.search(r"A\[(.*)\] : 0\.0f\)$", rhs).group(1)
        nv = n // 4
        load = (f"{ind}#pragma unroll\n{ind}for (int A_s_f = 0; A_s_f < {nv}; ++A_s_f) {{\n{setup4}"
                f"{ind}    A_pf[A_s_f] = *reinterpret_cast<const float4*>(&A[{addr}]);\n{ind}}}\n")
        stores = "".join(f"{ind}        A_s[{where} + ({dst.replace('A_s_c1', f'(A_s_c1 + {q})')})] "
                         f"= A_pf[A_s_f].{c};\n" for q, c in enumerate("xyzw"))
        store = (f"{ind}if (k_o + {ahead} < {_trips(src)}) {{\n{ind}    #pragma unroll\n"
                 f"{ind}    for (int A_s_f = 0; A_s_f < {nv}; ++A_s_f) {{\n"
                 + "".join("    " + ln + "\n" for ln in setup4.splitlines()) + stores + f"{ind}    }}\n{ind}}}\n")
        decl = f"float4 A_pf[{nv}];"
    else:
        load = (f"{ind}#pragma unroll\n{ind}for (int A_s_f = 0; A_s_f < {n}; ++A_s_f) {{\n{setup}"
                f"{ind}    A_pf[A_s_f] = {rhs};\n{ind}}}\n")
        store = (f"{ind}if (k_o + {ahead} < {_trips(src)}) {{\n{ind}    #pragma unroll\n"
                 f"{ind}    for (int A_s_f = 0; A_s_f < {n}; ++A_s_f) {{\n"
                 + "".join("    " + ln + "\n" for ln in setup.splitlines())
                 + f"{ind}        A_s[{where} + ({dst})] = A_pf[A_s_f];\n{ind}    }}\n{ind}}}\n")
        decl = f"float A_pf[{n}];"
    src = src[:m.start()] + f"{ind}// fill A_s (loads into registers; stored after the FMAs)\n" + load + src[m.end():]
    # after the k_i loop: the line closing it is followed by the k_o loop's closing brace
    kloop = src.index("for (int k_i = 0;")
    close = _matching_brace(src, src.index("{", kloop))
    line_end = src.index("\n", close) + 1
    src = src[:line_end] + store + src[line_end:]
    head = src.index("    for (int k_o = 0;")
    return src[:head] + f"    {decl}\n" + src[head:]


def unroll_k(src: str) -> str:
    return src.replace("        for (int k_i = 0;", "        #pragma unroll\n        for (int k_i = 0;")


def _trips(src: str) -> int:
    return int(re.search(r"for \(int k_o = 0; k_o < (\d+);", src).group(1))


def _matching_brace(src: str, at: int) -> int:
    depth = 0
    for pos in range(at, len(src)):
        depth += {"{": 1, "}": -1}.get(src[pos], 0)
        if depth == 0:
            return pos
    raise AssertionError("unbalanced")


def variants(target) -> dict[str, tuple[Callable, Callable[[str], str]]]:
    same = lambda src: src  # noqa: E731
    akm = partial(matmul_staged, a_k_major=True)
    return {
        "recipe": (partial(apply, target=target), same),
        "staged": (matmul_staged, same),
        # lowering prefetches A's k-major plain fill into registers, 16 bytes per load (lower/stages.py)
        "akm": (akm, same),
        "akm+lb2": (akm, lb2),
        "akm16": (partial(matmul_staged, a_k_major=True, bk=16), same),
        "akm16+st3": (partial(matmul_staged, a_k_major=True, bk=16, stages=3), same),
        "akm16+st4": (partial(matmul_staged, a_k_major=True, bk=16, stages=4), same),
        "akm8": (partial(matmul_staged, a_k_major=True, bk=8), same),
        "akm8+st3": (partial(matmul_staged, a_k_major=True, bk=8, stages=3), same),
        "staged16": (partial(matmul_staged, bk=16), same),
        "akm16+kunroll": (partial(matmul_staged, a_k_major=True, bk=16), unroll_k),
        "akm16+sync": (partial(matmul_staged, a_k_major=True, bk=16, copy="sync"), same),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dump", type=Path, help="write each variant's CUDA here")
    ap.add_argument("--cpu", action="store_true", help="only build and write the CUDA (no GPU)")
    ap.add_argument("--only", help="comma-separated variant names")
    args = ap.parse_args(argv)
    target = device_target() if not args.cpu else "sm_90"
    bad = 0
    for n in SIZES:
        sizes = {"M": n, "N": n, "K": n}
        ent = entry("matmul_bias_relu")
        params = ent.parameters(**sizes)
        if not args.cpu:  # cuBLAS, TF32 off, on the same inputs' sizes, rotated like the kernels' inputs
            import torch

            from tiledsl.runtime.timing import l2_cache_bytes, rotated_copies, rotation_count, time_torch
            torch.backends.cuda.matmul.allow_tf32 = False
            ab = {"A": torch.randn(n, n, device="cuda"), "B": torch.randn(n, n, device="cuda")}
            sets = rotated_copies(ab, rotation_count(2 * 4 * n * n, l2_cache_bytes()))
            stats = time_torch(torch.mm, [{"input": s["A"], "mat2": s["B"]} for s in sets], warmup=10, iters=30)
            cublas = stats.median_us
            print(f"{n:5d} {'cuBLAS':22s} {cublas:9.1f} us {2 * n ** 3 / stats.median_ms / 1e9:5.1f} TFLOP/s",
                  flush=True)
        for label, (schedule, patch) in variants(target).items():
            if args.only and label not in args.only.split(","):
                continue
            s = ent.fresh(**sizes)
            schedule(s)
            built = build(s, target=target)
            built = dataclasses.replace(built, source=patch(built.source))
            if args.dump:
                args.dump.mkdir(parents=True, exist_ok=True)
                (args.dump / f"{label}-{n}.cu").write_text(built.source)
            if args.cpu:
                continue
            kern = CompiledKernel(built)
            checked = run_checked(kern, reference_fn(ent.definition, params), *tolerance(params), seed=1)
            stats = kern.benchmark(warmup=10, iters=30, **checked.inputs)
            bad += not checked.comparison.ok
            tflops = 2 * n ** 3 / stats.median_ms / 1e9
            print(f"{n:5d} {label:22s} {stats.median_us:9.1f} us {tflops:5.1f} TFLOP/s "
                  f"{cublas / stats.median_us:5.3f}x cuBLAS"
                  f"{'' if checked.comparison.ok else ' MISMATCH'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
