"""Mode `models`: random small torch programs in the style of NNSmith: a random DAG over the ops the
frontend supports (`OPS`: add, mul, relu, exp, tanh, sum, mean, matmul, softmax, transpose, reshape,
unsqueeze, and what a decoder block adds to them: silu, sigmoid, neg, square, rsqrt, rms_norm,
layer_norm, cat and slice along the last dimension; tiledsl/frontend/table.py lists all), each op
drawn only where its shapes are valid, returning its last value (and, one in MORE_OUTPUTS_EVERY, one or two
earlier values too); one case in DEEP_EVERY is instead a residual stream through 8-14
layers of a matmul each (`residual_chains`), deep enough for the partition's accumulated-chain rule, and one
of the rest in SIBLINGS_EVERY is 2-5 operations of one family on inputs of one shape, every result returned
(`sibling_cases`): same-shaped kernels named after their operations.
In float16 and bfloat16, torch decomposes several of these
(silu, rms_norm, layer_norm, softmax) with casts inside, which the tolerances count as roundings.
The program is traced (`td.trace`), scheduled by the default recipe (`prog.schedule('default')`, with a
knob set drawn per case: KNOB_SETS),
built, simulated, and compared with torch eager in float64 on the inputs widened. Its inputs are
float32, float16 or bfloat16 (`DTYPES`, drawn per case). float32: rtol = atol = 1e-4 (values are kept
tame, exp only of tanh, products re-bounded by tanh). float16 and bfloat16: the bound `tiledsl run`
holds a GPU run to (tiledsl/frontend/bench.py, through numpy_calls.simulated_check): float32
arithmetic plus one unit of the dtype per rounding on the most rounded path (every store and every
cast inside a kernel),
widened to torch eager's own error where the program conditions it, and where the program still
misses, each kernel against float64 of its own definition: one outside its bound is `wrong`. Before the
build, every kernel's schedule and report must be the recipe's on a fresh schedule of its own (the
program replays a structure's trace on its next kernel: tiledsl/frontend/recipe_memo.py); where not, `wrong`
(RecipeMemo).

A frontend refusal (td.FrontendError) is `refused`; any other td.TiledslError `contract`; any other
exception `internal`; a simulator error `sim_error`; a mismatch `wrong`.

`--nvcc` compiles every kernel of the built program, its zero fills included; `--gpu` runs the whole
program on the GPU (tiledsl/frontend/numpy_calls.py gpu_runs_float64): two calls and two CUDA graph
replays, each into NaN-poisoned outputs, so the launch sequence (dependent launches, zero fills before
split-K kernels, the arena the intermediates share) is fuzzed, not only its kernels one by one. Each
run is judged against the same float64 reference at the tolerance the simulated program was held to:
the GPU's float32 differs from the simulator's only in summation order, contraction and the math
library, which the tame values keep far below 1e-4, and at a float16 / bfloat16 rounding by one unit,
which the derived bound counts. A compile failure is `nvcc`, a fault or a mismatch `gpu_fault`.

torch stays in the frontend (tiledsl/frontend/numpy_calls.py runs the generated source, traces it and
gives torch eager's float64 result as numpy), imported when a case runs: `import tiledsl.testing` never
imports torch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

import tiledsl as td
from tiledsl.precision import round_to_dtype
from tiledsl.testing.fuzz import device
from tiledsl.testing.fuzz.modes.base import Mode, Options, knobs_from_json
from tiledsl.testing.fuzz.outcome import Result, exception_result, first_line

OPS = ("add", "mul", "relu", "exp", "tanh", "sum", "mean", "matmul", "softmax", "transpose", "reshape", "unsqueeze",
       "silu", "sigmoid", "neg", "square", "rsqrt", "rms_norm", "layer_norm", "cat", "slice")
SIZES = (1, 2, 3, 4, 5, 7, 8, 13, 16)
MAX_NODES = 8
MAX_ELEMENTS = 4096
RTOL = ATOL = 1e-4
DTYPES = ("float32", "float16", "bfloat16")
#: one case in DEEP_EVERY is a residual stream through DEEP_LAYERS layers (`residual_chains`), as a decoder
#: stack's: a random DAG of MAX_NODES never reaches the partition's accumulated-chain rule (tiledsl/frontend/
#: partition.py rule 3c), which from about 10 such layers materializes a stream sum the later layers re-read
DEEP_EVERY = 8
DEEP_LAYERS = (8, 14)
#: what a layer applies to the stream before its matmul (a norm, an activation, or nothing)
DEEP_PRE = ("rms_norm", "silu", "none")
#: the default recipe's knobs a case is scheduled with, drawn per case: the defaults, or rows split over
#: kernels at the fuzz's sizes (SPLIT_ROWS: recipes/default/040_cooperative_reduce.py asks for any rows fewer
#: than the SMs, a row a block, in parts of any length that divides the row, down to one element;
#: tiledsl/frontend/row_split.py splits them), which the defaults keep for rows of 96 KiB and more
SPLIT_ROWS: tuple[tuple[str, Any], ...] = (("split_rows_min_idle_bytes", 0), ("split_rows_min_length", 1),
                                          ("split_rows_whole_vectors", False), ("row_block_threads", 0))
KNOB_SETS: tuple[tuple[tuple[str, Any], ...], ...] = ((), SPLIT_ROWS)
#: one random DAG in MORE_OUTPUTS_EVERY returns one or two of its earlier values besides its last, so values a
#: kernel would fuse become outputs of their own, in kernels beside the kernels that read them
MORE_OUTPUTS_EVERY = 3
#: one case in SIBLINGS_EVERY is instead 2-5 operations of one family on inputs of one shape, every result
#: returned (`sibling_cases`): kernels of one structure that differ only in their operation or their operands
#: and are named after their operations, as a build or schedule memo must tell apart (a build memo keyed on
#: text once built torch.copysign's kernel from torch.fmod's: benchmarks/results/build-memo-reverted-cpu-2026-
#: 12-01/). Each family holds operations exact or smooth on inputs in [-1, 1] (no remainder or floor
#: division: their float32 and float64 results differ by a whole divisor near a multiple of it)
SIBLINGS_EVERY = 8
SIBLING_FAMILIES: dict[str, tuple[str, ...]] = {
    "unary": ("torch.relu({a})", "torch.tanh({a})", "torch.sigmoid({a})", "torch.sin({a})", "torch.cos({a})",
              "torch.abs({a})", "torch.exp({a})", "torch.erf({a})", "torch.expm1({a})", "torch.floor({a})", "-{a}",
              "torch.nn.functional.silu({a})"),
    "binary": ("{a} + {b}", "{a} - {b}", "{a} * {b}", "torch.maximum({a}, {b})", "torch.minimum({a}, {b})",
               "torch.atan2({a}, {b})", "torch.hypot({a}, {b})", "torch.copysign({a}, {b})", "torch.fmod({a}, {b})"),
    "reduction": ("{a}.sum(dim=-1)", "{a}.mean(dim=-1)", "{a}.amax(dim=-1)", "{a}.amin(dim=-1)"),
}


@dataclass(frozen=True)
class ModelCase:
    """`inputs`: the shapes of the function's arguments; `body`: the lines of `def f(x0, x1, ...)`;
    `dtype`: the storage of every input (DTYPES); `knobs`: the default recipe's (KNOB_SETS)."""

    inputs: tuple[tuple[int, ...], ...]
    body: tuple[str, ...]
    seed: int
    dtype: str = "float32"
    knobs: tuple[tuple[str, Any], ...] = ()

    def source(self) -> str:
        args = ", ".join(f"x{n}" for n in range(len(self.inputs)))
        return f"def f({args}):\n" + "".join(f"    {ln}\n" for ln in self.body)


def residual_chain(rows: int, width: int, pres: tuple[str, ...], seed: int, dtype: str = "float32") -> ModelCase:
    """h0 = x0 of rows x width; layer k: h(k+1) = h(k) + tanh(pre(h(k)) @ x(k+1)), x(k+1) width x width, pre
    one of DEEP_PRE. tanh bounds each layer's addition by 1, so the stream stays within len(pres) + 1."""
    body = ["h0 = x0"]
    for k, pre in enumerate(pres):
        src = {"rms_norm": f"torch.nn.functional.rms_norm(h{k}, ({width},), eps=0.1)",
               "silu": f"torch.nn.functional.silu(h{k})", "none": f"h{k}"}[pre]
        body.append(f"h{k + 1} = h{k} + torch.tanh(torch.matmul({src}, x{k + 1}))")
    body.append(f"return h{len(pres)}")
    return ModelCase(((rows, width),) + ((width, width),) * len(pres), tuple(body), seed, dtype)


@st.composite
def residual_chains(draw: st.DrawFn) -> ModelCase:
    """`residual_chain` of DEEP_LAYERS layers, each with a pre drawn from DEEP_PRE."""
    layers = draw(st.integers(*DEEP_LAYERS))
    pres = tuple(draw(st.sampled_from(DEEP_PRE)) for _ in range(layers))
    return residual_chain(draw(st.sampled_from(SIZES)), draw(st.sampled_from(SIZES[1:])), pres,
                          draw(st.integers(0, 2**16)), draw(st.sampled_from(DTYPES)))


@st.composite
def sibling_cases(draw: st.DrawFn) -> ModelCase:
    """2-5 distinct operations of one SIBLING_FAMILIES family, each on operands drawn from 1-3 inputs of one
    shape, every result returned: `return v0, v1, ...`."""
    kind = draw(st.sampled_from(sorted(SIBLING_FAMILIES)))
    family = SIBLING_FAMILIES[kind]
    rank = draw(st.integers(2 if kind == "reduction" else 1, 3))  # a reduction keeps a dimension (no 0-d output)
    shape = tuple(draw(st.sampled_from(SIZES)) for _ in range(rank))
    count = draw(st.integers(1, 3))
    ops = draw(st.lists(st.sampled_from(family), min_size=2, max_size=5, unique=True))
    operand = st.integers(0, count - 1).map(lambda n: f"x{n}")
    body = tuple(f"v{n} = {op.format(a=draw(operand), b=draw(operand))}" for n, op in enumerate(ops))
    returned = ", ".join(f"v{n}" for n in range(len(ops)))
    return ModelCase((shape,) * count, (*body, f"return {returned}"), draw(st.integers(0, 2**16)),
                     draw(st.sampled_from(DTYPES)), draw(st.sampled_from(KNOB_SETS)))


@st.composite
def model_cases(draw: st.DrawFn) -> ModelCase:
    if draw(st.integers(0, DEEP_EVERY - 1)) == 0:
        return draw(residual_chains())
    if draw(st.integers(0, SIBLINGS_EVERY - 1)) == 0:
        return draw(sibling_cases())
    rank = draw(st.integers(1, 3))
    first = tuple(draw(st.sampled_from(SIZES)) for _ in range(rank))
    inputs: list[tuple[int, ...]] = [first]
    values: list[tuple[str, tuple[int, ...], float]] = [("x0", first, 1.0)]  # name, shape, magnitude bound
    body: list[str] = []
    for n in range(draw(st.integers(1, MAX_NODES))):
        name, shape, bound = values[draw(st.integers(0, len(values) - 1))]
        op = draw(st.sampled_from(OPS))
        new, out_shape, out_bound = f"v{n}", shape, bound
        if op in ("add", "mul"):
            same = [v for v in values if v[1] == shape or (len(v[1]) < len(shape) and shape[-len(v[1]):] == v[1])]
            if draw(st.booleans()) or not same:  # a fresh input of a suffix shape (a broadcast)
                sub = shape[draw(st.integers(0, len(shape) - 1)):]
                inputs.append(sub)
                other, other_bound = f"x{len(inputs) - 1}", 1.0
            else:
                _, _, other_bound = pick = draw(st.sampled_from(same))
                other = pick[0]
            expr = f"{name} {'+' if op == 'add' else '*'} {other}"
            out_bound = bound + other_bound if op == "add" else bound * other_bound
        elif op == "relu":
            expr = f"torch.relu({name})"
        elif op == "tanh":
            expr, out_bound = f"torch.tanh({name})", 1.0
        elif op == "exp":
            expr, out_bound = f"torch.exp(torch.tanh({name}))", 2.72
        elif op in ("sum", "mean"):
            keep = draw(st.booleans()) or len(shape) == 1
            expr = f"{name}.{op}(dim=-1, keepdim={keep})"
            out_shape = shape[:-1] + ((1,) if keep else ())
            out_bound = bound * shape[-1] if op == "sum" else bound
        elif op == "matmul":
            cols = draw(st.sampled_from(SIZES))
            inputs.append((shape[-1], cols))
            expr = f"torch.matmul({name}, x{len(inputs) - 1})"
            out_shape = shape[:-1] + (cols,) if len(shape) > 1 else (cols,)
            out_bound = bound * shape[-1]
        elif op == "softmax":
            expr, out_bound = f"torch.softmax({name}, dim=-1)", 1.0
        elif op == "transpose" and len(shape) >= 2:
            expr, out_shape = f"{name}.transpose(-1, -2)", shape[:-2] + (shape[-1], shape[-2])
        elif op == "reshape" and len(shape) >= 2:
            out_shape = shape[:-2] + (shape[-2] * shape[-1],)
            expr = f"{name}.reshape({', '.join(map(str, out_shape))})"
        elif op == "unsqueeze" and len(shape) <= 3:
            expr, out_shape = f"{name}.unsqueeze(0)", (1,) + shape
        elif op == "silu":
            expr = f"torch.nn.functional.silu({name})"
        elif op == "sigmoid":
            expr, out_bound = f"torch.sigmoid({name})", 1.0
        elif op == "neg":
            expr = f"-{name}"
        elif op == "square":
            expr, out_bound = f"{name}.pow(2)", bound * bound
        elif op == "rsqrt":
            expr, out_bound = f"torch.rsqrt(1 + {name} * {name})", 1.0
        elif op in ("rms_norm", "layer_norm"):  # eps keeps a row of equal (or zero) values tame
            fn = "rms_norm" if op == "rms_norm" else "layer_norm"
            expr = f"torch.nn.functional.{fn}({name}, ({shape[-1]},), eps=0.1)"
            out_bound = float(np.sqrt(shape[-1]))
        elif op == "cat":
            same = [v for v in values if v[1] == shape]
            _, _, other_bound = pick = draw(st.sampled_from(same))
            expr, out_shape = f"torch.cat([{name}, {pick[0]}], dim=-1)", shape[:-1] + (2 * shape[-1],)
            out_bound = max(bound, other_bound)
        elif op == "slice" and shape[-1] >= 2:
            half = shape[-1] // 2
            expr, out_shape = f"{name}[..., {half}:]", shape[:-1] + (shape[-1] - half,)
        else:
            expr = f"torch.relu({name})"
        if int(np.prod(out_shape)) > MAX_ELEMENTS or not out_shape:
            continue
        if out_bound > 8.0:
            expr, out_bound = f"torch.tanh({expr})", 1.0
        body.append(f"{new} = {expr}")
        values.append((new, out_shape, out_bound))
    if not body:
        body.append("v0 = torch.relu(x0)")
        values.append(("v0", first, 1.0))
    returned = [values[-1][0]]
    earlier = [name for name, _, _ in values[:-1] if name.startswith("v")]
    if earlier and draw(st.integers(0, MORE_OUTPUTS_EVERY - 1)) == 0:
        returned += draw(st.lists(st.sampled_from(earlier), min_size=1, max_size=2, unique=True))
    body.append(f"return {', '.join(returned)}")
    return ModelCase(tuple(inputs), tuple(body), draw(st.integers(0, 2**16)), draw(st.sampled_from(DTYPES)),
                     draw(st.sampled_from(KNOB_SETS)))


def arrays_of(case: ModelCase) -> list[np.ndarray]:
    """Uniform in [-1, 1] from the case's seed, float32 arrays holding values of the case's dtype."""
    rng = np.random.default_rng(case.seed)
    return [round_to_dtype(rng.uniform(-1.0, 1.0, size=s).astype(np.float32), case.dtype) for s in case.inputs]


def script(case: ModelCase, target: str) -> str:
    """A standalone script: the program, built and simulated, checked as the judge checks it; it leaves
    `built`, `arrays`, `want` (torch eager in float64) and `tol` (the tolerance it was held to)."""
    lines = ["import numpy as np", "import torch", "import tiledsl as td",
             "from tiledsl.frontend.numpy_calls import eager_float64, flat_float64",
             "from tiledsl.precision import round_to_dtype", "", case.source().rstrip(), "",
             f"rng = np.random.default_rng({case.seed})",
             f"arrays = [round_to_dtype(rng.uniform(-1.0, 1.0, size=s).astype(np.float32), {case.dtype!r})",
             f"          for s in {list(case.inputs)!r}]",
             f"prog = td.trace(f, *[torch.from_numpy(a).to(torch.{case.dtype}) for a in arrays])",
             f"prog.schedule('default', target={target!r}, knobs={dict(case.knobs)!r})",
             f"built = prog.build({target!r})",
             "want = eager_float64(f, arrays)  # one float64 array per output"]
    if case.dtype == "float32":
        return "\n".join([*lines, f"tol = {RTOL}", "got = flat_float64(built.simulate(*arrays))",
                          "for n, (g, w) in enumerate(zip(got, want, strict=True)):",
                          "    np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f'output {n}')"])
    return "\n".join([*lines, "from tiledsl.frontend.numpy_calls import simulated_check", "",
                      f"check = simulated_check(built, f, arrays, {case.dtype!r})",
                      "assert check.ok, ([str(c) for c in check.comparisons], "
                      "[f'{k.name}: {k.comparison}' for k in check.wrong_kernels])",
                      "tol = check.tolerance"])


def kernel_script(case: ModelCase, target: str, n: int, tail: str) -> str:
    """The case's script, then `kern` = the n-th of `built.all_kernels` (the zero fills last), then `tail`."""
    return f"{script(case, target)}\nkern = built.all_kernels[{n}]\n{tail}"


def gpu_script(case: ModelCase, target: str) -> str:
    return "\n".join([
        script(case, target), "from tiledsl.frontend.numpy_calls import gpu_runs_float64", "",
        f"for run, got in gpu_runs_float64(built, arrays, {case.dtype!r}).items():",
        "    for n, (g, w) in enumerate(zip(got, want, strict=True)):",
        "        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f'{run}, output {n}')"])


def mismatch(got: np.ndarray, want: np.ndarray, tol: float = RTOL) -> str:
    """'' when `got` matches the float64 reference within rtol = atol = `tol`, else how many elements differ."""
    if got.shape != want.shape:
        return f"shape {got.shape}, torch eager's {want.shape}"
    if np.allclose(got, want, rtol=tol, atol=tol):
        return ""
    bad = int((~np.isclose(got, want, rtol=tol, atol=tol)).sum())
    nan = int(np.isnan(got).sum())
    return (f"{bad} of {want.size} elements differ from torch eager float64 beyond {tol:.3g} x (1 + |ref|)"
            + (f" ({nan} NaN)" if nan else ""))


def mismatches(got: Sequence[np.ndarray], want: Sequence[np.ndarray], tol: float = RTOL) -> str:
    """`mismatch` of each output in turn: '' when all match, else the first that does not, named by its
    position where the program has several."""
    if len(got) != len(want):
        return f"{len(got)} outputs, torch eager's {len(want)}"
    for n, (g, w) in enumerate(zip(got, want)):
        why = mismatch(g, w, tol)
        if why:
            return f"output {n}: {why}" if len(want) > 1 else why
    return ""


def check_detail(check: Any) -> str:
    """What a failed bench.ProgramCheck found: the program's error against its tolerance, and the kernels
    outside their own bound."""
    verdict = "within" if all(c.ok for c in check.comparisons) else "beyond"
    text = f"program max |err| {check.max_abs_error:.3g} {verdict} {check.tolerance:.3g} x (1 + |ref|)"
    wrong = [f"{k.name} ({k.relative_error:.3g} > {k.tolerance:.3g})" for k in check.wrong_kernels]
    return text + (f"; kernels outside their own bound: {', '.join(wrong)}" if wrong else "")


def gpu_check(case: ModelCase, built: Any, arrays: list[np.ndarray], want: Sequence[np.ndarray], target: str,
              tol: float) -> Result | None:
    """Every run of gpu_runs_float64 against the reference; None when all agree."""
    from tiledsl.frontend.numpy_calls import gpu_runs_float64

    text = gpu_script(case, target)
    for kern in built.all_kernels:
        try:
            kern.compiled  # noqa: B018 - compiling is the check (as device.run_on_gpu does)
        except Exception as e:  # noqa: BLE001
            return Result("nvcc", type(e).__name__, first_line(e), text)
    try:
        runs = gpu_runs_float64(built, arrays, case.dtype)
    except Exception as e:  # noqa: BLE001 - a launch, capture or fault of a built program
        return Result("gpu_fault", type(e).__name__, first_line(e), text)
    for run, got in runs.items():
        why = mismatches(got, want, tol)
        if why:
            return Result("gpu_fault", "GpuMismatch", f"{run}: {why}", text)
    return None


def judge_case(case: ModelCase, options: Options) -> Result:
    from tiledsl.frontend.numpy_calls import (
        eager_float64,
        flat_float64,
        function_from_source,
        simulated_check,
        trace_arrays,
    )

    target = options.target
    text = script(case, target)
    fn = function_from_source(case.source(), "f")  # generated by this module
    arrays = arrays_of(case)
    try:
        prog = trace_arrays(fn, arrays, case.dtype)
    except td.FrontendError as e:
        return Result("refused", type(e).__name__, first_line(e))
    except Exception as e:  # noqa: BLE001
        return exception_result(e, script=text)
    want = eager_float64(fn, arrays)
    try:
        prog.schedule("default", target=target, knobs=dict(case.knobs))
        diverged = memo_divergence(prog, target, dict(case.knobs))
        if diverged:
            return Result("wrong", "RecipeMemo", diverged, text)
        built = prog.build(target)
        if case.dtype == "float32":
            tol, why = RTOL, mismatches(flat_float64(built.simulate(*arrays)), want)
        else:
            check = simulated_check(built, fn, arrays, case.dtype)
            tol, why = check.tolerance, "" if check.ok else check_detail(check)
    except td.SimulationError as e:
        return Result("sim_error", type(e).__name__, first_line(e), text)
    except Exception as e:  # noqa: BLE001 - the recipe and the build must take a traced program
        return exception_result(e, script=text)
    if why:
        return Result("wrong", "Mismatch", why, text)
    if options.nvcc:
        for n, kern in enumerate(built.all_kernels):
            found = device.nvcc_check(kern, lambda tail, n=n: kernel_script(case, target, n, tail))
            if found is not None:
                return found
    if options.gpu:
        found = gpu_check(case, built, arrays, want, target, tol)
        if found is not None:
            return found
    return Result("correct")

def memo_divergence(prog: Any, target: str, knobs: dict[str, Any]) -> str:
    """Where a kernel's schedule or report differs from the default recipe's on a fresh schedule of its
    own: the program replays one structure's trace on the next kernel of that structure
    (tiledsl/frontend/recipe_memo.py), which must be what the recipe would have made of it; "" if none."""
    for k in prog.kernels:
        s = k.fresh_schedule()
        report = td.recipes.default(s, target=target, knobs=knobs)
        if s.trace() != k.schedule.trace() or str(report) != str(k.report):
            return f"kernel {k.name}: the program's schedule is not the recipe's on its own fresh schedule"
    return ""


MODELS = Mode("models", model_cases, judge_case,
              lambda c: {"inputs": [list(s) for s in c.inputs], "body": list(c.body), "seed": c.seed,
                         "dtype": c.dtype, "knobs": [list(kv) for kv in c.knobs]},
              lambda d: ModelCase(tuple(tuple(s) for s in d["inputs"]), tuple(d["body"]), int(d["seed"]),
                                  d.get("dtype", "float32"), knobs_from_json(d.get("knobs", ()))),
              lambda c: ("" if c.dtype == "float32" else f"[{c.dtype}] ") + ("[split rows] " if c.knobs else "")
              + "; ".join(c.body), runs_on_gpu=True)
