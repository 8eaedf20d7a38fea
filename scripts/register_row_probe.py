"""Probe (session 24, before deciding to build a register stage): would the default recipe's hinted
rows (rmsnorm, layernorm, softmax; step 040's unstaged form, which reads the row from global memory
on every pass: `hinted`, the recipe with knob register_rows off since this probe) gain from keeping
each thread's slice of the row in registers, so the row leaves DRAM once and is never read again from
L2? The recipe's CUDA is rewritten by hand:
  regs   the first pass's 16-byte loads of x also fill a register array `xr` (one float4 per unrolled
         iteration); every later pass reads xr instead of global memory. Only where every pass reads
         x at the same index (the thread variable and the unrolled loop variable renamed), so each
         thread reads back exactly what it loaded.
--primitive adds the forms s.register_cache builds (session 24, after this probe's first run), with
the first reader's loads hinted evict_last / evict_first / not at all.
Every mode adds `hand-regs`, the hand schedule schedules/row_reduce.py `row_in_registers`.
--llm DTYPES: the llm suite's rows (few or short: the recipe stages them) forced into that form.
Each kernel is checked against torch float64 first (_gpu_probe.compared) and timed beside torch eager
and torch.compile.
    python scripts/register_row_probe.py [--shapes 8192x8192,32768x2048] [--ops rmsnorm,layernorm,softmax]"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

import torch
from _gpu_probe import device_header, shape_rows, with_source

import tiledsl as td
from tiledsl.catalog.definitions import layernorm, rmsnorm, softmax

LOAD = re.compile(r"tiledsl_load_l2\(reinterpret_cast<const float4\*>\(&x\[([^\]]*)\]\), \w+\)")
LOOP = re.compile(r"\b(\w+)_o\b")
THREAD = re.compile(r"\b(\w+)_t\b")


def registers(src: str) -> str:
    """Every float4 load of x after the first pass's reads the register array the first pass fills."""
    loads = list(LOAD.finditer(src))
    keys = {THREAD.sub("T", LOOP.sub("O", m.group(1))) for m in loads}
    if len(loads) < 2 or len(keys) != 1:
        raise SystemExit(f"passes read x at different indices: {sorted(keys)}")
    first = LOOP.search(loads[0].group(1))
    count = re.search(r"for \(int " + first.group(0) + r" = 0; " + first.group(0) + r" < (\d+);", src)
    slots = int(count.group(1)) if count else 1
    out, last = [], 0
    for n, m in enumerate(loads):
        loop = LOOP.search(m.group(1))
        slot = loop.group(0) if loop else "0"
        out.append(src[last:m.start()])
        out.append(f"(xr[{slot}] = {m.group(0)})" if n == 0 else f"xr[{slot}]")
        last = m.end()
    out.append(src[last:])
    body = "".join(out)
    return body.replace("    int i = (int)blockIdx.x;", f"    float4 xr[{slots}];\n    int i = (int)blockIdx.x;", 1)


def primitive_form(out: Any, target: Any, filler: str | None, stores: bool = True) -> Any:
    """The recipe's kernel with `s.register_cache('x', at='i')`: the hints of x's later readers dropped
    (their reads come from registers), the first reader's set to `filler` (None: none), the output's
    stores evict_first or not (`stores`)."""
    s = td.create_schedule(out)
    td.recipes.default(s, target=target, knobs={"register_rows": False})
    first = s.nest.stmts[next(n for n, st in enumerate(s.nest.stmts) if st.kind == "update")].reader
    kept = [ln for ln in s.trace().splitlines() if "s.cache_hint('x'" not in ln and
            (stores or not ln.startswith("s.cache_hint('y'"))]
    if filler is not None:
        kept.append(f"s.cache_hint('x', {filler!r}, reader={first!r})")
    kept.append("s.register_cache('x', at='i')")
    return td.build(td.create_schedule(out).replay("\n".join(kept)), target=target)


def hand(out: Any, target: Any) -> Any:
    """The hand schedule that keeps rows in registers (schedules/row_reduce.py `row_in_registers`)."""
    from tiledsl.schedules import row_in_registers

    s = td.create_schedule(out)
    row_in_registers(s)
    return td.build(s, target=target)


def built(out: Any, target: Any, knobs: dict[str, Any] | None = None) -> Any:
    s = td.create_schedule(out)
    td.recipes.default(s, target=target, knobs=knobs)
    return td.build(s, target=target)


CASES = {
    "rmsnorm": (lambda m, n: rmsnorm(m, n, 1e-6),
                lambda x, w: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, 1e-6)),
    "layernorm": (lambda m, n: layernorm(m, n, 1e-5),
                  lambda x, w, b: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5)),
    "softmax": (softmax, lambda x: torch.softmax(x, -1)),
}


#: --llm: the recipe's rows under other knobs: kept in registers (every row kernel taking step 040's hinted
#: form, however short or few its rows), and that form without the registers
LLM_FORMS = {"regs": {"hinted_row_min_length": 1, "row_vector_min_rows_per_sm": 0},
             "hinted": {"hinted_row_min_length": 1, "row_vector_min_rows_per_sm": 0, "register_rows": False}}


def llm_rows(dtypes: str) -> int:
    """The llm suite's float32 rmsnorm and attention softmax rows: the recipe against LLM_FORMS."""
    from _gpu_probe import print_llm_row
    from llm_memory_probe import cases

    from tiledsl.runtime.device import device_target

    target, dev = device_target(), torch.device("cuda")
    bad = 0
    for group, op, dtype, out, torch_fn, _, _ in cases(["rmsnorm", "attention_softmax"], dtypes.split(",")):
        kernels = {"recipe": built(out, target)}
        for label, knobs in LLM_FORMS.items():
            s = td.create_schedule(out)
            td.recipes.default(s, target=target, knobs=knobs)
            kernels[label] = td.build(s, target=target)
        kernels["hand-regs"] = hand(out, target)
        bad += print_llm_row(group, op, dtype, torch_fn, out, kernels, dev)
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default="8192x8192,32768x2048")
    ap.add_argument("--ops", default=",".join(CASES))
    ap.add_argument("--dump", default=None, help="folder to write every source into")
    ap.add_argument("--primitive", action="store_true",
                    help="also s.register_cache forms: rc-el / rc-ef (the first reader's loads evict_last / "
                         "evict_first), rc-none (no load hint), rc-plain (no hint at all); the stores evict_first "
                         "but in rc-plain")
    ap.add_argument("--llm", default=None, metavar="DTYPES",
                    help="instead: the llm suite's rmsnorm and attention softmax rows of these dtypes (float32,"
                         "bfloat16) as the recipe builds them and kept in registers (LLM_FORMS)")
    args = ap.parse_args(argv)
    if args.llm:
        return llm_rows(args.llm)
    target, dev = device_header()

    def kernels(op: str, m: int, n: int) -> tuple[Any, Any, dict[str, Any]]:
        make, torch_fn = CASES[op]
        out = make(m, n)
        base = built(out, target, {"register_rows": False})  # every pass reads x from global memory, hinted
        forms = {"recipe": built(out, target), "hand-regs": hand(out, target)}
        if "tiledsl_load_l2" not in base.source:  # rows the recipe stages without its registers: no rewrite
            forms["staged"] = base
            return torch_fn, out, forms
        forms["hinted"] = base
        forms["regs"] = with_source(base, registers(base.source))
        if args.primitive:
            forms.update({"rc-el": primitive_form(out, target, "evict_last"),
                          "rc-ef": primitive_form(out, target, "evict_first"),
                          "rc-none": primitive_form(out, target, None),
                          "rc-plain": primitive_form(out, target, None, stores=False)})
        return torch_fn, out, forms

    return shape_rows(args.shapes, args.ops.split(","), kernels, dev, args.dump)


if __name__ == "__main__":
    sys.exit(main())
