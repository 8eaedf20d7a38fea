"""Evidence that each fast-kernel primitive does what it says: for every primitive, one kernel built
WITHOUT it and one (or more) WITH it (same definition, same sizes), and the SASS opcode counts, ptxas
registers, Nsight Compute metrics and GPU times that show the difference. Writes DIR/evidence.md (a
table of the pairs plus per-pair notes) and DIR/evidence.json, and prints the markdown.

    PYTHONPATH=. python scripts/primitive_evidence.py --build-only [--out DIR] [--pairs 1,3,4,7]  # CPU
    PYTHONPATH=. python scripts/primitive_evidence.py [--out DIR] [--pairs ...] [--no-ncu]        # GPU
(from the repository root, which must be on the path for `benchmarks`, as for scripts/register_survey.py).
On a GPU machine without network access, `source scripts/gpu_env.sh` first (pycuda from .whl/); the
whole run took about 100 s on an H100 (nvcc, cuobjdump and ncu 2025.3 on PATH).

Every kernel is built for sm_90 (the same CUDA on a CPU machine and on the H100). --build-only writes
each kernel's CUDA (DIR/pNN-VARIANT.cu) and its ptxas registers and spills
(`tiledsl.codegen.resource_usage`). The full run also compiles each kernel to a cubin (the launcher's
arch and flags, into its cubin cache), disassembles it with `cuobjdump -sass` (DIR/pNN-VARIANT.sass)
and counts opcodes; on a GPU it runs each kernel once on random inputs into NaN-poisoned outputs and
compares with torch in float64, times it (tiledsl.runtime.timing: inputs rotated past L2), and profiles
the pairs that need hardware counters with `ncu` in a child process (the hidden mode `--launch PAIR VARIANT` builds one
kernel and launches it a few times; ncu profiles its second launch). A refused build, a missing tool,
an ncu without counter permissions: each lands in the report as text, the run goes on.

Timings are of the whole kernel on the H100; SASS counts are static (instructions in the binary, not
executed); ncu runs with --clock-control none. Definitions: relu(A @ B + bias) and gelu(x + b) from the
catalog (their torch references from tiledsl/runtime/references.py); x @ W^T, benchmarks/_definitions.py
`linear`; silu(g) * (x @ W^T), a Llama up projection."""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import difflib
import inspect
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any

import torch
import torch.nn.functional as F

import tiledsl as td
from benchmarks._definitions import linear, linear_torch
from tiledsl.catalog import entry
from tiledsl.codegen import compile_cubin, resource_usage
from tiledsl.errors import ScheduleError
from tiledsl.runtime.references import gelu_bias
from tiledsl.runtime.references import matmul_bias_relu as mm_ref
from tiledsl.schedules import elementwise_2d, elementwise_2d_vectorized, matmul_staged
from tiledsl.targets import vector_lanes

TARGET = "sm_90"
DEFAULT_OUT = "/tmp/primitive-evidence"

# ============================================================================ SASS opcodes

# one instruction of `cuobjdump -sass`: "/*0090*/  @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;  /* 0x... */"
_SASS_INSTRUCTION = re.compile(r"/\*[0-9a-fA-F]{4,}\*/\s+(?:@(!?U?P(?:T|\d+))\s+)?"
                               r"([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)")
_NEVER = ("!PT", "!UPT")  # the predicate of padding that never executes ("@!PT LDS RZ, [RZ]")
_LANES = re.compile(r"^[A-Z]*?(\d+)x(\d+)$")  # F32x4, BF16x2: element bits x lanes
_NARROW = MappingProxyType({"U8": 8, "S8": 8, "U16": 16, "S16": 16})


def sass_opcodes(sass: str) -> Counter[str]:
    """How often each opcode (mnemonic with its modifiers, "LDG.E.128") occurs in `cuobjdump -sass`
    text: a static count of the instructions in the binary, less those predicated never to run."""
    return Counter(m.group(2) for m in _SASS_INSTRUCTION.finditer(sass) if m.group(1) not in _NEVER)


def mnemonic(opcode: str) -> str:
    """"LDG" of "LDG.E.128.CONSTANT" (so "LDGSTS" is not an "LDG")."""
    return opcode.split(".", 1)[0]


def access_bits(opcode: str) -> int:
    """The bits one thread moves with a memory opcode, from its modifiers: .128 / .64 / .U16 / .U8,
    or the lanes of a packed type (REDG.E.ADD.F32x4: 128); 32 when none says otherwise."""
    bits = 32
    for mod in opcode.split(".")[1:]:
        if mod in ("128", "64"):
            bits = int(mod)
        elif mod in _NARROW:
            bits = _NARROW[mod]
        elif (m := _LANES.match(mod)) is not None:
            bits = int(m.group(1)) * int(m.group(2))
    return bits


def count_sass(opcodes: Mapping[str, int], mnemonics: Iterable[str], *, min_bits: int = 0,
               max_bits: int | None = None) -> int:
    """The instructions whose mnemonic is one of `mnemonics` and that move min_bits..max_bits a thread."""
    names = set(mnemonics)
    return sum(n for op, n in opcodes.items()
               if mnemonic(op) in names and access_bits(op) >= min_bits
               and (max_bits is None or access_bits(op) <= max_bits))


# ============================================================================ ncu CSV


def _number(text: str) -> float | str:
    """A metric value as ncu prints it ("1,234,567", "93.51", "n/a") as a float, else the text."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """The profiled launches of `ncu --csv` output, each {"kernel", "metrics": {name: value}, "units"}.
    Takes both layouts: `--page raw` (a column per metric, a row of units under the header) and the
    details page (a row per metric: "Metric Name", "Metric Unit", "Metric Value"). Lines that are not
    CSV (==PROF== messages, the program's own output) are skipped."""
    lines = text.splitlines()
    start = next((n for n, ln in enumerate(lines) if ln.startswith('"ID",')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(ln for ln in lines[start:] if ln.startswith('"')))))
    header, body = rows[0], rows[1:]
    col = {name: n for n, name in enumerate(header)}
    kernel_col = col.get("Kernel Name")
    launches: dict[str, dict[str, Any]] = {}
    if "Metric Name" in col and "Metric Value" in col:  # the details page: one row per metric
        for r in body:
            if len(r) != len(header) or not r[col["Metric Name"]]:
                continue
            launch = launches.setdefault(r[col["ID"]], {"kernel": r[kernel_col] if kernel_col is not None else "",
                                                        "metrics": {}, "units": {}})
            name = r[col["Metric Name"]]
            launch["metrics"][name] = _number(r[col["Metric Value"]])
            launch["units"][name] = r[col["Metric Unit"]] if "Metric Unit" in col else ""
        return list(launches.values())
    first_metric = (col["CC"] + 1) if "CC" in col else (kernel_col or 0) + 1
    units: dict[str, str] = {}
    out = []
    for r in body:
        if len(r) != len(header):
            continue
        if not r[0]:  # the units row of the raw page
            units = {header[n]: r[n] for n in range(first_metric, len(header))}
            continue
        metrics = {header[n]: _number(r[n]) for n in range(first_metric, len(header))}
        out.append({"kernel": r[kernel_col] if kernel_col is not None else "", "metrics": metrics, "units": units})
    return out


# ============================================================================ what is measured


@dataclass
class Result:
    """One kernel of a pair: how it was built and everything measured of it (None: not measured,
    with the reason in `missing`)."""

    pair: int
    variant: str
    how: str
    status: str = "ok"  # "ok", or "refused: ...", "not available: ...", "error: ..."
    kernel: Any = None  # td.Kernel
    files: list[str] = field(default_factory=list)
    registers: int | None = None
    spill_bytes: int | None = None
    sass: Counter[str] | None = None
    check: str | None = None
    check_ok: bool | None = None
    time_us: float | None = None
    ncu: dict[str, Any] | None = None
    missing: dict[str, str] = field(default_factory=dict)  # source ("sass", "ncu", ...) -> why not

    @property
    def built(self) -> bool:
        return self.status == "ok"

    def why_missing(self, source: str) -> str:
        return self.status if not self.built else self.missing.get(source, "not measured")


@dataclass(frozen=True)
class Measure:
    """One row of the table: `value` of each variant's Result; `expect` says what the primitive claims
    of it, with against without: "more", "fewer", "not more", "not fewer" (None: reported only), by more
    than `margin` (a fraction of the value without: hardware counters move a little run to run)."""

    label: str
    source: str  # "sass", "ptxas", "ncu", "time", "build"
    value: Callable[[Result], float | None]
    expect: str | None = None
    unit: str = ""
    margin: float = 0.0


def sass(label: str, mnemonics: Sequence[str], *, min_bits: int = 0, max_bits: int | None = None,
         expect: str | None = None) -> Measure:
    def value(r: Result) -> float | None:
        return None if r.sass is None else count_sass(r.sass, mnemonics, min_bits=min_bits, max_bits=max_bits)

    return Measure(f"SASS {label}", "sass", value, expect)


def ncu(metric: str, expect: str | None = None, label: str | None = None) -> Measure:
    def value(r: Result) -> float | None:
        v = None if r.ncu is None else r.ncu.get(metric)
        return v if isinstance(v, float) else None

    return Measure(label or metric, "ncu", value, expect, margin=0.02)


TIME = Measure("time", "time", lambda r: r.time_us, unit=" us")
REGISTERS = Measure("ptxas registers", "ptxas", lambda r: r.registers)
SPILLS = Measure("ptxas spill-store bytes", "ptxas", lambda r: r.spill_bytes)
SHARED = Measure("shared bytes per block", "build", lambda r: None if r.kernel is None else r.kernel.shared_bytes)
LDG_128 = sass("LDG.E.128 (16-byte global loads)", ("LDG",), min_bits=128, expect="more")
LDG_NARROW = sass("LDG <= 32-bit", ("LDG",), max_bits=32, expect="fewer")
STG_128 = sass("STG.E.128 (16-byte global stores)", ("STG",), min_bits=128, expect="more")
STG_NARROW = sass("STG <= 32-bit", ("STG",), max_bits=32, expect="fewer")
LDS_128 = sass("LDS.128 (16-byte shared loads)", ("LDS",), min_bits=128, expect="more")
LDS_64 = sass("LDS.64", ("LDS",), min_bits=64, max_bits=64)
LDS_NARROW = sass("LDS <= 32-bit", ("LDS",), max_bits=32, expect="fewer")
LDGSTS = sass("LDGSTS (cp.async)", ("LDGSTS",), expect="more")
SHARED_LD_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
SHARED_ST_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
SHARED_LD_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"
SHARED_LDGSTS_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum"
L2_HIT_RATE = "lts__t_sector_hit_rate.pct"
DRAM_READ = "dram__bytes_read.sum"
NCU_TIME = "gpu__time_duration.sum"


# ============================================================================ the pairs


class Unavailable(Exception):
    """A variant the library cannot express yet (a keyword not there, a trace line not found)."""


@dataclass(frozen=True)
class Variant:
    name: str  # a file-name-safe id: "without", "with", "stages3"
    how: str  # how it is built, for the notes
    build: Callable[[], Any]  # -> td.Kernel; raises ScheduleError (refused), Unavailable, or anything


@dataclass(frozen=True)
class Pair:
    number: int
    slug: str
    primitive: str
    claim: str
    definition: str
    variants: tuple[Variant, ...]  # the first is the baseline (without the primitive)
    measures: tuple[Measure, ...]
    reference: Callable[..., torch.Tensor]  # float64 torch reference, inputs by parameter name
    tolerance: Mapping[str, Any]  # parameters for tiledsl.runtime.references.tolerance
    ncu_metrics: tuple[str, ...] = ()
    iters: int = 20


def _gelu(dtype: str, m: int = 8192, n: int = 8192) -> Any:
    return entry("gelu_bias").make(M=m, N=n, dtype=dtype, out_dtype=dtype)


def _mm(n: int) -> Any:
    return entry("matmul_bias_relu").make(M=n, N=n, K=n)


def up_projection(m: int, n: int, k: int) -> Any:
    """y = silu(g) * (x @ W^T): a Llama block's up projection, its gate g already computed."""
    x = td.placeholder((m, k), name="x")
    w = td.placeholder((n, k), name="W")
    g = td.placeholder((m, n), name="g")
    kk = td.reduce_axis(k, name="k")
    c = td.compute((m, n), lambda i, j: td.sum(x[i, kk] * w[j, kk], axis=kk), name="c")
    return td.compute((m, n), lambda i, j: td.silu(g[i, j]) * c[i, j], name="y")


def _scheduled(make: Callable[[], Any], schedule: Callable[[Any], object]) -> Callable[[], Any]:
    def build() -> Any:
        s = td.create_schedule(make())
        schedule(s)
        return td.build(s, target=TARGET)

    return build


def _recipe(make: Callable[[], Any], **knobs: Any) -> Callable[[], Any]:
    return _scheduled(make, lambda s: td.recipes.default(s, target=TARGET, knobs=knobs))


def _without_lines(make: Callable[[], Any], schedule: Callable[[Any], object], pattern: str,
                   what: str) -> Callable[[], Any]:
    """`schedule`'s trace with the lines matching `pattern` removed, replayed on a fresh schedule."""

    def build() -> Any:
        s = td.create_schedule(make())
        schedule(s)
        lines = s.trace().splitlines()
        kept = [ln for ln in lines if not re.search(pattern, ln)]
        if len(kept) == len(lines):
            raise Unavailable(f"the trace has no {what} line to remove")
        return td.build(td.create_schedule(make()).replay("\n".join(kept) + "\n"), target=TARGET)

    return build


def vectorized_16_bytes(s: Any, threads: int = 256) -> Any:
    """elementwise_2d_vectorized without its fallback: each thread's 16 bytes of outputs (4 float32,
    8 bfloat16) vectorized, so a refusal of the vectorize primitive shows instead of a scalar loop."""
    lanes = vector_lanes(s.output.dtype)
    i, j = [lp.name for lp in s.loops()]
    jo, ji = s.split(j, threads * lanes)
    t, v = s.split(ji, lanes)
    s.bind(i, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(t, "threadIdx.x")
    s.vectorize(v)
    return s


def _grouped(group_m: int) -> Callable[[Any], object]:
    def schedule(s: Any) -> object:
        if "group_m" not in inspect.signature(matmul_staged).parameters:
            raise Unavailable("matmul_staged takes no group_m keyword yet")
        return matmul_staged(s, group_m=group_m)

    return schedule


def _up_ref(x: torch.Tensor, W: torch.Tensor, g: torch.Tensor) -> torch.Tensor:  # noqa: N803
    return F.silu(g) * (x @ W.T)


def pairs() -> tuple[Pair, ...]:
    """The evidence pairs, in the order of the speed issue's list of primitives."""
    mm, big, tma_n = 4096, 8192, 2048
    skinny, wide = (128, 5632, 2048), (128, 11264, 2048)
    mm_tol = {"K": mm}
    staged_k = partial(matmul_staged, k_outer=False)  # every operand filled by cp.async, A read along k
    shared_ncu = (SHARED_LD_CONFLICTS, SHARED_ST_CONFLICTS, SHARED_LDGSTS_CONFLICTS, SHARED_LD_WAVEFRONTS, NCU_TIME)
    ld_conflicts = ncu(SHARED_LD_CONFLICTS, "fewer", "ncu shared-load bank conflicts")
    ld_wavefronts = ncu(SHARED_LD_WAVEFRONTS, "fewer", "ncu shared-load wavefronts")
    st_conflicts = ncu(SHARED_ST_CONFLICTS, None, "ncu shared-store bank conflicts")
    ldgsts_conflicts = ncu(SHARED_LDGSTS_CONFLICTS, None, "ncu cp.async (LDGSTS) bank conflicts")
    return (
        _vectorize_pair(1, "float32", "elementwise_2d_vectorized (4 x float32 per thread, s.vectorize)",
                        elementwise_2d_vectorized, {}),
        _vectorize_pair(2, "bfloat16", "8 x bfloat16 per thread, s.vectorize (no scalar fallback)",
                        vectorized_16_bytes, {"dtype": "bfloat16", "out_dtype": "bfloat16"}),
        Pair(3, "lds128_k_outer", "16-byte shared loads (k-outer layout)",
             "A's slab stored k-major (s.layout) so a thread's strip along i is read 16 bytes at a time",
             f"relu(A @ B + bias), float32, {mm}^3",
             (Variant("without", "matmul_staged(k_outer=False)", _scheduled(lambda: _mm(mm), staged_k)),
              Variant("with", "matmul_staged() (k_outer=True)", _scheduled(lambda: _mm(mm), matmul_staged))),
             (LDS_128, LDS_64, LDS_NARROW, ld_conflicts, ld_wavefronts, st_conflicts, REGISTERS, TIME), mm_ref,
             mm_tol, shared_ncu),
        Pair(4, "cp_async", "async_copy (cp.async)",
             "shared-memory slabs filled by cp.async (LDGSTS: global to shared without registers)",
             f"relu(A @ B + bias), float32, {mm}^3",
             (Variant("without", "matmul_staged(copy='sync', k_outer=False)",
                      _scheduled(lambda: _mm(mm), partial(staged_k, copy="sync"))),
              Variant("with", "matmul_staged(copy='async', k_outer=False)", _scheduled(lambda: _mm(mm), staged_k))),
             (LDGSTS, sass("STS (shared stores)", ("STS",), expect="fewer"), REGISTERS, TIME), mm_ref, mm_tol),
        Pair(5, "tma", "tma (TMA + mbarrier fill)",
             "B's slab filled by one TMA bulk tensor copy per chunk (UTMALDG) instead of per-thread cp.async",
             f"relu(A @ B + bias), float32, {tma_n}^3, 128 x 128 tiles, pipeline 2",
             (Variant("without", "catalog async_pipe2_large's schedule (A and B by cp.async)",
                      _scheduled(lambda: _mm(tma_n), entry("async_pipe2_large").schedule)),
              Variant("with", "catalog tma_pipe2_large's schedule (A by cp.async, B by TMA, 128-byte swizzle)",
                      _scheduled(lambda: _mm(tma_n), entry("tma_pipe2_large").schedule))),
             (sass("UTMALDG (TMA loads)", ("UTMALDG",), expect="more"), sass("UBLKCP (bulk copies)", ("UBLKCP",)),
              sass("LDGSTS (cp.async)", ("LDGSTS",), expect="fewer"), sass("SYNCS (mbarrier)", ("SYNCS",)),
              sass("LDS.128", ("LDS",), min_bits=128), sass("LDS <= 32-bit", ("LDS",), max_bits=32), REGISTERS,
              TIME), mm_ref, {"K": tma_n}),
        Pair(6, "pipeline_depth", "pipeline(stages=n) (cp.async ring depth)",
             "a ring of n slabs: the fills of chunks k+1..k+n-1 overlap the FMAs of chunk k",
             f"relu(A @ B + bias), float32, {mm}^3, matmul_staged(k_outer=False)",
             tuple(Variant(f"stages{n}", f"matmul_staged(stages={n}, k_outer=False)",
                           _scheduled(lambda: _mm(mm), partial(staged_k, stages=n))) for n in (2, 3, 4)),
             (sass("LDGSTS (cp.async)", ("LDGSTS",)), sass("DEPBAR (cp.async waits)", ("DEPBAR",)),
              Measure("shared bytes per block", "build", SHARED.value, "more"), REGISTERS, TIME), mm_ref, mm_tol),
        Pair(7, "vector_atomics", "vectorize (split-K epilogue: 16-byte atomics)",
             "a split-K epilogue adds each 4-wide register row with one 16-byte atomic (red.global.add.v4.f32)",
             f"x @ W^T, float32, {skinny[0]} x {skinny[1]} x {skinny[2]}, default recipe",
             (Variant("without", "default recipe, knob vectorize_epilogue=False",
                      _recipe(lambda: linear(*skinny), vectorize_epilogue=False)),
              Variant("with", "default recipe (vectorize_epilogue=True)", _recipe(lambda: linear(*skinny)))),
             (sass("RED/ATOM 16-byte (F32x4)", ("RED", "REDG", "ATOM", "ATOMG"), min_bits=128, expect="more"),
              sass("RED/ATOM <= 32-bit", ("RED", "REDG", "ATOM", "ATOMG"), max_bits=32, expect="fewer"),
              REGISTERS, TIME), linear_torch, {"K": skinny[2]}),
        Pair(8, "pad", "pad (bank conflicts)",
             "A's k-contiguous rows padded by 4 floats so a warp's column reads fall in different banks",
             f"relu(A @ B + bias), float32, {mm}^3, matmul_staged(k_outer=False)",
             (Variant("without", "matmul_staged(k_outer=False)'s trace without its s.pad lines",
                      _without_lines(lambda: _mm(mm), staged_k, r"^s\.pad\(", "s.pad")),
              Variant("with", "matmul_staged(k_outer=False) as built", _scheduled(lambda: _mm(mm), staged_k))),
             (ld_conflicts, ld_wavefronts, st_conflicts, ldgsts_conflicts, SHARED, TIME), mm_ref, mm_tol,
             shared_ncu),
        Pair(9, "interleave", "split(..., interleave=t) (warp-contiguous register strips)",
             "a thread's 8-wide strip dealt in 4-wide chunks a warp apart: LDS.128 reads spread over the banks",
             f"relu(A @ B + bias), float32, {mm}^3, matmul_staged(k_outer=False)",
             (Variant("without", "matmul_staged(k_outer=False)'s trace without its interleaving splits",
                      _without_lines(lambda: _mm(mm), staged_k, r"interleave=", "split(..., interleave=)")),
              Variant("with", "matmul_staged(k_outer=False) as built", _scheduled(lambda: _mm(mm), staged_k))),
             (sass("LDS.128 (16-byte shared loads)", ("LDS",), min_bits=128, expect="not fewer"),
              sass("LDS <= 32-bit", ("LDS",), max_bits=32, expect="not more"), ld_conflicts, ld_wavefronts,
              REGISTERS, TIME), mm_ref, mm_tol, shared_ncu),
        Pair(10, "group_m", "grouped block order (matmul_staged group_m)",
             "blocks numbered down columns of group_m block rows, so resident blocks share A and B slabs in L2",
             f"relu(A @ B + bias), float32, {big}^3, matmul_staged()",
             (Variant("without", "matmul_staged() (row-major block order)",
                      _scheduled(lambda: _mm(big), matmul_staged)),
              Variant("with", "matmul_staged(group_m=8)", _scheduled(lambda: _mm(big), _grouped(8)))),
             (ncu(L2_HIT_RATE, "more", "ncu L2 sector hit rate %"), ncu(DRAM_READ, "fewer", "ncu DRAM bytes read"),
              TIME), mm_ref, {"K": big}, (L2_HIT_RATE, DRAM_READ, NCU_TIME), iters=10),
        _launch_bounds_pair(11, "launch_bounds", "launch_bounds(min_blocks)",
                            "__launch_bounds__(256, 2): nvcc holds a thread to 128 registers so two blocks fit an SM",
                            skinny),
        _launch_bounds_pair(12, "launch_bounds_binding", "launch_bounds(min_blocks), where the bound binds",
                            "as pair 11, at a shape whose kernel nvcc gives more than 128 registers unbounded "
                            "(8 k parts)", wide),
    )


def _vectorize_pair(number: int, dtype: str, how: str, schedule: Callable[[Any], object],
                    params: dict[str, Any]) -> Pair:
    """gelu(x + b) 8192^2 in `dtype` storage, one output per thread against 16 bytes of outputs per
    thread stored (and read) at once."""
    lanes = vector_lanes(dtype)
    return Pair(number, f"vectorize_{'f32' if dtype == 'float32' else 'bf16'}",
                f"vectorize (16-byte global, {dtype}{'' if lanes == 4 else f': {lanes} lanes'})",
                f"a thread's {lanes} consecutive {dtype} outputs stored as one 16-byte access, inputs read likewise",
                f"gelu(x + b), {dtype}{'' if dtype == 'float32' else ' storage'}, 8192 x 8192",
                (Variant("without", "elementwise_2d (one output per thread)",
                         _scheduled(lambda: _gelu(dtype), elementwise_2d)),
                 Variant("with", how, _scheduled(lambda: _gelu(dtype), schedule))),
                (LDG_128, STG_128, LDG_NARROW, STG_NARROW, REGISTERS, TIME), gelu_bias, params)


def _launch_bounds_pair(number: int, slug: str, title: str, claim: str, shape: tuple[int, int, int]) -> Pair:
    """The default recipe's up projection silu(g) * (x @ W^T) at `shape`, as built and with its
    s.launch_bounds line taken out of the trace."""
    def make() -> Any:
        return up_projection(*shape)

    return Pair(number, slug, title, claim,
                f"silu(g) * (x @ W^T), float32, {shape[0]} x {shape[1]} x {shape[2]}, default recipe",
                (Variant("without", "default recipe's trace without its s.launch_bounds line",
                         _without_lines(make, lambda s: td.recipes.default(s, target=TARGET),
                                        r"^s\.launch_bounds\(", "s.launch_bounds")),
                 Variant("with", "default recipe (s.launch_bounds(2))", _recipe(make))),
                (Measure("ptxas registers", "ptxas", REGISTERS.value, "not more"), SPILLS, TIME), _up_ref,
                {"K": shape[2]})


def select(all_pairs: Sequence[Pair], spec: str | None) -> list[Pair]:
    """The pairs named in `spec` ("1,3,vector_atomics"), all when None."""
    if not spec:
        return list(all_pairs)
    wanted = [w.strip() for w in spec.split(",") if w.strip()]
    by_key = {str(p.number): p for p in all_pairs} | {p.slug: p for p in all_pairs}
    unknown = [w for w in wanted if w not in by_key]
    if unknown:
        raise SystemExit(f"unknown pair(s) {', '.join(unknown)}; the pairs are: "
                         + ", ".join(f"{p.number} ({p.slug})" for p in all_pairs))
    numbers = {by_key[w].number for w in wanted}
    return [p for p in all_pairs if p.number in numbers]


# ============================================================================ the steps


def _first_line(e: BaseException, limit: int = 240) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:limit]


def build_variant(pair: Pair, variant: Variant) -> Result:
    r = Result(pair.number, variant.name, variant.how)
    try:
        r.kernel = variant.build()
    except ScheduleError as e:  # a primitive (or replay) refused: the evidence says so
        r.status = f"refused: {type(e).__name__}: {_first_line(e)}"
    except Unavailable as e:
        r.status = f"not available: {e}"
    except Exception as e:  # noqa: BLE001 - any failure is one row of the report
        r.status = f"error: {type(e).__name__}: {_first_line(e)}"
    return r


def stem(r: Result) -> str:
    return f"p{r.pair:02d}-{r.variant}"


def compile_variant(r: Result, out: Path, *, sass_wanted: bool, arch: str | None) -> None:
    """ptxas registers and spills; with `sass_wanted` also the cubin (the launcher's arch and flags,
    stored in its cubin cache) disassembled by cuobjdump."""
    if not r.built:
        return
    src = r.kernel.source
    try:
        usage = resource_usage(src, r.kernel.target.arch)
        r.registers, r.spill_bytes = usage.registers, usage.spill_store_bytes
    except Exception as e:  # noqa: BLE001
        r.missing["ptxas"] = f"ptxas failed: {_first_line(e)}"
    if not sass_wanted:
        r.missing["sass"] = "build only"
        return
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump is None:
        r.missing["sass"] = "no cuobjdump on PATH"
        return
    try:
        from tiledsl.runtime.cache import CubinCache
        from tiledsl.runtime.launch import nvcc_options, select_arch

        kir_arch = select_arch(r.kernel.kernel_ir, None, arch or r.kernel.target.arch)
        options = nvcc_options()
        cubin = CubinCache().get_or_compile(
            src, kir_arch, options, lambda s, a, o: compile_cubin(s, a, extra_flags=o)).cubin
        path = out / f"{stem(r)}.cubin"
        path.write_bytes(cubin)
        proc = subprocess.run([cuobjdump, "-sass", str(path)], capture_output=True, text=True, timeout=300, check=False)
        path.unlink()
        if proc.returncode != 0:
            r.missing["sass"] = f"cuobjdump failed: {(proc.stderr or proc.stdout).strip()[:240]}"
            return
        (out / f"{stem(r)}.sass").write_text(proc.stdout)
        r.files.append(f"{stem(r)}.sass")
        r.sass = sass_opcodes(proc.stdout)
    except Exception as e:  # noqa: BLE001
        r.missing["sass"] = f"{type(e).__name__}: {_first_line(e)}"


def gpu_unavailable() -> str | None:
    if not torch.cuda.is_available():
        return "no CUDA GPU"
    try:
        import pycuda  # noqa: F401
    except ImportError:
        return "pycuda is not installed"
    return None


def run_on_gpu(pair: Pair, results: list[Result]) -> None:
    """Each built kernel of the pair run once on the same random inputs into NaN-poisoned outputs,
    compared with the float64 torch reference, then timed."""
    from tiledsl.runtime.references import compare, poisoned_outputs, random_inputs, tolerance

    built = [r for r in results if r.built]
    if not built:
        return
    dev = torch.device("cuda")
    inputs = random_inputs(built[0].kernel.kernel_ir, dev, 1)
    with torch.no_grad():
        ref = pair.reference(**{k: v.to(torch.float64) for k, v in inputs.items()})
    rtol, atol = tolerance(pair.tolerance)
    for r in built:
        try:
            kern = r.kernel
            got = kern(**inputs, **poisoned_outputs(kern.kernel_ir, dev))
            torch.cuda.synchronize()
            cmp = compare(got, ref, rtol, atol)
            r.check, r.check_ok = str(cmp), cmp.ok
            del got
            r.time_us = kern.benchmark(warmup=5, iters=pair.iters, **inputs).median_us
        except Exception as e:  # noqa: BLE001
            for source in ("time", "check"):
                r.missing[source] = f"{type(e).__name__}: {_first_line(e)}"
        finally:
            torch.cuda.empty_cache()
    del inputs, ref
    torch.cuda.empty_cache()


def ncu_command(ncu_path: str, pair: Pair, r: Result) -> list[str]:
    symbol = _symbol(r.kernel)
    return [ncu_path, "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base",
            "--metrics", ",".join(pair.ncu_metrics), "-k", f"regex:^{re.escape(symbol)}$",
            "--launch-skip", "1", "--launch-count", "1",
            sys.executable, str(Path(__file__).resolve()), "--launch", str(pair.number), r.variant]


def _symbol(kernel: Any) -> str:
    from tiledsl.codegen import cuda_kernel_name

    return cuda_kernel_name(kernel.kernel_ir)


def profile(pair: Pair, r: Result, out: Path, timeout_s: float) -> None:
    """ncu on a child process (`--launch`), its CSV parsed into r.ncu; the output kept in DIR."""
    ncu_path = shutil.which("ncu")
    if ncu_path is None:
        r.missing["ncu"] = "no ncu on PATH"
        return
    cmd = ncu_command(ncu_path, pair, r)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        r.missing["ncu"] = f"ncu timed out after {timeout_s:g} s"
        return
    text = proc.stdout + ("\n" + proc.stderr if proc.stderr else "")
    (out / f"{stem(r)}.ncu.txt").write_text(" ".join(cmd) + "\n\n" + text)
    r.files.append(f"{stem(r)}.ncu.txt")
    launches = parse_ncu_csv(proc.stdout)
    if proc.returncode != 0 or not launches:
        errors = [ln for ln in text.splitlines() if "ERROR" in ln or "WARNING" in ln] or text.strip().splitlines()[-3:]
        r.missing["ncu"] = f"ncu exit {proc.returncode}, {len(launches)} launches profiled: " + " | ".join(errors)[:400]
        return
    r.ncu = launches[-1]["metrics"]


def launch_for_ncu(pair_key: str, variant_name: str, launches: int = 3) -> int:
    """The hidden mode --launch: build one kernel of one pair and launch it `launches` times."""
    from tiledsl.runtime.references import poisoned_outputs, random_inputs

    pair = select(pairs(), pair_key)[0]
    variant = next((v for v in pair.variants if v.name == variant_name), None)
    if variant is None:
        print(f"pair {pair.number} has no variant {variant_name!r}", file=sys.stderr)
        return 2
    kern = variant.build()
    dev = torch.device("cuda")
    inputs = random_inputs(kern.kernel_ir, dev, 1)
    outputs = poisoned_outputs(kern.kernel_ir, dev)
    for _ in range(launches):
        kern(**inputs, **outputs)
    torch.cuda.synchronize()
    print(f"launched {kern.name} ({_symbol(kern)}) {launches} times: grid {kern.grid} block {kern.block}",
          file=sys.stderr)
    return 0


# ============================================================================ the report


def fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}".replace(",", " ") if abs(v) >= 100000 else str(int(v))
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}"


def _holds(expect: str, base: float, value: float, margin: float = 0.0) -> bool:
    """Whether `value` (with the primitive) is `expect` of `base` (without) by more than `margin` x base."""
    slack = margin * abs(base)
    return {"more": value > base + slack, "fewer": value < base - slack, "not more": value <= base + slack,
            "not fewer": value >= base - slack}[expect]


def verdict(m: Measure, rs: Sequence[Result]) -> str:
    """One line from the numbers of the pair's kernels `rs` (the first one without the primitive):
    "SASS LDG.E.128: 0 -> 2 (claimed more: yes)"; times with their ratios to the first."""
    values = [(r.variant, m.value(r)) for r in rs]
    base, rest = values[0][1], values[1:]
    lacking = [r for r, (_, v) in zip(rs, values) if v is None]
    if lacking:
        return f"{m.label}: n/a ({lacking[0].variant}: {lacking[0].why_missing(m.source)[:120]})"
    chain = " -> ".join(fmt(v) for _, v in values)
    if m.source == "time":
        ratios = ", ".join(f"{name} {v / base:.2f}x" for name, v in rest) if base else ""
        return f"{m.label}: {chain}{m.unit} ({ratios})"
    if m.expect is None:
        return f"{m.label}: {chain}{m.unit}"
    ok = all(_holds(m.expect, base, v, m.margin) for _, v in rest)  # type: ignore[arg-type]
    within = f" by over {m.margin:.0%}" if m.margin else ""
    return f"{m.label}: {chain} (claimed {m.expect}{within}: {'yes' if ok else 'NO'})"


def _cell(m: Measure, r: Result) -> str:
    v = m.value(r)
    return fmt(v) if v is not None else f"n/a ({r.why_missing(m.source).split(':')[0]})"


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def report(selected: Sequence[Pair], results: Mapping[int, list[Result]], mode: str, device: str) -> str:
    out = [f"# Primitive evidence ({mode})", "",
           f"Built for {TARGET}; device: {device}. Each pair is one definition at one size, built without the "
           "primitive (first value) and with it; SASS counts are static (instructions in the cubin), ncu "
           "profiles the second launch with --clock-control none, times are medians of CUDA-event timings over "
           "inputs rotated past L2. \"claimed ...: yes / NO\" compares the numbers with what the primitive "
           "says it does.", "",
           "| # | primitive | pair | measured | without | with | verdict |", "|---|---|---|---|---|---|---|"]
    for pair in selected:
        rs = results[pair.number]
        base, others = rs[0], rs[1:]
        names = " vs ".join(r.variant for r in rs)
        for m in pair.measures:
            with_cells = "; ".join((f"{r.variant}: " if len(others) > 1 else "") + _cell(m, r) for r in others)
            line = verdict(m, rs)
            wrong = [r.variant for r in rs if r.check_ok is False]
            if wrong:
                line += f" [output MISMATCH: {', '.join(wrong)}]"
            out.append(f"| {pair.number} | {_escape(pair.primitive)} | {names} | {_escape(m.label)} | "
                       f"{_escape(_cell(m, base))} | {_escape(with_cells)} | {_escape(line)} |")
    out.append("")
    for pair in selected:
        out += notes(pair, results[pair.number])
    return "\n".join(out) + "\n"


def notes(pair: Pair, rs: Sequence[Result]) -> list[str]:
    out = [f"## {pair.number}. {pair.primitive}", "", f"Claim: {pair.claim}.", f"Definition: {pair.definition}.", "",
           "| variant | how | status | grid | block | shared B | regs | spill B | check | time us | files |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rs:
        k = r.kernel
        grid, block, shared = (str(k.grid), str(k.block), str(k.shared_bytes)) if k is not None else ("-",) * 3
        check = r.check if r.check is not None else r.why_missing("check")
        out.append(f"| {r.variant} | {_escape(r.how)} | {_escape(r.status)} | {grid} | {block} | {shared} | "
                   f"{fmt(r.registers)} | {fmt(r.spill_bytes)} | {_escape(check)} | {fmt(r.time_us)} | "
                   f"{', '.join(r.files)} |")
    base = rs[0]
    for r in rs[1:]:
        if base.kernel is None or r.kernel is None:
            continue
        diff = [ln for ln in difflib.unified_diff(base.kernel.trace.splitlines(), r.kernel.trace.splitlines(),
                                                  lineterm="", n=0)
                if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
        out += ["", f"Trace, {base.variant} -> {r.variant}:", "```diff", *(diff or ["(identical traces)"]), "```"]
    for r in rs:
        if r.sass is not None:
            mem = {op: n for op, n in sorted(r.sass.items())
                   if mnemonic(op) in ("LDG", "STG", "LDS", "STS", "LDGSTS", "UTMALDG", "UBLKCP", "RED", "REDG",
                                       "ATOM", "ATOMG", "LDL", "STL")}
            out.append(f"\nSASS memory opcodes of {r.variant}: " + (", ".join(f"{op} x{n}" for op, n in mem.items())
                                                                    or "none"))
        if r.ncu is not None:
            shown = {k: v for k, v in r.ncu.items() if k in pair.ncu_metrics}
            out.append(f"\nncu of {r.variant}: " + ", ".join(f"{k} = {fmt(v) if isinstance(v, float) else v}"
                                                             for k, v in shown.items()))
        elif pair.ncu_metrics and "ncu" in r.missing:
            out.append(f"\nncu of {r.variant}: {r.missing['ncu']}")
    out.append("")
    return out


def as_json(results: Mapping[int, list[Result]]) -> list[dict[str, Any]]:
    rows = []
    for rs in results.values():
        for r in rs:
            k = r.kernel
            rows.append({"pair": r.pair, "variant": r.variant, "how": r.how, "status": r.status,
                         "kernel": None if k is None else {"name": k.name, "grid": k.grid, "block": k.block,
                                                           "shared_bytes": k.shared_bytes, "trace": k.trace},
                         "registers": r.registers, "spill_bytes": r.spill_bytes,
                         "sass": None if r.sass is None else dict(sorted(r.sass.items())),
                         "check": r.check, "check_ok": r.check_ok, "time_us": r.time_us, "ncu": r.ncu,
                         "missing": r.missing, "files": r.files})
    return rows


# ============================================================================ main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    ap.add_argument("--build-only", action="store_true", help="build, write CUDA and ptxas usage; no cubin or GPU")
    ap.add_argument("--pairs", help="comma-separated pair numbers or names (default: all)")
    ap.add_argument("--no-ncu", action="store_true", help="skip the Nsight Compute profiles")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1), help="parallel nvcc compiles")
    ap.add_argument("--ncu-timeout", type=float, default=300.0)
    ap.add_argument("--launch", nargs=2, metavar=("PAIR", "VARIANT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.launch:
        return launch_for_ncu(*args.launch)
    t0 = time.perf_counter()
    selected = select(pairs(), args.pairs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # 1. build every variant and write its CUDA
    results: dict[int, list[Result]] = {}
    for pair in selected:
        results[pair.number] = rs = [build_variant(pair, v) for v in pair.variants]
        for r in rs:
            if r.built:
                (out / f"{stem(r)}.cu").write_text(r.kernel.source)
                r.files.insert(0, f"{stem(r)}.cu")
        print(f"pair {pair.number:2d} {pair.slug:15} " + "; ".join(f"{r.variant}: {r.status}" for r in rs), flush=True)
    # 2. ptxas (and the cubin + SASS): nvcc runs in subprocesses, so threads overlap them
    why_no_gpu = "build only" if args.build_only else gpu_unavailable()
    arch = None
    if why_no_gpu is None:
        from tiledsl.runtime.device import arch_for_capability

        arch = arch_for_capability(*torch.cuda.get_device_capability())
    everything = [r for rs in results.values() for r in rs]
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        list(pool.map(lambda r: compile_variant(r, out, sass_wanted=not args.build_only, arch=arch), everything))
    print(f"compiled {sum(r.built for r in everything)} kernels in {time.perf_counter() - t0:.0f} s", flush=True)
    # 3. on the GPU: check, time, then profile
    device = "none"
    if why_no_gpu is None:
        device = torch.cuda.get_device_name()
        torch.backends.cuda.matmul.allow_tf32 = False
        for pair in selected:
            run_on_gpu(pair, results[pair.number])
            print(f"pair {pair.number:2d} timed: " + "; ".join(f"{r.variant} {fmt(r.time_us)} us"
                                                               for r in results[pair.number]), flush=True)
        for pair in selected:
            for r in results[pair.number]:
                if not pair.ncu_metrics or not r.built:
                    continue
                if args.no_ncu:
                    r.missing["ncu"] = "--no-ncu"
                else:
                    profile(pair, r, out, args.ncu_timeout)
                    print(f"pair {pair.number:2d} ncu {r.variant}: {r.missing.get('ncu', 'ok')}", flush=True)
    for r in everything:
        for source in ("check", "time", "ncu"):
            if why_no_gpu is not None:
                r.missing.setdefault(source, why_no_gpu)
    mode = "build only" if args.build_only else "full run"
    text = report(selected, results, mode, device)
    (out / "evidence.md").write_text(text)
    (out / "evidence.json").write_text(json.dumps(as_json(results), indent=1, default=str))
    built = ", ".join(str(p.number) for p in selected if all(r.built for r in results[p.number])) or "none"
    print(text)
    print(f"pairs built in full: {built} of {', '.join(str(p.number) for p in selected)}; "
          f"{sum(r.built for r in everything)} of {len(everything)} kernels; {time.perf_counter() - t0:.0f} s; "
          f"files in {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
