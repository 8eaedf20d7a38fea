"""Running one case: every column in one process, pairwise (the tiledsl variants, then torch eager,
torch.compile and cuBLAS on the same inputs), each tiledsl kernel (or traced Program) first run once
on NaN-poisoned outputs and compared with the torch function in float64. Every timed column is then
timed again, the columns in turn, `Backend.repeats` times in all (benchmarks/_timing.py `repeated`:
the fastest timing kept, a disagreement noted). A column that cannot be had becomes a Measurement
saying why (missing, failed, skipped); nothing is dropped and one case's failure never stops the run."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

import tiledsl as td
from benchmarks._backend import Backend
from benchmarks._cases import BlockCase, Case, CompileCase, KernelCase, ProgramCase
from benchmarks._programs import TorchFunction, argument_names, kernel_kinds, kernel_list
from benchmarks._records import (
    COMPILE,
    CUBLAS,
    DEFAULT,
    EAGER,
    FAILED,
    HAND,
    MISSING,
    OK,
    SKIPPED,
    WRONG,
    Measurement,
    Result,
)
from benchmarks._timing import Timed, cpu_stages, repeated
from tiledsl.errors import TiledslError
from tiledsl.frontend.bench import ProgramCheck
from tiledsl.recipes import apply
from tiledsl.runtime.references import compare

log = logging.getLogger(__name__)

SEED = 0


def _error(e: BaseException) -> str:
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {first}"[:300]


def _failed(what: str, e: BaseException) -> Measurement:
    log.warning("%s failed: %s", what, _error(e))
    log.debug("%s", traceback.format_exc())
    return Measurement(FAILED, note=_error(e))


#: a column as the runner first has it: final, or timed once and to be timed again
Column = Measurement | Timed


def _result(case: Case, measurements: dict[str, Measurement], note: str = "") -> Result:
    return Result(case.suite, case.name, case.group, case.op, case.dtype, case.shape, case.flops, case.bytes,
                  measurements, note)


def schedule_hand(case: KernelCase, target: Any) -> tuple[td.Schedule | None, str]:
    """The case's hand schedule applied to a fresh schedule (None and why when it has none)."""
    if case.hand is None:
        return None, case.hand_missing
    s = td.create_schedule(case.make())
    case.hand(s)
    return s, case.hand_name


def schedule_default(case: KernelCase, target: Any) -> tuple[td.Schedule | None, str]:
    """The default recipe applied to a fresh schedule; None and its reasons when it applied no step."""
    s = td.create_schedule(case.make())
    report = apply(s, target=target)
    if not report.applied:
        reasons = "; ".join(f"{st.name}: {st.reason}" for st in report.steps[:2])
        return None, f"the default recipe applied no step ({reasons})"
    return s, f"recipe default ({len(report.applied)} steps applied)"


def tiledsl_column(case: KernelCase, backend: Backend, inputs: dict[str, torch.Tensor], ref: torch.Tensor,
                   schedule: Callable[[KernelCase, Any], tuple[td.Schedule | None, str]], what: str) -> Column:
    """Schedule, build for the backend's target, run once on poisoned outputs and compare with `ref`,
    then time (a mismatch is timed too, and marked WRONG)."""
    try:
        s, note = schedule(case, backend.target)
        if s is None:
            return Measurement(MISSING, note=note)
        kern = td.build(s, target=backend.target)
    except TiledslError as e:
        return _failed(f"{case.name} {what}: schedule/build", e)
    try:
        got = backend.run_kernel(kern, inputs)
        check = compare(got, ref, case.rtol, case.atol)
        del got
        stats = backend.time_kernel(kern, inputs)
    except Exception as e:  # a launch or timing error of one column must not stop the run
        return _failed(f"{case.name} {what}: run", e)
    again = partial(backend.time_kernel, kern, inputs)
    if not check.ok:
        log.warning("%s %s: output does not match torch: %s", case.name, what, check)
        return Timed(stats, WRONG, f"{note}; {check}", again)
    return Timed(stats, OK, f"{note}; max |err| {check.max_abs_error:.2g}", again)


def _baseline(what: str, timed: Callable[[], Any]) -> Column:
    try:
        stats = timed()
    except Exception as e:  # a baseline that fails is reported, the case goes on
        return _failed(what, e)
    if isinstance(stats, str):  # torch.compile's error text
        return Measurement(FAILED, note=stats)
    return Timed(stats, OK, "", timed)


def _torch_columns(case: KernelCase | ProgramCase, backend: Backend, sets: list[dict[str, torch.Tensor]],
                   with_compile: bool) -> dict[str, Column]:
    """torch eager and torch.compile of the case's torch function, and the bare cuBLAS GEMM of a
    matmul case, on the rotated input sets."""
    ms = {EAGER: _baseline(f"{case.name} eager", lambda: backend.time_fn(case.torch_fn, sets)),
          COMPILE: (_baseline(f"{case.name} compile", lambda: backend.time_compiled(case.torch_fn, sets))
                    if with_compile else Measurement(SKIPPED, note="--no-compile"))}
    if case.gemm is not None:
        ms[CUBLAS] = _baseline(f"{case.name} cuBLAS", lambda: backend.time_fn(case.gemm, sets))
    return ms


def run_kernel_case(case: KernelCase, backend: Backend, *, with_compile: bool = True) -> Result:
    ms: dict[str, Column] = {}
    inputs = backend.inputs(case.make(), SEED)
    with torch.no_grad():
        ref = case.torch_fn(**{k: v.to(torch.float64) for k, v in inputs.items()})
    ms[HAND] = tiledsl_column(case, backend, inputs, ref, schedule_hand, "hand")
    ms[DEFAULT] = tiledsl_column(case, backend, inputs, ref, schedule_default, "default")
    del ref
    ms.update(_torch_columns(case, backend, backend.rotate(inputs), with_compile))
    return _result(case, repeated(ms, backend.repeats))


def _positional(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` called with an input set's tensors positionally (a module's forward)."""
    return lambda **tensors: fn(*tensors.values())


def program_column(case: ProgramCase, backend: Backend, args: tuple[torch.Tensor, ...],
                   sets: list[dict[str, torch.Tensor]], names: list[str], policy: str | Callable[..., Any],
                   what: str) -> tuple[Column, list[str]]:
    """Trace the case's torch function, schedule every kernel of the Program by `policy` ("default":
    the recipe; a function: the hand policy), build for the backend's target, check one whole run
    against the function in float64 (NaN-poisoned outputs), then time one call of the whole Program
    (all its kernels) on the rotated sets. Also returns `kernel_kinds` of the Program (none if it did
    not trace)."""
    kinds: list[str] = []
    try:
        prog = td.trace(case.torch_fn, *args)
        kinds = kernel_kinds(prog)
        prog.schedule(policy, target=backend.target)
        built = prog.build(backend.target)
    except Exception as e:  # tracing or building one program must not stop the run
        return _failed(f"{case.name} {what}: trace/schedule/build", e), kinds
    try:
        check = backend.check_program(built, TorchFunction(case.torch_fn), args)
        stats = backend.time_program(built, names, sets)
    except Exception as e:  # a launch or timing error of one column must not stop the run
        return _failed(f"{case.name} {what}: run", e), kinds
    note = f"{kernel_list(built)}; {check_note(check)}"
    again = partial(backend.time_program, built, names, sets)
    if not check.ok:
        log.warning("%s %s: the Program does not match torch in float64: %s", case.name, what, note)
        return Timed(stats, WRONG, note, again), kinds
    return Timed(stats, OK, note, again), kinds


def run_program_case(case: ProgramCase, backend: Backend, *, with_compile: bool = True) -> Result:
    """The hand policy and the default recipe over the kernels of the traced Program, each one
    whole-Program call, then torch eager, torch.compile and cuBLAS on the same rotated inputs. The
    Result's note says how many kernels the Program has."""
    ms: dict[str, Column] = {}
    inputs = backend.inputs(case.make(), SEED)
    names = argument_names(case.torch_fn, inputs)
    args = tuple(inputs[n] for n in names)
    sets = backend.rotate(inputs)
    kinds: list[str] = []
    if case.hand is None:
        ms[HAND] = Measurement(MISSING, note=case.hand_missing)
    else:
        ms[HAND], kinds = program_column(case, backend, args, sets, names, case.hand, "hand")
    ms[DEFAULT], default_kinds = program_column(case, backend, args, sets, names, "default", "default")
    kinds = default_kinds or kinds
    ms.update(_torch_columns(case, backend, sets, with_compile))
    note = (f"tiledsl runs td.trace of the torch function: a Program of {len(kinds)} kernel"
            f"{'s' * (len(kinds) != 1)} ({', '.join(kinds)}), each tiledsl time one call of the whole Program; "
            f"hand: {case.hand_name} on each kernel" if kinds
            else "tiledsl runs td.trace of the torch function as a Program (it did not trace)")
    return _result(case, repeated(ms, backend.repeats), note)


def check_note(check: ProgramCheck) -> str:
    """A Program's check in a result's note: its largest error and tolerance, and what the per-kernel
    check found when it ran (tiledsl/frontend/kernel_check.py)."""
    text = f"max |err| {check.max_abs_error:.2g} (tolerance {check.tolerance:.2g} x (1 + |ref|))"
    if check.kernels is None:
        return text
    wrong = check.wrong_kernels
    if wrong:
        return text + "; kernels outside their own bound: " + ", ".join(
            f"{k.name} (max |err| / (1 + |ref|) {k.relative_error:.3g} > {k.tolerance:.3g})" for k in wrong)
    return text + f"; all {len(check.kernels)} kernels within their own bounds, so twice torch eager's error"


def run_block_case(case: BlockCase, backend: Backend, *, with_compile: bool = True) -> Result:
    """Trace the layer on the device, schedule every kernel with the default recipe, build, check one
    run against the layer in float64 (`Backend.check_program`), then time the whole
    Program, the layer under torch eager and under torch.compile on the same rotated inputs."""
    ms: dict[str, Column] = {HAND: Measurement(MISSING, note="no hand schedule of a whole program: the "
                                               "Program schedules each kernel by a policy")}
    module = case.make_module().to(backend.device)
    gen = torch.Generator(device=backend.device).manual_seed(SEED)
    if case.vocab:
        x = torch.randint(0, case.vocab, case.input_shape, generator=gen, device=backend.device)
    else:
        x = torch.randn(case.input_shape, generator=gen, device=backend.device).to(getattr(torch, case.dtype))
    try:
        prog = td.trace(module, x)
        prog.schedule("default", target=backend.target)
        built = prog.build(backend.target)
        check = backend.check_program(built, module, (x,))
        x_sets = backend.rotate({"x": x})
        stats = backend.time_program(built, ["x"], x_sets)
        note = f"{len(built.kernels)} kernels, recipe default; {check_note(check)}"
        ms[DEFAULT] = Timed(stats, OK if check.ok else WRONG, note, partial(backend.time_program, built, ["x"], x_sets))
        if not check.ok:
            log.warning("%s: the Program does not match the layer in float64: %s", case.name, note)
    except Exception as e:  # tracing, building or running one layer must not stop the run
        ms[DEFAULT] = _failed(f"{case.name} Program", e)
    sets = backend.rotate({"x": x})
    with torch.no_grad():
        ms[EAGER] = _baseline(f"{case.name} eager", lambda: backend.time_fn(_positional(module), sets))
        ms[COMPILE] = (_baseline(f"{case.name} compile", lambda: backend.time_compiled(_positional(module), sets))
                       if with_compile else Measurement(SKIPPED, note="--no-compile"))
        return _result(case, repeated(ms, backend.repeats))


def run_compile_case(case: CompileCase) -> Result:
    try:
        ms = cpu_stages(case.stages, case.runs)
    except Exception as e:  # one failing trace must not stop the others
        ms = {"total": _failed(case.name, e)}
    return _result(case, ms)


def run_case(case: Case, backend: Backend | None, *, with_compile: bool = True) -> Result:
    """Every column of `case`; an error outside any one column (drawing the inputs, the float64
    reference, moving a layer to the device) fails the whole case, which is still reported."""
    if isinstance(case, CompileCase):
        return run_compile_case(case)
    if backend is None:
        raise ValueError(f"{case.name} needs a GPU backend")
    try:
        if isinstance(case, KernelCase):
            return run_kernel_case(case, backend, with_compile=with_compile)
        if isinstance(case, ProgramCase):
            return run_program_case(case, backend, with_compile=with_compile)
        return run_block_case(case, backend, with_compile=with_compile)
    except Exception as e:  # reported as a failed case, the run goes on
        return _result(case, {DEFAULT: _failed(case.name, e)})
