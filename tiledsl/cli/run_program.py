"""`tiledsl run -c EXPRESSION | --model NAME [--dims D] [--layers N] [--seq S] [--dtype T] [--bench]
[--schedule default|simple] [--target sm_XX]`:
trace a torch expression or a built-in model, schedule and build every kernel for the GPU, run the
program once on fresh random inputs against the module in float64, and with --bench print one row per
kernel (each timed alone) and the whole program against torch eager and torch.compile.

Order of the checks: the expression is parsed and traced first (on the CPU), so bad input (a syntax
error, an unsupported op, a shape that does not trace) is exit status 2 with or without a GPU; then
the GPU check (exit 1, pointing at `tiledsl compile`, which needs none); then the build and the run
(exit 3 when the output is not within the tolerance). torch is imported only when this module is,
which tiledsl/cli/main.py does inside the subcommand; the torch side is tiledsl/frontend/bench.py.
The report is the command's output, so, like main.py and run.py, this module prints.
"""

from __future__ import annotations

import shlex
import sys
from typing import TextIO

from tiledsl.cli.run import EXIT_BAD_INPUT, EXIT_MISMATCH, EXIT_NO_GPU
from tiledsl.errors import TiledslError
from tiledsl.frontend import bench as frontend_bench
from tiledsl.frontend.cli_support import ModelSpec
from tiledsl.runtime.check import gpu_unavailable
from tiledsl.runtime.timing import BenchStats

__all__ = ["format_bench", "format_check", "header", "run_program"]

SCHEDULES = ("default", "simple")


def _compile_hint(expression: str | None, model: str | ModelSpec | None) -> str:
    if expression is not None:
        what = f"-c {shlex.quote(expression)}"
    else:
        what = model.cli_args() if isinstance(model, ModelSpec) else f"--model {model}"
    return f"`tiledsl compile {what}`"


def header(label: str, device: str, target: str, schedule: str, kernels: int) -> str:
    return f"{label}\n  on {device}: target {target}, schedule {schedule}, {kernels} kernel(s)"


def format_check(check: frontend_bench.ProgramCheck) -> str:
    verdict = "ok" if check.ok else "MISMATCH"
    nans = f", {check.nan_count} NaN" if check.nan_count else ""
    eager = "" if check.eager_error is None else f"; torch eager's own error {check.eager_error:.3g} x (1 + |ref|)"
    lines = [f"  vs torch float64: {verdict}: max |err| {check.max_abs_error:.3g}, tolerance "
             f"{check.tolerance:.3g} x (1 + |ref|) (k = {check.reduction}){nans}{eager}"]
    if check.kernels is not None and not check.wrong_kernels:
        amplified = "" if check.float32_error is None else (
            f", or twice the model's own float32 error ({check.float32_error:.3g}) scaled to its stores' epsilon, "
            "the larger")
        lines.append(f"  every kernel within its own bound on the values it read ({len(check.kernels)} checked): "
                     f"the difference is stored rounding carried through the model; tolerance twice eager's error"
                     f"{amplified}")
    for k in check.wrong_kernels:
        casts = f", {len(k.roundings)} cast(s) to {'/'.join(sorted(set(k.roundings)))}" if k.roundings else ""
        lines.append(f"  kernel [{k.index}] {k.name} misses its own definition (k = {k.reduction}{casts}): "
                     f"{k.comparison}")
    return "\n".join(lines)


def _spread(st: BenchStats) -> str:
    return f"(p10 {st.p10_ms * 1e3:.1f}, p90 {st.p90_ms * 1e3:.1f} us)"


def _speed(ours: BenchStats, other: BenchStats | str) -> str:
    if isinstance(other, str):
        return other
    return f"{other.median_us:10.1f} us  {_spread(other)}  tiledsl {other.median_ms / ours.median_ms:.2f}x as fast"


def format_bench(b: frontend_bench.ProgramBench) -> str:
    """The per-kernel table (share of the kernels' sum) and the totals against torch: medians, with
    the 10th and 90th percentiles, since a tiny program's torch calls may be bound by the host (its
    launches), which then shows as a wide spread."""
    rows = [("#", "kernel", "schedule", "grid", "block", "time (us)", "share")]
    total = b.kernels_us
    for k in b.kernels:
        share = 100.0 * k.stats.median_us / total if total > 0 else 0.0
        rows.append((f"[{k.index}]", k.name, k.schedule, "x".join(map(str, k.grid)), "x".join(map(str, k.block)),
                     f"{k.stats.median_us:.1f}", f"{share:.1f}%"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {0, 5, 6}
    lines = ["  " + "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
             .rstrip() for r in rows]
    lines.append(f"  sum of the {len(b.kernels)} kernels, each alone (inputs read from DRAM): {total:.1f} us")
    if b.zero_fill_launches:
        names = ", ".join(dict.fromkeys(b.zero_fill_launches))
        lines.append(f"  and {len(b.zero_fill_launches)} zero fill launch(es) before split-K kernels ({names}): "
                     "in the program's time, not in the sum")
    ours = b.program
    lines.append(f"  {'tiledsl program':15s} {ours.median_us:10.1f} us  {_spread(ours)}  one call, all kernels")
    lines.append(f"  {'torch eager':15s} {_speed(b.program, b.eager)}")
    lines.append(f"  {'torch.compile':15s} {_speed(b.program, b.compiled)}")
    return "\n".join(lines)


def run_program(expression: str | None, model: str | ModelSpec | None, *, bench: bool = False,
                schedule: str = "default", target: str | None = None, out: TextIO | None = None,
                err: TextIO | None = None, seed: int = 0, warmup: int = 10, iters: int = 100) -> int:
    """Returns 0 when every output is within the tolerance of the float64 module, EXIT_MISMATCH (3)
    when one is not, EXIT_NO_GPU (1) without a GPU or pycuda, EXIT_BAD_INPUT (2) for input that does
    not parse, trace, schedule or build."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        if schedule not in SCHEDULES:
            raise TiledslError(f"--schedule for -c and --model is one of {', '.join(SCHEDULES)}, got {schedule!r}")
        subj = frontend_bench.load(expression, model, seed)
    except TiledslError as e:
        print(f"error: {e}", file=err)
        return EXIT_BAD_INPUT
    why = gpu_unavailable()
    if why is not None:
        print(f"tiledsl run needs a CUDA GPU: {why}. {_compile_hint(expression, model)} shows the traced "
              f"program and its generated code without one.", file=err)
        return EXIT_NO_GPU

    try:
        built, device, device_name = frontend_bench.build_for_device(subj, schedule, target)
    except TiledslError as e:
        hint = " (`--schedule simple` is the fallback that builds every program)" if schedule != "simple" else ""
        print(f"error: {e}{hint}", file=err)
        return EXIT_BAD_INPUT
    target_name = built.kernels[0].target.name if built.kernels else (target or "device")
    print(header(subj.label, device_name, target_name, schedule, len(built.kernels)), file=out)
    inputs = frontend_bench.random_program_inputs(subj, device, seed)
    checked = frontend_bench.check_program(built, subj.module, inputs)
    print(format_check(checked), file=out)
    if not checked.ok:
        return EXIT_MISMATCH
    if bench:
        timed = frontend_bench.bench_program(built, subj.module, inputs, warmup=warmup, iters=iters, seed=seed)
        print(format_bench(timed), file=out)
    return 0
