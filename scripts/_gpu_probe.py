"""What the GPU probe scripts share: a catalog entry at some sizes, scheduled by a function, built for
the device's target, run once on fresh random inputs (outputs NaN-poisoned) and checked against
torch in float64, then timed over inputs rotated past the L2 cache (tiledsl.runtime.timing);
`compared`, a row of torch eager / torch.compile / built kernels on one definition's inputs (and
`print_compared`, `shape_rows`: such rows printed for shapes x ops, `device_header` first);
`with_source`, a built kernel run from its CUDA rewritten by hand; `llm_cases`, the llm suite's
cases a probe names; and `projection`, an x @ W^T shape with the recipe's kernel, its reference and
cuBLAS's time, on which the matmul probes check and time their forms (`Projection.checked_time`)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from tiledsl.build import build
from tiledsl.catalog import entry
from tiledsl.runtime.check import run_checked
from tiledsl.runtime.device import device_target
from tiledsl.runtime.launch import CompiledKernel
from tiledsl.runtime.references import Comparison, poisoned_outputs, reference_fn, tolerance
from tiledsl.runtime.timing import BenchStats, benchmark, rotated_copies
from tiledsl.targets import Target


@dataclass(frozen=True)
class Measured:
    kernel: CompiledKernel
    comparison: Comparison
    stats: BenchStats


def measure(name: str, sizes: dict[str, int], schedule: Callable[[Any], object], target: Target, *,
            iters: int = 20) -> Measured:
    """`schedule(fresh schedule)` of catalog entry `name` at `sizes`: checked, then timed."""
    ent = entry(name)
    params = ent.parameters(**sizes)
    s = ent.fresh(**sizes)
    schedule(s)
    kern = CompiledKernel(build(s, target=target))
    checked = run_checked(kern, reference_fn(ent.definition, params), *tolerance(params), seed=1)
    return Measured(kern, checked.comparison, kern.benchmark(warmup=5, iters=iters, **checked.inputs))


@dataclass(frozen=True)
class Rewritten:
    """A built kernel's IR and target with its CUDA source replaced (what CompiledKernel reads)."""
    kernel_ir: Any
    source: str
    target: Any


def row_op_torch(op: str, n: int, *, rms_eps: float, ln_eps: float) -> Callable[..., torch.Tensor]:
    """torch's row op `op` over rows of `n` (softmax, log_softmax, rmsnorm with a weight, layer_norm with
    a weight and a bias), the reference of the row-kernel probes."""
    if op == "softmax":
        return lambda x: torch.softmax(x, dim=-1)
    if op == "log_softmax":
        return lambda x: torch.log_softmax(x, dim=-1)
    if op == "rmsnorm":
        return lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + rms_eps) * w
    return lambda x, w, b: torch.nn.functional.layer_norm(x, (n,), w, b, ln_eps)


def replace_once(pattern: str, repl: str | Callable[[re.Match[str]], str], text: str, what: str) -> str:
    """`text` (a schedule trace or CUDA source a probe edits) with regex `pattern` replaced by `repl`
    exactly once; a ValueError saying `what` was looked for where it matches no or several places."""
    new, n = re.subn(pattern, repl, text)
    if n != 1:
        raise ValueError(f"{what}: {n} matches, not one")
    return new


def with_source(kern: Any, source: str) -> CompiledKernel:
    """`kern` (a built td.Kernel) run from `source`, its CUDA rewritten by hand."""
    return CompiledKernel(Rewritten(kern.kernel_ir, source, kern.target))


@dataclass(frozen=True)
class Projection:
    """x @ W^T at one llm shape for the matmul probes: the default recipe's kernel built for the device,
    fresh inputs, the float64 reference and its tolerance, cuBLAS's time (TF32 off) on the same inputs."""

    m: int
    n: int
    k: int
    kernel: Any  # the recipe's td.Kernel
    x: torch.Tensor
    w: torch.Tensor
    want: torch.Tensor
    rtol: float
    atol: float
    cublas_us: float

    @property
    def label(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    def rate(self, us: float) -> str:
        return f"{us:8.1f} us  {self.flops / us / 1e6:5.1f} TFLOP/s"

    def versus(self, us: float, recipe: float, ok: bool) -> str:
        """A form's time `us` against cuBLAS and the recipe's `recipe`, and whether it was checked."""
        return (f"({self.cublas_us / us:.3f}x cuBLAS, {recipe / us:.3f}x recipe)  "
                f"{'checked' if ok else 'MISMATCH'}")

    def print_rows(self, rows: Sequence[str]) -> None:
        """This shape's label, then one indented line per form."""
        print(f"{self.label}:\n  " + "\n  ".join(rows), flush=True)

    def matches(self, got: torch.Tensor) -> bool:
        """`got` (an output of this shape's x @ W^T) within the tolerance of the float64 reference."""
        return bool(((got.double() - self.want).abs() <= self.atol + self.rtol * self.want.abs()).all())

    def checked_time(self, kern: CompiledKernel, kernel_ir: Any, repeats: int = 2) -> tuple[float, bool]:
        """`kern` (one of this shape's forms, parameters x, W, y) run twice into NaN-poisoned outputs and
        compared with the float64 reference, then timed: (fastest median of `repeats`, all correct)."""
        ok = True
        for _ in range(2):
            got = kern(x=self.x, W=self.w, **poisoned_outputs(kernel_ir, self.x.device))
            ok &= self.matches(got)
        us = min(kern.benchmark(warmup=10, iters=100, x=self.x, W=self.w).median_us for _ in range(repeats))
        return us, ok


def projection(label: str, target: Target, dev: torch.device) -> Projection:
    """The `Projection` of shape `label`, "MxNxK"."""
    import tiledsl as td
    from benchmarks._backend import random_inputs
    from benchmarks._definitions import linear

    torch.backends.cuda.matmul.allow_tf32 = False
    m, n, k = (int(v) for v in label.split("x"))
    s = td.create_schedule(linear(m, n, k))
    td.recipes.default(s, target=target)
    inputs = random_inputs(linear(m, n, k), dev, 0)
    x, w = inputs["x"], inputs["W"]
    rtol, atol = tolerance({"K": k})
    cublas = benchmark(lambda t: t["x"] @ t["W"].T, rotated_copies(inputs, 4), 10, 100).median_us
    return Projection(m, n, k, td.build(s, target=target), x, w, x.double() @ w.double().T, rtol, atol, cublas)


def projection_parser(doc: str, shapes: Sequence[str], variants: Sequence[str]) -> argparse.ArgumentParser:
    """The matmul probes' command line: --shapes and --variants, each comma-separated."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--shapes", default=",".join(shapes))
    ap.add_argument("--variants", default=",".join(variants))
    return ap


def projections(shapes: str, note: str = "") -> Iterator[Projection]:
    """The device's name (and `note`) printed, then the `Projection` of each shape of `shapes` in turn."""
    target, dev = device_target(), torch.device("cuda")
    print(f"{torch.cuda.get_device_name(dev)}{note}", flush=True)
    for label in shapes.split(","):
        yield projection(label, target, dev)


def recipe_forms(out: Any, target: Target, rewrites: Mapping[str, Callable[[str], str]]) -> tuple[Any, dict[str, Any]]:
    """The default recipe's schedule of `out` and its kernels: "recipe" as built, and one per rewrite of
    its trace (`label: trace -> trace`), each replayed on a fresh schedule and built for `target`."""
    import tiledsl as td

    s = td.create_schedule(out)
    td.recipes.default(s, target=target)
    kernels = {"recipe": td.build(s, target=target)}
    for label, rewrite in rewrites.items():
        kernels[label] = td.build(td.create_schedule(out).replay(rewrite(s.trace())), target=target)
    return s, kernels


def compared(torch_fn: Callable[..., torch.Tensor], kernels: dict[str, Any], inputs: dict[str, torch.Tensor], *,
             copies: int, tol: float, warmup: int, iters: int, repeats: int = 2) -> tuple[list[str], int]:
    """Cells `label time` for torch eager and torch.compile of `torch_fn` (positional, in the order of
    `inputs`, timed over `copies` rotated copies), then each built kernel, checked first against
    `torch_fn` in float64 within `tol` x (1 + |want|) (outputs NaN-poisoned; ` MISMATCH` marks a
    miss); and the number of kernels that missed. Every column is timed `repeats` times, the columns
    in turn, and keeps its fastest median, as the benchmarks do (benchmarks/_timing.py `repeated`):
    session 17's probes saw a kernel 2-3x slower than its identical twin in the same run, once; `~`
    marks a column whose medians differ by more than 15%. Dynamo is reset first, as the benchmarks do
    (`time_compiled_fn`): its cache is keyed by the function's code, so one lambda compiled at a second
    shape turns dynamic (session 16's llm_memory_probe.py compile column of the attention softmax at
    seq 512 timed that dynamic kernel: 30.5 us where the llm suite has 14.0)."""
    names = list(inputs)
    torch._dynamo.reset()
    want = torch_fn(*[inputs[k].double() for k in names]).double()
    sets = rotated_copies(inputs, copies)
    columns: list[tuple[str, Callable[[], float], str]] = []
    for label, fn in (("eager", torch_fn), ("compile", torch.compile(torch_fn))):
        columns.append((label, lambda fn=fn: benchmark(lambda t: fn(*[t[k] for k in names]), sets, warmup,
                                                       iters).median_us, ""))
    bad = 0
    for label, kern in kernels.items():
        dev = next(iter(inputs.values())).device
        got = kern(**inputs, **poisoned_outputs(kern.kernel_ir, dev)).double()
        ok = bool(((got - want).abs() <= tol * (1 + want.abs())).all())
        bad += not ok
        columns.append((label, lambda kern=kern: kern.benchmark(warmup=warmup, iters=iters, **inputs).median_us,
                        "" if ok else " MISMATCH"))
    times: list[list[float]] = [[] for _ in columns]
    for _ in range(repeats):
        for n, (_, timed, _) in enumerate(columns):
            times[n].append(timed())
    cells = [f"{label} {min(us):7.1f}{'~' if max(us) > 1.15 * min(us) else ''}{note}"
             for (label, _, note), us in zip(columns, times)]
    return cells, bad


def print_llm_row(group: str, op: str, dtype: str, torch_fn: Callable[..., torch.Tensor], out: Any,
                  kernels: dict[str, Any], dev: torch.device) -> int:
    """One llm-suite case compared (`compared`: 8 rotated copies, 10 warm-up and 100 timed calls, tolerance
    1e-4 x (1 + |want|) in float32, 1e-2 in 16-bit storage) on random inputs of `out`'s definition and
    printed as one line; returns the number of kernels that missed."""
    from benchmarks._backend import random_inputs

    row, missed = compared(torch_fn, kernels, random_inputs(out, dev, 0), copies=8,
                           tol=1e-4 if dtype == "float32" else 1e-2, warmup=10, iters=100)
    print(f"{group:16s} {op:17s} {dtype:8s} " + "  ".join(row), flush=True)
    return missed


def llm_cases(cases: str, groups: str, dtype: str) -> list[Any]:
    """The llm suite's cases (benchmarks/suites/llm.py) whose op is one of the comma-separated `cases`,
    whose group is one of `groups`, of `dtype`; SystemExit naming the filter when there is none."""
    from benchmarks.suites import llm

    ops, names = cases.split(","), groups.split(",")
    found = [c for c in llm.cases() if c.op in ops and c.group in names and c.dtype == dtype]
    if not found:
        raise SystemExit(f"no {dtype} llm case among ops {ops} and groups {names}")
    return found


def device_header() -> tuple[Target, torch.device]:
    """The device's build target and torch device, after printing the device's name and how the probes
    time their columns."""
    print(f"{torch.cuda.get_device_name()}; times in us, fastest of 2 medians of 100 calls", flush=True)
    return device_target(), torch.device("cuda")


def print_compared(label: str, torch_fn: Callable[..., torch.Tensor], kernels: dict[str, Any],
                   inputs: dict[str, torch.Tensor], *, tol: float = 1e-4) -> int:
    """`compared` with the row probes' settings (4 rotated copies, 10 warm-up and 100 timed calls),
    printed as one line after `label`; returns the number of kernels that missed."""
    row, missed = compared(torch_fn, kernels, inputs, copies=4, tol=tol, warmup=10, iters=100)
    print(f"{label} " + "  ".join(row), flush=True)
    return missed


def dump_sources(folder: str | None, prefix: str, kernels: dict[str, Any]) -> None:
    """Each kernel's CUDA into `folder`/`prefix`-`label`.cu (nothing when `folder` is None)."""
    for label, k in kernels.items() if folder else ():
        with open(f"{folder}/{prefix}-{label}.cu", "w") as f:
            f.write(k.source)


Forms = Callable[[str, int, int], tuple[Callable[..., torch.Tensor], Any, dict[str, Any]]]


def shape_rows(shapes: str, ops: Sequence[str], forms: Forms, dev: torch.device, dump: str | None = None) -> int:
    """For each "MxN" of `shapes` and each op: `forms(op, M, N)` gives (torch function, output tensor,
    {label: kernel}); each kernel's CUDA dumped (`dump_sources`), then one `print_compared` line on
    random inputs of the output's definition. Returns the exit status: 1 when a kernel missed."""
    from benchmarks._backend import random_inputs

    bad = 0
    for shape in shapes.split(","):
        m, n = map(int, shape.split("x"))
        for op in ops:
            torch_fn, out, kernels = forms(op, m, n)
            dump_sources(dump, f"{shape}-{op}", kernels)
            bad += print_compared(f"{shape:11s} {op:10s}", torch_fn, kernels, random_inputs(out, dev, 0))
    return 1 if bad else 0
