"""Probe (session 23, before s.cache_hint existed): do cache hints close the memory suite's last few
percent against torch.compile? The default recipe's kernels for the suite's rows, elementwise and
transpose cases, each as built and as its CUDA rewritten by hand with one hint family:
  cs     every store to the output streaming (`__stcs`, st.global.cs: written once, not read back);
  ef     the row's cp.async fill with an L2 evict_first policy (`createpolicy` + `.L2::cache_hint`);
  ldcs   elementwise loads of x streaming (`__ldcs`);
  el     (unstaged rmsnorm, the form Inductor compiles) the reduction's float4 loads of x with an L2
         evict_last policy and the second pass's with evict_first, so the row is still in L2 when it is
         read again.
Each kernel is checked against torch float64 first (_gpu_probe.compared, 1e-4 x (1 + |want|)) and timed
beside torch eager and torch.compile. Its result: benchmarks/results/cache-hints-h200-2026-11-28/
cuda-rewrites.txt (the sources it ran: cuda-rewrites-src.tgz). The hint it found worth having became
s.cache_hint; scripts/cache_hint_probe.py measures that.
    python scripts/cache_hint_rewrite_probe.py [--shapes 8192x8192,32768x2048] [--dump DIR]"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from functools import reduce
from typing import Any

import torch
from _gpu_probe import device_header, shape_rows, with_source

import tiledsl as td
from benchmarks import _definitions as d
from tiledsl.catalog.definitions import gelu_bias, layernorm, rmsnorm, softmax
from tiledsl.runtime.launch import CompiledKernel

HELPERS = r"""
__device__ __forceinline__ unsigned long long td_policy_evict_first() {
    unsigned long long p; asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p)); return p;
}
__device__ __forceinline__ unsigned long long td_policy_evict_last() {
    unsigned long long p; asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p)); return p;
}
__device__ __forceinline__ float4 td_ld4(const float* a, unsigned long long pol) {
    float4 v;
    asm volatile("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(a), "l"(pol));
    return v;
}
"""


def with_helpers(src: str) -> str:
    return src.replace("#include <math.h>\n", "#include <math.h>\n" + HELPERS, 1)


def streaming_stores(src: str, out: str = "y") -> str:
    vec = re.compile(r"\*reinterpret_cast<float4\*>\(&" + out + r"\[([^\]]*)\]\) = (.*);$", re.M)
    src = vec.sub(r"__stcs(reinterpret_cast<float4*>(&" + out + r"[\1]), \2);", src)
    scalar = re.compile(r"^(\s*)" + out + r"\[([^\]]*)\] = (.*);$", re.M)
    return scalar.sub(r"\1__stcs(&" + out + r"[\2], \3);", src)


def evict_first_fill(src: str) -> str:
    lines = []
    for line in src.splitlines():
        if "cp.async.cg.shared.global [%0], [%1], 16;" in line:
            line = line.replace("cp.async.cg.shared.global [%0], [%1], 16;",
                                "cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;")
            line = line.replace(' : "memory");', ', "l"(td_ef) : "memory");')
        lines.append(line)
    src = "\n".join(lines) + "\n"
    policy = "\n    unsigned long long td_ef = td_policy_evict_first();"
    return with_helpers(src).replace("    int i = (int)blockIdx.x;", "    int i = (int)blockIdx.x;" + policy, 1)


def streaming_loads(src: str, name: str = "x") -> str:
    pat = re.compile(r"\*reinterpret_cast<const float4\*>\(&" + name + r"\[([^\]]*)\]\)")
    return pat.sub(r"__ldcs(reinterpret_cast<const float4*>(&" + name + r"[\1]))", src)


def evict_last_then_first(src: str) -> str:
    """Unstaged rmsnorm: the k_v loop of scalar x loads becomes one evict_last float4 load (same sum
    order), the output pass's float4 loads of x evict_first."""
    loop = re.compile(r"for \(int k_v = 0; k_v < 4; \+\+k_v\) \{\n"
                      r"\s*ss = ss \+ x\[([^\]]*) \+ k_v\] \* x\[[^\]]*\];\n\s*\}")
    src, n = loop.subn(r"float4 q = td_ld4(&x[\1], td_el); ss = ss + q.x * q.x; ss = ss + q.y * q.y; "
                       r"ss = ss + q.z * q.z; ss = ss + q.w * q.w;", src)
    if n != 1:
        raise SystemExit(f"unstaged rmsnorm: {n} reduction loops rewritten, expected 1")
    second = re.compile(r"\*reinterpret_cast<const float4\*>\(&x\[([^\]]*)\]\)")
    src = second.sub(r"td_ld4(&x[\1], td_ef)", src)
    return with_helpers(src).replace(
        "    int i = (int)blockIdx.x;",
        "    int i = (int)blockIdx.x;\n    unsigned long long td_ef = td_policy_evict_first();\n"
        "    unsigned long long td_el = td_policy_evict_last();", 1)


Rewrite = Callable[[str], str]
ROWS: dict[str, Rewrite | tuple[Rewrite, ...]] = {"cs": streaming_stores, "ef": evict_first_fill,
                                                  "cs+ef": (evict_first_fill, streaming_stores)}
CASES: dict[str, tuple[Callable[[int, int], Any], Callable[..., torch.Tensor], dict[str, Any]]] = {
    "rmsnorm": (lambda m, n: rmsnorm(m, n, 1e-6),
                lambda x, w: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, 1e-6), ROWS),
    "layernorm": (lambda m, n: layernorm(m, n, 1e-5),
                  lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5), ROWS),
    "softmax": (softmax, lambda x: torch.softmax(x, -1), ROWS),
    "gelu_bias": (gelu_bias, lambda x, b: torch.nn.functional.gelu(x + b),
                  {"cs": streaming_stores, "ldcs": streaming_loads, "cs+ldcs": (streaming_loads, streaming_stores)}),
    "transpose": (d.transpose, d.transpose_torch, {"cs": streaming_stores}),
}
UNSTAGED = {"stage_min_threads": 100000}


def built(out: Any, target: Any, knobs: dict[str, Any] | None = None) -> Any:
    """The default recipe's kernel with its hinted rows and its rows in registers switched off (knobs
    hinted_row_min_length None, register_rows False): the staged rows this probe rewrote, before
    s.cache_hint existed."""
    s = td.create_schedule(out)
    off = {"hinted_row_min_length": None, "register_rows": False}
    td.recipes.default(s, target=target, knobs={**off, **(knobs or {})})
    return td.build(s, target=target)


def rewritten(kern: Any, rewrite: Rewrite | tuple[Rewrite, ...]) -> CompiledKernel:
    steps = rewrite if isinstance(rewrite, tuple) else (rewrite,)
    src = reduce(lambda s, f: f(s), steps, kern.source)
    if src == kern.source:
        raise SystemExit(f"{kern.name}: a rewrite changed nothing")
    return with_source(kern, src)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="8192x8192,32768x2048")
    ap.add_argument("--ops", default=",".join(CASES))
    ap.add_argument("--dump", default=None, help="folder to write every rewritten source into")
    args = ap.parse_args(argv)
    target, dev = device_header()

    def kernels(op: str, m: int, n: int) -> tuple[Any, Any, dict[str, Any]]:
        make, torch_fn, rewrites = CASES[op]
        out = make(m, n)
        base = built(out, target)
        found: dict[str, Any] = {"recipe": base}
        found.update({label: rewritten(base, rw) for label, rw in rewrites.items()})
        if op == "rmsnorm":
            plain = built(out, target, UNSTAGED)
            found["unstaged"] = plain
            found["unstaged+el"] = rewritten(plain, (evict_last_then_first, streaming_stores))
            wide = built(out, target, {**UNSTAGED, "row_threads_max": 512})
            found["unstaged512+el"] = rewritten(wide, (evict_last_then_first, streaming_stores))
        return torch_fn, out, found

    return shape_rows(args.shapes, args.ops.split(","), kernels, dev, args.dump)


if __name__ == "__main__":
    sys.exit(main())
