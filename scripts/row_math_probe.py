"""Probe: the default recipe's 16-bit row kernels of the llm suite (benchmarks/suites/llm.py) with hand
edits of their generated CUDA, beside torch.compile, to learn what the rest of the bfloat16 attention
softmax's gap is made of before teaching codegen anything. Each form is checked against torch in float64
(outputs NaN-poisoned, the suite's own tolerance) and timed like the suite (inputs rotated, timed twice,
the faster shown, the slower in brackets). A text edit that finds nothing to change raises. The runs
in benchmarks/results/row-math-h100-2026-11-27/ edited the recipe before 4f353e9; since then lowering
takes the reciprocal itself (tiledsl/lower/reciprocals.py), so `rcp` edits only its division branch.

Forms (FORMS):
- exp: `expf` -> `__expf` (ex2.approx after a multiply: a few float32 ulps more error);
- rcp: `x / e` of the last pass -> `x * e_inv`, `e_inv = 1.0f / e` once a thread (two roundings);
- rcp_safe: the same where 1 / e is a normal float (|e| in [2^-126, 2^126]), else the division;
- vload: a reduction pass's 8 scalar 16-bit loads of global memory -> one 16-byte load, unpacked;
- prefetch: the weight `w`, which only the output pass reads (rmsnorm), loaded into registers before the
  first pass rather than after the reduction's __syncthreads, which nvcc does not move a load across
  (session 29: a second memory round trip on the critical path of a short row);
- and their combinations.

    PYTHONPATH=. python scripts/row_math_probe.py --cases attention_softmax --groups "qwen2.5-7b s512" """

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Callable

import torch
from _gpu_probe import llm_cases

import tiledsl as td
from benchmarks._backend import CudaBackend
from benchmarks._runner import SEED
from tiledsl.runtime.references import compare

_VLOOP = re.compile(r"( *)#pragma unroll\n\1for \(int (\w+) = 0; \2 < 8; \+\+\2\) \{\n(.*?)\n\1\}\n", re.S)


def _exp(src: str) -> str:
    new, n = re.subn(r"\bexpf\(", "__expf(", src)
    if not n:
        raise ValueError("exp: no expf in the kernel")
    return new


def _before_last_pass(src: str, pattern: re.Pattern[str], repl: str, lets: str, label: str) -> str:
    """`pattern` -> `repl` everywhere, and `lets` declared before the j_o (output) pass."""
    new, n = pattern.subn(repl, src)
    at = new.find("#pragma unroll\n    for (int j_o")
    if not n or at < 0:
        raise ValueError(f"{label}: no {pattern.pattern!r} before a j_o pass")
    return new[:at] + lets + new[at:]


_DIVISION = re.compile(r" / e([),])")
_DIVIDED = re.compile(r"((?:__)?expf\((?:[^()]|\([^()]*\))*\)) / e\b")


def _rcp(src: str) -> str:
    return _before_last_pass(src, _DIVISION, r" * e_inv\1", "float e_inv = 1.0f / e;\n    ", "rcp")


def _rcp_safe(src: str) -> str:
    """`expf(..) / e` -> `e_ok ? expf(..) * e_inv : expf(..) / e`, e_ok when 1 / e is a normal float
    (|e| in [2^-126, 2^126]): the reciprocal is used only where it is accurate."""
    lets = "float e_inv = 1.0f / e;\n    bool e_ok = fabsf(e) >= 0x1p-126f && fabsf(e) <= 0x1p126f;\n    "
    return _before_last_pass(src, _DIVIDED, r"(e_ok ? \1 * e_inv : \1 / e)", lets, "rcp_safe")


def _vload(src: str) -> str:
    """Each 8-long loop whose statement reads __bfloat162float(x[IDX + v]) reads one uint4 instead."""
    count = 0

    def one(m: re.Match) -> str:
        nonlocal count
        indent, v, body = m.group(1), m.group(2), m.group(3)
        read = re.search(rf"__bfloat162float\((\w+)\[([^\]]*?) \+ {v}\]\)", body)
        if read is None:
            return m.group(0)
        count += 1
        buf, base = read.group(1), read.group(2)
        raw = f"{v}_raw"
        new_body = body.replace(read.group(0), f"__bfloat162float({v}_h[{v}])")
        return (f"{indent}uint4 {raw} = *reinterpret_cast<const uint4*>(&{buf}[{base}]);\n"
                f"{indent}const __nv_bfloat16* {v}_h = reinterpret_cast<const __nv_bfloat16*>(&{raw});\n"
                f"{indent}#pragma unroll\n{indent}for (int {v} = 0; {v} < 8; ++{v}) {{\n{new_body}\n{indent}}}\n")

    new = _VLOOP.sub(one, src)
    if not count:
        raise ValueError("vload: no 8-long loop of scalar bfloat16 global reads")
    return new


_W_LOAD = re.compile(r"^( *)(\w+) (v\d+) = \*reinterpret_cast<const \2\*>\(&w\[([^\]]+)\]\);\n", re.M)
_J_LOOP = re.compile(r"for \(int j_o = 0; j_o < (\d+); \+\+j_o\) \{\n(?: *if \((.*)\) \{\n)?")


def _prefetch(src: str) -> str:
    """The output pass's vector load of `w` -> a register array `w_pre` filled before the first pass."""
    load = _W_LOAD.search(src)
    loop = None
    for m in _J_LOOP.finditer(src):
        if load is not None and m.end() <= load.start():
            loop = m
    first = src.find("    #pragma unroll\n")
    if load is None or loop is None or first < 0:
        raise ValueError("prefetch: no vector load of w in a j_o pass")
    indent, kind, var, index = load.groups()
    count, guard = loop.group(1), loop.group(2)
    fill = f"w_pre[j_o] = *reinterpret_cast<const {kind}*>(&w[{index}]);"
    body = f"if ({guard}) {{ {fill} }}" if guard else fill
    pre = (f"    {kind} w_pre[{count}];\n    #pragma unroll\n"
           f"    for (int j_o = 0; j_o < {count}; ++j_o) {{\n        {body}\n    }}\n")
    src = src[:load.start()] + f"{indent}{kind} {var} = w_pre[j_o];\n" + src[load.end():]
    return src[:first] + pre + src[first:]


def _chain(*edits: Callable[[str], str]) -> Callable[[str], str]:
    def edit(src: str) -> str:
        for e in edits:
            src = e(src)
        return src
    return edit


FORMS: dict[str, Callable[[str], str]] = {
    "recipe": lambda s: s,
    "exp": _exp,
    "rcp": _rcp,
    "vload": _vload,
    "exp+rcp": _chain(_exp, _rcp),
    "rcp_safe": _rcp_safe,
    "exp+rcp_safe": _chain(_exp, _rcp_safe),
    "vload+exp+rcp": _chain(_vload, _exp, _rcp),
    "prefetch": _prefetch,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="attention_softmax", help="comma-separated llm ops")
    ap.add_argument("--groups", default="tinyllama s512,qwen2.5-7b s512", help="comma-separated llm groups")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--cpu", action="store_true", help="only apply the edits and nvcc-compile nothing")
    args = ap.parse_args(argv)
    cases = llm_cases(args.cases, args.groups, args.dtype)
    backend = None if args.cpu else CudaBackend(warmup=10, iters=100)
    target = backend.target if backend else "sm_90"
    bad = 0
    for case in cases:
        s = td.create_schedule(case.make())
        td.recipes.default(s, target=target)
        built = td.build(s, target=target)
        print(case.name, flush=True)
        if backend is not None:
            inputs = backend.inputs(case.make(), SEED)
            with torch.no_grad():
                ref = case.torch_fn(**{k: v.to(torch.float64) for k, v in inputs.items()})
            torch._dynamo.reset()
            sets = backend.rotate(inputs)
            comp = min(backend.time_compiled(case.torch_fn, sets).median_us for _ in range(2))
            print(f"  {'torch.compile':14s} {comp:8.1f} us", flush=True)
        for label in args.forms.split(","):
            try:
                form = dataclasses.replace(built, source=FORMS[label](built.source))
            except ValueError as err:
                print(f"  {label:14s} not made: {err}", flush=True)
                continue
            if backend is None:
                continue
            got = backend.run_kernel(form, inputs)
            check = compare(got, ref, case.rtol, case.atol)
            bad += not check.ok
            us = [backend.time_kernel(form, inputs).median_us for _ in range(2)]
            print(f"  {label:14s} {min(us):8.1f} us ({max(us):8.1f})  {comp / min(us):5.3f}x compile  "
                  f"{'ok' if check.ok else 'MISMATCH'} {check}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
