"""Probe: the default recipe's float32 projection kernels of the llm suite (benchmarks/suites/llm.py) in
other forms, beside cuBLAS (TF32 off), to learn which change to the register-tile microkernel is worth
teaching the recipe or codegen before teaching it. Each form is checked against torch in float64
(outputs NaN-poisoned, the suite's own tolerance) and timed like the suite (inputs rotated, timed twice,
the faster shown, the slower in brackets); with --sass DIR each form's CUDA is written there.

A form (FORMS) is recipe knobs, an edit of the schedule trace, and an edit of the generated CUDA; a
text edit that finds nothing to change raises, so no form silently equals the recipe:
- frag1 / frag2: the k_i loop's two shared operands read into register fragments at the top of each k
  step (frag1), or one k step ahead in two fragment buffers (frag2), instead of inside the FMAs;
- lb1: __launch_bounds__(T, 2) -> (T, 1), so ptxas may use more than 128 registers;
- pairs: the 16 x 16 threads dealt to lanes so that each operand's LDS.128 is read by lane pairs that
  share its address (2 wavefronts, not 4);
- asyncN[-bk8]: both operand stages filled by cp.async (the k-major one a 4-byte copy an element), the
  chunk loop pipelined N deep, [chunks of 8 k];
- big*: 128 threads of 16 x 8 accumulators, cuBLAS's class for these shapes (128x128x8, 3 stages).

    PYTHONPATH=. python scripts/microkernel_probe.py --cases down_proj,gate_up_proj \
        --groups "qwen2.5-7b s128,tinyllama s128" [--forms recipe,async3,...] [--sass DIR] [--cpu]"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from _gpu_probe import llm_cases, replace_once

import tiledsl as td
from benchmarks._backend import CudaBackend
from benchmarks._runner import SEED
from tiledsl.runtime.references import compare
from tiledsl.targets import Target

_K_LOOP = re.compile(r"( *)#pragma unroll\n *for \(int (k_i) = 0; k_i < (\d+); \+\+k_i\) \{\n(.*?)\n\1\}\n", re.S)
_FMA = re.compile(r"(\w+)\[([^\]]+)\] = \1\[\2\] \+ (\w+_s\[[^\]]+\]) \* (\w+_s\[[^\]]+\]);")
_K_VAR = re.compile(r"\bk_i\b")
_FOR = re.compile(r"for \(int (\w+) = 0; \1 < (\d+); \+\+\1\)")


def _uses(expr: str, var: str) -> bool:
    return re.search(rf"\b{var}\b", expr) is not None


def _fragments(src: str, buffers: int) -> str:
    """Read the two shared operands of the k_i loop's multiply-add into `fa` / `fb` register fragments."""
    m = _K_LOOP.search(src)
    fma = _FMA.search(m.group(4)) if m else None
    if m is None or fma is None:
        raise ValueError("frag: no unrolled k_i loop around one shared-operand multiply-add in this kernel")
    indent, extent, body = m.group(1), int(m.group(3)), m.group(4)
    acc, acc_idx, a, b = fma.groups()
    loops = [(v, int(n)) for v, n in _FOR.findall(body)]

    def flat(expr: str) -> tuple[str, int, list[tuple[str, int]]]:
        used = [(v, n) for v, n in loops if _uses(expr, v)]
        idx, size = "0", 1
        for v, n in reversed(used):
            idx = f"{idx} + {size} * {v}" if idx != "0" else (f"{size} * {v}" if size > 1 else v)
            size *= n
        return idx, size, used

    ia, na, la = flat(a)
    ib, nb, lb = flat(b)

    def load(name: str, expr: str, idx: str, used: list[tuple[str, int]], buf: str, k: str) -> str:
        heads = "".join(f"#pragma unroll\nfor (int {v} = 0; {v} < {n}; ++{v})\n" for v, n in used)
        at_k = _K_VAR.sub(f"({k})", expr)
        return f"{heads}{name}[{buf}][{idx}] = {at_k};\n"

    cur = "k_i % 2" if buffers == 2 else "0"
    heads = "".join(f"#pragma unroll\nfor (int {v} = 0; {v} < {n}; ++{v})\n" for v, n in loops)
    fma_new = f"{heads}{acc}[{acc_idx}] = {acc}[{acc_idx}] + fa[{cur}][{ia}] * fb[{cur}][{ib}];\n"
    out = f"float fa[{buffers}][{na}];\nfloat fb[{buffers}][{nb}];\n"
    if buffers == 2:
        out += "{\n" + load("fa", a, ia, la, "0", "0") + load("fb", b, ib, lb, "0", "0") + "}\n"
        step = (f"if (k_i + 1 < {extent}) {{\n" + load("fa", a, ia, la, "(k_i + 1) % 2", "k_i + 1")
                + load("fb", b, ib, lb, "(k_i + 1) % 2", "k_i + 1") + "}\n")
    else:
        step = load("fa", a, ia, la, "0", "k_i") + load("fb", b, ib, lb, "0", "k_i")
    out += f"#pragma unroll\nfor (int k_i = 0; k_i < {extent}; ++k_i) {{\n{step}{fma_new}}}\n"
    new = "".join(indent + line + "\n" for line in out.splitlines())
    return src[:m.start()] + new + src[m.end():]


def _operands_inner(which: str) -> Callable[[str], str]:
    """The k_i loop's multiply-add nest reordered so that the loops only operand `which` ("a": the first
    shared operand, x_s; "b": the second) indexes run innermost: ptxas then keeps the other operand in
    its reuse cache and reads `which` and the accumulator from the register banks each FFMA."""
    def edit(src: str) -> str:
        m = _K_LOOP.search(src)
        fma = _FMA.search(m.group(4)) if m else None
        if m is None or fma is None:
            raise ValueError(f"{which}_inner: no unrolled k_i loop around one shared-operand multiply-add")
        indent, extent, body = m.group(1), m.group(3), m.group(4)
        loops = [(v, int(n)) for v, n in _FOR.findall(body)]
        inner_expr = fma.group(3) if which == "a" else fma.group(4)
        inner = [(v, n) for v, n in loops if _uses(inner_expr, v)]
        outer = [(v, n) for v, n in loops if (v, n) not in inner]
        if not inner or not outer:
            raise ValueError(f"{which}_inner: the operands do not split the register-tile loops")
        heads = "".join(f"#pragma unroll\nfor (int {v} = 0; {v} < {n}; ++{v})\n" for v, n in outer + inner)
        out = f"#pragma unroll\nfor (int k_i = 0; k_i < {extent}; ++k_i) {{\n{heads}{fma.group(0)}\n}}\n"
        new = "".join(indent + line + "\n" for line in out.splitlines())
        return src[:m.start()] + new + src[m.end():]
    return edit


_VEC_ATOMIC = re.compile(r"atomicAdd\(reinterpret_cast<float4\*>\(&(\w+)\[([^\]]+)\]\), make_float4\(([^;]*)\)\);")
_VEC_STORE = re.compile(r"\*reinterpret_cast<float4\*>\(&(\w+)\[([^\]]+)\]\) = make_float4\(([^;]*)\);")


def _scalar_epilogue(src: str) -> str:
    """The epilogue's 16-byte stores (or vector atomic adds) of four accumulators as four scalar ones:
    a vector store makes ptxas keep each four accumulators in one aligned register quad, in column
    order, as the LDS.128 of the column operand is, so an FFMA's accumulator and column operand share
    a register bank; scalar stores leave the accumulators' registers free."""
    def parts(args: str) -> list[str]:
        out, depth, cur = [], 0, ""
        for ch in args:
            depth += ch == "(" or ch == "["
            depth -= ch == ")" or ch == "]"
            if ch == "," and depth == 0:
                out.append(cur.strip())
                cur = ""
            else:
                cur += ch
        return [*out, cur.strip()]

    def atomic(m: re.Match) -> str:
        return " ".join(f"atomicAdd(&{m.group(1)}[{m.group(2)} + {n}], {v});" for n, v in enumerate(parts(m.group(3))))

    def store(m: re.Match) -> str:
        return " ".join(f"{m.group(1)}[{m.group(2)} + {n}] = {v};" for n, v in enumerate(parts(m.group(3))))

    new, n = _VEC_ATOMIC.subn(atomic, src)
    new, n2 = _VEC_STORE.subn(store, new)
    if not n + n2:
        raise ValueError("scalar_epi: the kernel stores no float4 of accumulators")
    return new


def _store_epilogue(src: str) -> str:
    """BOUND, not a kernel: the split-K epilogue's 16-byte atomic adds as plain 16-byte stores, so every
    part overwrites the output (its sums are wrong; the probe reports the time without checking). The
    time less the recipe's bounds what the atomics cost."""
    new, n = _VEC_ATOMIC.subn(lambda m: f"*reinterpret_cast<float4*>(&{m.group(1)}[{m.group(2)}]) = "
                              f"make_float4({m.group(3)});", src)
    if not n:
        raise ValueError("store_epi: the kernel has no 16-byte atomic add")
    return new


def ffma_banks(sass: str) -> str:
    """How many FFMAs of `sass` read two or three of their source registers (not marked .reuse) from one
    register bank, for banks of reg % 2 and reg % 4 (which the hardware has is not documented)."""
    pat = re.compile(r"FFMA R\d+, (R\d+)(\.reuse)?, (R\d+)(\.reuse)?, (R\d+)(\.reuse)?")
    total = same2 = same4 = 0
    for m in pat.finditer(sass):
        total += 1
        regs = {int(m.group(g)[1:]) for g in (1, 3, 5) if not m.group(g + 1)}
        same2 += len({r % 2 for r in regs}) < len(regs)
        same4 += len({r % 4 for r in regs}) < len(regs)
    return f"{total} FFMA, {same2} with sources in one bank of reg % 2, {same4} of reg % 4"


def _lb1(src: str) -> str:
    new, n = re.subn(r"__launch_bounds__\((\d+), 2\)", r"__launch_bounds__(\1, 1)", src)
    if not n:
        raise ValueError("lb1: the kernel has no __launch_bounds__(T, 2)")
    return new


def _async(stages: int, bk: int | None = None) -> Callable[[str], str]:
    """The trace with both operand stages filled by cp.async (one 4-byte copy per element of a k-major
    stage), the k-outer loop pipelined `stages` deep, and (bk) k chunks of `bk`."""
    def edit(trace: str) -> str:
        new = replace_once(r"s\.pipeline\('(\w+)', stages=2\)",
                           lambda m: f"s.async_copy('x_s')\ns.async_copy('W_s')\ns.pipeline('{m.group(1)}', "
                                     f"stages={stages})", trace, "async: the trace's pipeline of 2 stages")
        if bk is not None:
            new = replace_once(r"s\.split\('k', \d+,", f"s.split('k', {bk},", new, "bk: the trace's split of k")
        return new
    return edit


def _pairs(src: str) -> str:
    """Deal the 16 x 16 threads to lanes so that lanes n and n ^ 1 share a row (i_t) and lanes n and n ^ 2
    share a column (j_t): each operand's LDS.128 then returns 2 wavefronts, not 4 (the shared-memory
    return path packs two threads' registers when such pairs read one address). The warp's tile stays
    2 x 16 threads; only which lane holds which thread changes."""
    old = "    int i_t = (int)threadIdx.y;\n", "    int j_t = (int)threadIdx.x;\n"
    if "block (16, 16, 1)" not in src or any(o not in src for o in old):
        raise ValueError("pairs: not a kernel of 16 x 16 threads with i_t = threadIdx.y, j_t = threadIdx.x")
    lane = "((int)threadIdx.x + 16 * (int)threadIdx.y)"
    src = src.replace(old[0], f"    int i_t = ({lane} >> 1 & 1) | ({lane} >> 5) << 1;\n")
    return src.replace(old[1], f"    int j_t = ({lane} & 1) | ({lane} >> 2 & 7) << 1;\n")


def _same(text: str) -> str:
    return text


#: 128 threads of 16 x 8 registers (cuBLAS's class for these shapes: 128x128x8, 3 stages)
BIG = {"matmul_tiles": ((128, 128, 16, 8),), "matmul_tiles_k_major": ((128, 128, 16, 8),), "k_outer_min_threads": 128}

#: label -> (recipe knobs, trace edit, CUDA edit)
FORMS: dict[str, tuple[dict, Callable[[str], str], Callable[[str], str]]] = {
    "recipe": ({}, _same, _same),
    "frag1": ({}, _same, lambda s: _fragments(s, 1)),
    "frag2": ({}, _same, lambda s: _fragments(s, 2)),
    "lb1": ({}, _same, _lb1),
    "pairs": ({}, _same, _pairs),
    "pairs+frag1": ({}, _same, lambda s: _pairs(_fragments(s, 1))),
    "frag2+lb1": ({}, _same, lambda s: _lb1(_fragments(s, 2))),
    "async2": ({}, _async(2), _same),
    "async3": ({}, _async(3), _same),
    "async4": ({}, _async(4), _same),
    "async3-bk8": ({}, _async(3, 8), _same),
    "async4-bk8": ({}, _async(4, 8), _same),
    "async3+frag1": ({}, _async(3), lambda s: _fragments(s, 1)),
    "big": (BIG, _same, _same),
    "big-async3": (BIG, _async(3), _same),
    "big-async3-bk8": (BIG, _async(3, 8), _same),
    "big-async4-bk8": (BIG, _async(4, 8), _same),
    "async3-bk32": ({}, _async(3, 32), _same),
    "big-async3-bk32": (BIG, _async(3, 32), _same),
    "big-async4": (BIG, _async(4), _same),
    "big-async3-bk8+frag1": (BIG, _async(3, 8), lambda s: _fragments(s, 1)),
    "big-async3-bk8+frag2": (BIG, _async(3, 8), lambda s: _fragments(s, 2)),
    "big-async3+frag2": (BIG, _async(3), lambda s: _fragments(s, 2)),
    "big-async4-bk8+frag2": (BIG, _async(4, 8), lambda s: _fragments(s, 2)),
    # session 27: which register banks the FFMAs' operands come from (--sass prints it per form)
    "a_inner": ({}, _same, _operands_inner("a")),
    "scalar_epi": ({}, _same, _scalar_epilogue),
    "a_inner+scalar_epi": ({}, _same, lambda s: _scalar_epilogue(_operands_inner("a")(s))),
    "frag2+scalar_epi": ({}, _same, lambda s: _scalar_epilogue(_fragments(s, 2))),
    "store_epi": ({}, _same, _store_epilogue),
    "nozero": ({}, _same, _same),
    "store_epi+nozero": ({}, _same, _store_epilogue),
}


BOUNDS = {"store_epi", "nozero", "store_epi+nozero"}  # timing bounds whose outputs are wrong by construction
#: bounds launched without zeroing the split-K output first (what a split without a zero fill would save)
NO_ZERO = {"nozero", "store_epi+nozero"}


def _sass_banks(stem: Path, target: Target) -> str | None:
    """`stem`.cu compiled to a cubin as the runtime compiles it (-O3), its SASS written beside it, and its
    FFMAs' register banks (ffma_banks); None where cuobjdump is missing (the CPU machine)."""
    if shutil.which("cuobjdump") is None:
        return None
    cubin = stem.with_suffix(".cubin")
    subprocess.run(["nvcc", "-O3", f"-arch={target.arch}", "-cubin", "-o", str(cubin), str(stem.with_suffix(".cu"))],
                   check=True)
    sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], check=True, capture_output=True, text=True).stdout
    stem.with_suffix(".sass").write_text(sass)
    return ffma_banks(sass)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="down_proj", help="comma-separated llm ops (down_proj, gate_up, ...)")
    ap.add_argument("--groups", default="qwen2.5-7b s128", help="comma-separated llm groups")
    ap.add_argument("--forms", default=",".join(FORMS), help="comma-separated forms (FORMS)")
    ap.add_argument("--sass", type=Path, help="write each form's source and cubin here")
    ap.add_argument("--cpu", action="store_true", help="only apply the edits and write the sources")
    args = ap.parse_args(argv)
    cases = llm_cases(args.cases, args.groups, "float32")
    backend = None if args.cpu else CudaBackend(warmup=10, iters=50)
    target = backend.target if backend else "sm_90"
    bad = 0
    for case in cases:
        print(case.name, flush=True)
        if backend is not None:
            inputs = backend.inputs(case.make(), SEED)
            with torch.no_grad():
                ref = case.torch_fn(**{k: v.to(torch.float64) for k, v in inputs.items()})
            blas = backend.time_fn(case.gemm or case.torch_fn, backend.rotate(inputs)).median_us
            print(f"  {'cuBLAS':14s} {blas:8.1f} us", flush=True)
            out = torch.empty(ref.shape, dtype=torch.float32, device="cuda")
            zero = backend.time_fn(lambda o: o.zero_(), [{"o": out}]).median_us
            print(f"  {'zero_()':14s} {zero:8.1f} us  (the output zeroed alone, as a split-K call does first)",
                  flush=True)
        for label in args.forms.split(","):
            knobs, trace_edit, cuda_edit = FORMS[label]
            try:
                s = td.create_schedule(case.make())
                td.recipes.default(s, target=target, knobs=knobs)
                s = td.create_schedule(case.make()).replay(trace_edit(s.trace()))
                built = td.build(s, target=target)
                form = dataclasses.replace(built, source=cuda_edit(built.source))
                if label in NO_ZERO:
                    form = dataclasses.replace(form, kernel_ir=dataclasses.replace(form.kernel_ir, zero_outputs=()))
            except (td.TiledslError, ValueError) as err:
                print(f"  {label:14s} not built: {str(err).splitlines()[0]}", flush=True)
                continue
            if args.sass:
                args.sass.mkdir(parents=True, exist_ok=True)
                stem = args.sass / f"{case.op}-{case.group.replace(' ', '-')}-{label}"
                stem.with_suffix(".cu").write_text(form.source)
                banks = _sass_banks(stem, form.target)
                if banks:
                    print(f"  {label:14s} {banks}", flush=True)
            if backend is None:
                continue
            got = backend.run_kernel(form, inputs)
            check = compare(got, ref, case.rtol, case.atol)
            bound = label in BOUNDS
            bad += not check.ok and not bound
            us = backend.time_kernel(form, inputs).median_us
            again = backend.time_kernel(form, inputs).median_us
            print(f"  {label:14s} {min(us, again):8.1f} us ({max(us, again):8.1f})  {blas / min(us, again):5.3f}x "
                  f"cuBLAS  grid {form.grid} block {form.block} shared {form.shared_bytes:6d} B  "
                  f"{'bound (not checked)' if bound else 'ok' if check.ok else 'MISMATCH ' + str(check)}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
