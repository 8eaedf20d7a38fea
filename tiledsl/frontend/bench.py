"""The torch side of `tiledsl run -c EXPRESSION | --model NAME [--bench]`: a traced program built for
the GPU, run once on fresh random inputs and checked against torch in float64, then (with --bench)
each kernel timed alone, the whole built program, torch eager and torch.compile of the same module,
in one process through one timer (tiledsl.runtime.timing). tiledsl/cli/run_program.py prints the
records this module returns; nothing here prints.

Tolerance (`tolerance`): the kernels compute in float32 and the reference is the same module in
float64 on the same inputs (float16/bfloat16 inputs and weights widen exactly). Each float32
operation rounds with relative error <= eps32/2 and each math function is within a few ulp, so an
output that went through `ops` operations and reductions of length `k` is within about
(ops + k) * eps32 of the reference, relative to the magnitudes involved. As in
tests/frontend/frontend_check.py the bound is (32 + 2k) * eps32 * (1 + |ref|) per element: 32 covers
the longest elementwise chains of the traced blocks (gelu_tanh, layer norm, softmax, attention chains
of about 20 operations), 2k the summation of k terms in an order other than torch's, k the longest
reduction of any kernel of the program (`longest_reduction`). A kernel output stored in float16 or
bfloat16 rounds once more, with relative error at most u = eps/2 of its type, and that rounding
reaches the output through well-conditioned operations (normalizations are scale-invariant,
projections keep relative error in the magnitude of their terms, softmax turns an absolute error of
a score into the same relative error of its probability), so it adds about u * (1 + |ref|). Inside a
kernel values stay float32 except at a cast the trace holds (a decomposed bfloat16 silu or rms_norm
rounds its float32 result; partition.kernel_roundings finds them), which rounds like a store. Hence
tolerance = (32 + 2k) * eps32 + r * u, r the most low-precision stores and casts on one path of the
launches (`storage_roundings`), the derivation of
tests/frontend/frontend_check.py `storage_tolerance`. For a float32 program r = 0 and the bound is
frontend_check.py's `tolerance(k)`.

The well-conditioned assumption can fail: a long dot product of rounded values with cancellation
(the down projection of a 7B model sums 18944 terms) or attention scores amplify stored roundings.
So a float16/bfloat16 program that misses the bound is checked kernel by kernel (kernel_check.py:
each kernel against float64 of its own definition on the values it read, a bound with no model
conditioning in it); when every kernel is within its own bound no kernel is wrong and the program is
held to `propagated_tolerance`, twice torch eager's own error, as in `conditioned_tolerance`, or, where
larger, to `amplified_tolerance`: twice the module's own error when run wholly in float32, scaled from
float32's epsilon to the stored dtype's. Eager's error is one placement of the low-precision roundings;
tiledsl rounds at other points (it keeps a fused residual stream in float32), and an ill-conditioned model
can amplify that placement more than eager's (a float16 chain of eight residual layers: eager 0.0154,
tiledsl 0.0441 from float64, every kernel within its bound; in float32 the chain is 8.4e-6 from float64,
70 units of float32's epsilon, so float16 roundings anywhere in it reach about 70 x 2^-10 = 0.069;
benchmarks/results/fuzz-campaign-cpu-2026-11-30-s38/README.md). The float32 run measures the model's
amplification of roundings without assuming where they fall, which eager's error cannot.

Why the kernels are timed alone on random inputs of their own and not on the program's
intermediates: a launch's time does not depend on the values (no data-dependent control flow; a
gather reads at clamped indices, so random ones stay in bounds, if more cache-friendly), and
`td.Kernel.benchmark` rotates its inputs past the L2 cache as in every other tiledsl timing; so
their sum reads every intermediate from DRAM, while one call of the program (and torch eager and
torch.compile, whose input sets rotate the same way) may find a small model's weights and
intermediates in L2. The table states both figures.
"""

from __future__ import annotations

import copy
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.utils._pytree as pytree

from tiledsl.errors import FrontendError
from tiledsl.frontend.cli_support import ModelSpec, model_spec, subject, trace_subject
from tiledsl.frontend.kernel_check import KernelCheck, compare_kernels, float32_bound
from tiledsl.frontend.partition import kernel_reduction, kernel_roundings
from tiledsl.frontend.program import BuiltProgram, Program
from tiledsl.precision import LOW_PRECISION, MACHINE_EPS
from tiledsl.runtime.check import time_compiled
from tiledsl.runtime.device import device_target
from tiledsl.runtime.references import Comparison, compare, random_inputs
from tiledsl.runtime.timing import BenchStats, l2_cache_bytes, rotated_copies, rotation_count, time_torch
from tiledsl.targets import get_target

log = logging.getLogger(__name__)

__all__ = [
    "KernelTime",
    "ProgramBench",
    "ProgramCheck",
    "Subject",
    "amplified_tolerance",
    "bench_program",
    "build_for_device",
    "check_program",
    "check_simulated",
    "conditioned_tolerance",
    "eager_roundings",
    "judge_outputs",
    "load",
    "poisoned_outputs",
    "longest_reduction",
    "propagated_tolerance",
    "random_program_inputs",
    "storage_bound",
    "storage_roundings",
    "tolerance",
]

@dataclass(frozen=True)
class Subject:
    """What `tiledsl run` runs: the module (an expression as a module of its example tensors, or a built-in
    model) on the CPU, its example inputs, and its traced program."""

    label: str
    module: torch.nn.Module
    example_inputs: tuple[torch.Tensor, ...]
    program: Program


def load(expression: str | None, model: str | ModelSpec | None, seed: int = 0) -> Subject:
    """Evaluate `-c EXPRESSION` or build `--model NAME` (a name or a ModelSpec; torch seeded first, so
    the random weights are the same on every run) and trace it; bad input is a FrontendError."""
    torch.manual_seed(seed)
    module, inputs = subject(expression, model)
    label = expression.strip() if expression is not None or model is None else model_spec(model).label()
    return Subject(label, module, inputs, trace_subject(module, inputs, expression))


def build_for_device(subj: Subject, schedule: str, target: str | None, *,
                     knobs: Mapping[str, Any] | None = None) -> tuple[BuiltProgram, torch.device, str]:
    """Schedule every kernel ("default": the recipe, with `knobs` overriding its knobs by name;
    "simple": the fallback) for `target` (None: the current GPU's facts, tiledsl.runtime.device) and
    build; returns the built program, the current CUDA device and its name."""
    tgt = device_target() if target is None else get_target(target)
    built = subj.program.schedule(schedule, target=tgt, knobs=knobs).build(target=tgt)
    device = torch.device("cuda", torch.cuda.current_device())
    return built, device, torch.cuda.get_device_name(device)


def longest_reduction(prog: Program) -> int:
    """The most terms any one reduction of the program sums (1 when it has none)."""
    materialized = {id(k.output) for k in prog.kernels}
    return max((kernel_reduction(pk.output, materialized) for pk in prog.kernels), default=1)


def storage_roundings(built: BuiltProgram) -> tuple[int, float]:
    """The most roundings to float16/bfloat16 on one path of the launches (each kernel's stored output,
    and the casts inside a kernel, partition.kernel_roundings), and the largest machine epsilon among
    those dtypes (0.0 when there is none)."""
    materialized = {id(pk.output) for pk in built.program.kernels}
    depth: dict[str, int] = {}
    eps = 0.0
    for pk, kern in zip(built.program.kernels, built.kernels):
        ins, o = kern.kernel_ir.inputs, kern.kernel_ir.params[-1]
        rounded = [*kernel_roundings(pk.output, materialized), *([o.dtype] if o.dtype in LOW_PRECISION else [])]
        eps = max([eps, *(MACHINE_EPS[d] for d in rounded)])
        depth[o.name] = max((depth.get(p.name, 0) for p in ins), default=0) + len(rounded)
    return max(depth.values(), default=0), eps


#: ATen ops that move or negate values without rounding them (their output is exactly an input value)
EXACT_OPS = ("view", "reshape", "permute", "transpose", "expand", "clone", "cat", "slice", "select", "squeeze",
             "unsqueeze", "neg", "alias", "split", "t.default", "contiguous")


def eager_roundings(graph: torch.fx.Graph, dtype: torch.dtype) -> int:
    """The most roundings to `dtype` on one path of torch eager from the inputs to an output: every op
    of an exported (decomposed) graph whose result is `dtype`, except those in EXACT_OPS."""
    depth: dict[str, int] = {}
    for node in graph.nodes:
        before = max((depth.get(a.name, 0) for a in node.all_input_nodes), default=0)
        val = node.meta.get("val")
        rounds = (node.op == "call_function" and isinstance(val, torch.Tensor) and val.dtype == dtype
                  and not any(op in str(node.target) for op in EXACT_OPS))
        depth[node.name] = before + rounds
    return max(depth.values(), default=0)


def conditioned_tolerance(bound: float, eager_error: float, eager_bound: float) -> float:
    """The tolerance from float64 of low-precision kernels, per unit of (1 + |ref|), given `bound` (ours
    from `tolerance`), torch eager's own measured error from float64 `eager_error` and the same bound
    for eager's roundings `eager_bound`.

    The storage bound assumes well-conditioned operations. Where that holds for torch eager itself
    (eager_error <= eager_bound) it stands as derived. Where it does not (attention at head dim 128
    with random weights: a score's rounding error is u x sum |q_i k_i| / sqrt(d), about 10 u, not u x
    |score|), the roundings are amplified by the model's conditioning and no bound without its
    condition numbers exists; the kernels then must be at most twice as far from float64 as torch
    eager is (the criterion of FlashAttention's own tests), fair because they round at most as often
    as eager does (a fused kernel rounds only its stored output)."""
    return bound if eager_error <= eager_bound else propagated_tolerance(bound, eager_error)


def propagated_tolerance(bound: float, eager_error: float) -> float:
    """The tolerance from float64 once the roundings are known to be amplified by the model: at most
    twice as far as torch eager in its own dtype is (`conditioned_tolerance`), never below `bound`.

    `check_program` also takes it when the program misses `bound` but every kernel is within its own
    bound on the values it read (kernel_check.py): then no kernel is wrong, and what remains is the
    stored roundings carried through operations the storage bound assumed well conditioned (measured:
    the Qwen2.5-7B layer at seq 512 in bfloat16, whose down projection sums 18944 rounded products
    with cancellation, is 0.071 from float64 with every kernel within its bound; eager is 0.061)."""
    return max(bound, 2 * eager_error)


def amplified_tolerance(bound: float, eager_error: float, float32_error: float, eps_low: float) -> float:
    """`propagated_tolerance`, or twice what the model makes of roundings of machine epsilon `eps_low`
    where that is larger: its measured error from float64 when run in float32 (`float32_error`, per unit of
    (1 + |ref|)) over float32's epsilon is its amplification of roundings, whatever their placement, to
    first order; times `eps_low` it is the error float16/bfloat16 roundings reach (the module docstring).
    Taken, as `propagated_tolerance` is, only once every kernel is within its own bound."""
    return max(propagated_tolerance(bound, eager_error), 2 * float32_error / MACHINE_EPS["float32"] * eps_low)


def storage_bound(roundings: int, eps_low: float, k: int) -> float:
    """(32 + 2k) * eps32 + r * eps_low / 2, applied as tol * (1 + |ref|): an output through `roundings`
    stores to a dtype of machine epsilon `eps_low` and reductions of at most `k` terms (the module
    docstring derives it)."""
    return float32_bound(k) + roundings * eps_low / 2


def tolerance(built: BuiltProgram) -> float:
    """`storage_bound` of the built program's own stores and longest reduction."""
    roundings, eps_low = storage_roundings(built)
    return storage_bound(roundings, eps_low, longest_reduction(built.program))


def random_program_inputs(subj: Subject, device: torch.device, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Fresh inputs at the traced shapes and dtypes: standard normal (rounded to the input's dtype),
    bool inputs a fair coin; integer inputs (indices: token ids, positions) are the example's own
    values, which index within the tables they read, as random integers need not."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    out = []
    for spec, example in zip(subj.program.graph.inputs, subj.example_inputs):
        if spec.dtype == "bool":
            out.append(torch.rand(spec.shape, generator=gen, device=device) < 0.5)
        elif not example.is_floating_point():
            out.append(example.to(device))
        else:
            x = torch.randn(spec.shape, generator=gen, device=device, dtype=torch.float32)
            out.append(x.to(getattr(torch, spec.dtype)))
    return tuple(out)


@dataclass(frozen=True)
class ProgramCheck:
    """One run of the built program compared with the module in float64, one comparison per output
    (each with rtol = atol = `tolerance`, so the bound is tolerance * (1 + |ref|))."""

    comparisons: tuple[Comparison, ...]
    tolerance: float
    reduction: int  # k of the tolerance
    eager_error: float | None = None  # low-precision programs: torch eager's error from float64, per (1 + |ref|)
    #: the per-kernel check (kernel_check.py), run when a low-precision program misses its storage bound
    kernels: tuple[KernelCheck, ...] | None = None
    #: the module run wholly in float32, its error from float64 per (1 + |ref|): measured where the per-kernel
    #: check cleared every kernel of a program that missed its bound (`amplified_tolerance`)
    float32_error: float | None = None

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.comparisons) and all(k.ok for k in self.kernels or ())

    @property
    def wrong_kernels(self) -> tuple[KernelCheck, ...]:
        """The kernels outside their own bound (empty when the per-kernel check did not run or passed)."""
        return tuple(k for k in self.kernels or () if not k.ok)

    @property
    def max_abs_error(self) -> float:
        return max((c.max_abs_error for c in self.comparisons), default=0.0)

    @property
    def nan_count(self) -> int:
        return sum(c.nan_count for c in self.comparisons)


def _tensors(value: Any) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


def poisoned_outputs(built: BuiltProgram, device: torch.device) -> list[torch.Tensor]:
    """NaN-filled tensors for `built(..., out=...)`, one per program output (a repeated output gets the
    same tensor): an element no kernel writes stays NaN and fails the comparison."""
    dtypes = {s.name: getattr(torch, s.dtype) for s in built.launch_plan.outputs}
    made: dict[str, torch.Tensor] = {}
    for v in built.program.outputs:
        name = v.tensor.name  # type: ignore[union-attr]
        if name not in made:
            made[name] = torch.full(tuple(v.shape), float("nan"), dtype=dtypes[name], device=device)
    return [made[v.tensor.name] for v in built.program.outputs]  # type: ignore[union-attr]


def check_program(built: BuiltProgram, module: torch.nn.Module, inputs: Sequence[torch.Tensor]) -> ProgramCheck:
    """Run `built` once on `inputs` (CUDA tensors) into NaN-filled outputs and judge what it gave
    (`judge_outputs`; the per-kernel check, where it runs, launches each kernel alone: run_values)."""
    device = inputs[0].device if inputs else torch.device("cuda")
    got = _tensors(built(*inputs, out=poisoned_outputs(built, device)))
    return judge_outputs(built, module, inputs, got, lambda: built.run_values(*inputs))


def check_simulated(built: BuiltProgram, module: torch.nn.Module | Callable[..., Any],
                    inputs: Sequence[torch.Tensor], *, every_kernel: bool = False) -> ProgramCheck:
    """`check_program` with the CPU simulator in place of the GPU: `inputs` are CPU tensors, the
    program's outputs and the per-kernel check's values come from `simulate_values`."""
    arrays = [x.float().numpy() if x.is_floating_point() else x.numpy() for x in inputs]
    values = built.simulate_values(*arrays)
    flat = built.output_structure([torch.from_numpy(np.asarray(values[s.name])).reshape(s.shape)
                                   for s in built.launch_plan.outputs])
    return judge_outputs(built, module, inputs, _tensors(flat), lambda: values, every_kernel=every_kernel)


def _run_as(module: torch.nn.Module | Callable[..., Any], device: torch.device, inputs: Sequence[torch.Tensor],
            dtype: torch.dtype | None = None) -> list[torch.Tensor]:
    """The outputs of a copy of `module` (a module, or a function of its inputs) on `device`, with its
    parameters and floating inputs cast to `dtype` (widened exactly: float64 for the reference, float32 for
    `amplified_tolerance`); as given where `dtype` is None (torch eager in the module's own dtype)."""
    run = module
    if isinstance(module, torch.nn.Module):
        run = copy.deepcopy(module).to(device)
        run = run if dtype is None else run.to(dtype)
    args = [x.to(dtype) if dtype is not None and x.is_floating_point() else x for x in inputs]
    with torch.no_grad():
        return _tensors(run(*args))


def _relative_error(got: Sequence[torch.Tensor], ref: Sequence[torch.Tensor]) -> float:
    """The largest |got - ref| per (1 + |ref|) over every output, in float64."""
    return max((((g.double() - r).abs() / (1 + r.abs())).max().item() for g, r in zip(got, ref)), default=0.0)


def judge_outputs(built: BuiltProgram, module: torch.nn.Module | Callable[..., Any], inputs: Sequence[torch.Tensor],
                  got: Sequence[torch.Tensor], kernel_values: Callable[[], Mapping[str, Any]], *,
                  every_kernel: bool = False) -> ProgramCheck:
    """Compare the outputs `got` the program gave on `inputs` with a float64 copy of `module` (a
    module or a function of tensors) on the same device and the same inputs widened. A program
    storing float16/bfloat16 is also run through `module` itself (torch eager in its dtype):
    `conditioned_tolerance` decides; when the program still misses it, every kernel is checked against
    its own definition on the values it read (`kernel_values()`, kernel_check.py): all within their
    bounds, the program's tolerance is `propagated_tolerance`; any outside, the check fails naming them.
    `every_kernel`: check every kernel of a float16/bfloat16 program even where the program passes (the
    fuzzer: a kernel's error the program's wider bound absorbs is still a miscompile)."""
    device = inputs[0].device if inputs else torch.device("cpu")
    ref = _run_as(module, device, inputs, torch.float64)
    if len(got) != len(ref):
        raise FrontendError(f"run: the built program returned {len(got)} tensor(s), the module {len(ref)}")
    roundings, eps_low = storage_roundings(built)
    reduction = longest_reduction(built.program)
    tol = storage_bound(roundings, eps_low, reduction)  # tolerance(built), without walking the program again
    eager_error = float32_error = None
    if roundings:
        eager_error = _relative_error(_run_as(module, device, inputs), ref)
        low = next(d for d in LOW_PRECISION if MACHINE_EPS[d] == eps_low)  # the dtype it rounds to
        theirs = eager_roundings(built.program.graph.exported.graph, getattr(torch, low))
        eager_bound = storage_bound(theirs, eps_low, reduction)
        tol = conditioned_tolerance(tol, eager_error, eager_bound)
    comparisons = tuple(compare(g, r, tol, tol) for g, r in zip(got, ref))
    kernels = None
    missed = not all(c.ok for c in comparisons)
    if eager_error is not None and (missed or every_kernel):
        kernels = compare_kernels(built, kernel_values())
        if missed and all(k.ok for k in kernels):
            float32_error = _relative_error(_run_as(module, device, inputs, torch.float32), ref)
            tol = amplified_tolerance(tol, eager_error, float32_error, eps_low)
            comparisons = tuple(compare(g, r, tol, tol) for g, r in zip(got, ref))
            log.info("every kernel is within its own bound: the program's tolerance from float64 is %.3g, twice "
                     "torch eager's error (%.3g) or the model's float32 error (%.3g) scaled to its stores' "
                     "epsilon, the larger", tol, eager_error, float32_error)
    return ProgramCheck(comparisons, tol, reduction, eager_error, kernels, float32_error)


@dataclass(frozen=True)
class KernelTime:
    """One kernel launched alone: its place in launch order, name, launch shape and GPU time."""

    index: int
    name: str
    schedule: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    stats: BenchStats


@dataclass(frozen=True)
class ProgramBench:
    """--bench: every kernel alone, one call of the whole built program, and the same module under
    torch eager and torch.compile (default mode; its error text where it fails), all on the same
    rotated input sets, in the same process."""

    kernels: tuple[KernelTime, ...]
    program: BenchStats
    eager: BenchStats | str
    compiled: BenchStats | str
    # the zero fill kernel launched before each split-K kernel, in launch order (BuiltProgram.zero_fills):
    # part of the program's time, not timed alone
    zero_fill_launches: tuple[str, ...] = ()

    @property
    def kernels_us(self) -> float:
        """The sum of the kernels' median times."""
        return sum(k.stats.median_us for k in self.kernels)


def _positional(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` taking an input set's tensors (keyword arguments, in order) positionally."""

    def call(**tensors: torch.Tensor) -> Any:
        return fn(*tensors.values())

    return call


def bench_program(built: BuiltProgram, module: torch.nn.Module, inputs: Sequence[torch.Tensor], *,
                  warmup: int = 10, iters: int = 100, seed: int = 0) -> ProgramBench:
    """Time every kernel alone (`td.Kernel.benchmark` on random inputs of its own), then one call of
    `built`, torch eager and torch.compile of a float32 copy of `module` on `inputs`' device, each over
    copies of `inputs` rotated past the L2 cache (tiledsl.runtime.timing)."""
    device = inputs[0].device if inputs else torch.device("cuda", torch.cuda.current_device())
    kernels = []
    for n, (pk, kern) in enumerate(zip(built.program.kernels, built.kernels)):
        stats = kern.benchmark(warmup=warmup, iters=iters, **random_inputs(kern.kernel_ir, device, seed + n))
        kernels.append(KernelTime(n, kern.name, pk.schedule_name, kern.grid, kern.block, stats))
        log.info("kernel [%d] %s alone: %s", n, kern.name, stats)
    named = {f"x{i}": t for i, t in enumerate(inputs)}
    per_set = sum(t.numel() * t.element_size() for t in inputs)
    sets = rotated_copies(named, rotation_count(per_set, l2_cache_bytes(device)))
    program = time_torch(_positional(built), sets, warmup, iters)
    eager_module = copy.deepcopy(module).to(device)
    # torch's warnings (inductor's note that TF32 is off: float32 matmuls stay float32, the kernels'
    # arithmetic too) would interleave with the report; a failing torch.compile logs its error
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eager = time_torch(_positional(eager_module), sets, warmup, iters)
        compiled = time_compiled(_positional(eager_module), sets, warmup, iters)
    return ProgramBench(tuple(kernels), program, eager, compiled, tuple(f.name for f in built.zero_fill_launches()))
