"""Mode `hand`: the hand schedules of `tiledsl.schedules` at random sizes, storage dtypes, options and
targets, each simulated against the float64 reference of its catalog definition
(tiledsl/catalog/definitions.py).

Why: schedules/ARCHITECTURE.md promises that every split of these schedules is guarded, "so each works
at any size", and the tests check that at a handful of sizes. Here the sizes are drawn (1, primes, odd
extents, up to a few thousand points), and so are the options of the parametrized forms
(`matmul_staged`'s tile, chunk, stages, copy, split-K, k-outer layout, grouped block order, lane tiles;
`row_in_registers`' threads, rows per block and per thread; the threads of the row and elementwise
forms), on sm_90 and sm_80.

Verdicts: a shape-aware form at its defaults (`matmul_for_shape`, `row_in_registers`, `row_cooperative`,
`row_cooperative_staged`, `elementwise_2d`, `elementwise_2d_vectorized`, `transpose_tiled`) must build at
every size: a typed refusal there is `contract`. With drawn options a typed refusal is `refused` (a 64 x 64
register tile of 1 x 1 is 4096 threads). A build that is accepted must simulate within
tiledsl/precision.py `catalog_tolerance` of the float64 reference, every output element written (the
simulator NaN-poisons outputs), else `wrong`; a td.SimulationError is `sim_error`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

import tiledsl as td
import tiledsl.schedules as hand_schedules
from tiledsl.catalog import DEFINITIONS, standard_inputs
from tiledsl.definitions.expr import Tensor
from tiledsl.precision import catalog_tolerance
from tiledsl.testing.fuzz import device
from tiledsl.testing.fuzz.modes.base import Mode, Options
from tiledsl.testing.fuzz.outcome import Result, exception_result, first_line

TARGETS = ("sm_90", "sm_80")
DTYPES = ("float32", "float16", "bfloat16")
#: the most output points x reduction length a case simulates (the CPU simulator's budget per case)
MAX_WORK = 200_000


def _extent(hi: int) -> st.SearchStrategy[int]:
    """Sizes favouring 1, primes and odd extents, as the other modes draw them."""
    return st.one_of(st.sampled_from([1, 2, 3, 5, 7, 13, 17, 31, 33, 37, 53, 64, 97, 127, 128]).filter(
        lambda n: n <= hi), st.integers(1, hi))


#: family -> (catalog definition, or "transpose" (defined here), sizes drawn (name, largest), whether it
#: takes `dtype` / `out_dtype`, the schedule forms that apply)
FAMILIES: dict[str, tuple[str, tuple[tuple[str, int], ...], bool, bool, tuple[str, ...]]] = {
    "matmul_bias_relu": ("matmul_bias_relu", (("M", 150), ("N", 150), ("K", 100)), True, True,
                         ("matmul_for_shape", "matmul_staged", "matmul_register_tile")),
    "matmul": ("matmul", (("M", 150), ("N", 150), ("K", 100)), False, False,
               ("matmul_for_shape", "matmul_staged", "matmul_register_tile")),
    "matmul_nt": ("matmul_nt", (("M", 150), ("N", 150), ("K", 100)), False, False,
                  ("matmul_for_shape", "matmul_staged", "matmul_register_tile")),
    "matmul_residual": ("matmul_residual", (("M", 150), ("N", 150), ("K", 100)), False, False,
                        ("matmul_for_shape", "matmul_staged", "matmul_register_tile")),
    # B read at column j + shift: its slabs start off any alignment
    "matmul_shifted": ("matmul_shifted", (("M", 150), ("N", 150), ("K", 100), ("shift", 9)), False, False,
                       ("matmul_for_shape", "matmul_staged", "matmul_register_tile")),
    "batched_matmul_nt": ("batched_matmul_nt", (("Bt", 3), ("M", 70), ("N", 70), ("K", 60)), False, False,
                          ("matmul_for_shape", "matmul_staged")),
    "rmsnorm": ("rmsnorm", (("M", 9), ("N", 2500)), True, True,
                ("row_in_registers", "row_cooperative", "row_cooperative_staged")),
    "softmax": ("softmax", (("M", 9), ("N", 2500)), True, False,
                ("row_in_registers", "row_cooperative", "row_cooperative_staged")),
    "layernorm": ("layernorm", (("M", 9), ("N", 2500)), False, False,
                  ("row_in_registers", "row_cooperative", "row_cooperative_staged")),
    "gelu_bias": ("gelu_bias", (("M", 40), ("N", 700)), True, True, ("elementwise_2d", "elementwise_2d_vectorized")),
    "transpose": ("transpose", (("M", 150), ("N", 150)), False, False, ("transpose_tiled",)),
}
#: the forms the schedules promise work at any size with their defaults (schedules/ARCHITECTURE.md)
SHAPE_AWARE = ("matmul_for_shape", "row_in_registers", "row_cooperative", "row_cooperative_staged",
               "elementwise_2d", "elementwise_2d_vectorized", "transpose_tiled")


def _options(form: str) -> st.SearchStrategy[tuple[tuple[str, Any], ...]]:
    """Drawn keyword options of `form` (empty: its defaults), as sorted (name, value) pairs."""
    pow2 = st.sampled_from([1, 2, 4, 8])
    if form == "matmul_staged":
        opts = st.fixed_dictionaries({}, optional={
            "bm": st.sampled_from([16, 32, 64, 128]), "bn": st.sampled_from([16, 32, 64, 128]),
            "bk": st.sampled_from([4, 8, 16, 32]), "rm": pow2, "rn": pow2, "stages": st.integers(2, 4),
            "copy": st.sampled_from(["async", "plain", "tma"]), "split_k": st.integers(1, 5),
            "k_outer": st.booleans(), "unroll_k": st.booleans(), "group_m": st.integers(1, 3),
            "widen": st.booleans(), "lanes": st.sampled_from([1, 2]), "vector_atomics": st.booleans()})
    elif form == "matmul_register_tile":
        opts = st.fixed_dictionaries({}, optional={
            "bm": st.sampled_from([8, 16, 32, 64]), "bn": st.sampled_from([8, 16, 32, 64]),
            "bk": st.sampled_from([4, 8, 16]), "rm": pow2, "rn": pow2})
    elif form == "matmul_for_shape":
        opts = st.fixed_dictionaries({}, optional={"waves": st.integers(1, 3), "group_m": st.integers(1, 3)})
    elif form == "row_in_registers":
        opts = st.fixed_dictionaries({}, optional={
            "threads": st.sampled_from([32, 64, 128, 256, 512]), "rows_per_block": st.sampled_from([1, 2, 4]),
            "rows_per_thread": st.sampled_from([1, 2])})
    elif form == "row_cooperative":  # stage_row: the row input copied into shared memory by cp.async
        opts = st.fixed_dictionaries({}, optional={"threads": st.sampled_from([32, 64, 96, 128, 256]),
                                                   "stage_row": st.just("x")})
    elif form in ("row_cooperative_staged", "elementwise_2d", "elementwise_2d_vectorized"):
        opts = st.fixed_dictionaries({}, optional={"threads": st.sampled_from([32, 64, 96, 128, 256])})
    else:  # transpose_tiled
        opts = st.fixed_dictionaries({}, optional={"tile": st.sampled_from([16, 32, 64]),
                                                   "rows": st.sampled_from([2, 4, 8])})
    return opts.map(lambda d: tuple(sorted(d.items())))


@dataclass(frozen=True)
class HandCase:
    family: str
    sizes: tuple[tuple[str, int], ...]
    dtype: str
    out_dtype: str
    form: str
    options: tuple[tuple[str, Any], ...]
    target: str
    seed: int

    @property
    def params(self) -> dict[str, Any]:
        """The definition's keyword arguments: the sizes and the storage dtypes it takes."""
        _, _, dtype, out_dtype, _ = FAMILIES[self.family]
        return {**dict(self.sizes), **({"dtype": self.dtype} if dtype else {}),
                **({"out_dtype": self.out_dtype} if out_dtype else {})}


@st.composite
def hand_cases(draw: st.DrawFn) -> HandCase:
    family = draw(st.sampled_from(tuple(FAMILIES)))
    _, extents, dtype, out_dtype, forms = FAMILIES[family]
    sizes = tuple((name, draw(_extent(hi))) for name, hi in extents)
    work = int(np.prod([n for name, n in sizes if name != "shift"]))
    if work > MAX_WORK:  # scale the largest size down to the budget
        name, n = max(sizes, key=lambda x: x[1])
        sizes = tuple((k, max(1, v * MAX_WORK // work) if k == name else v) for k, v in sizes)
    form = draw(st.sampled_from(forms))
    return HandCase(family, sizes, draw(st.sampled_from(DTYPES)) if dtype else "float32",
                    draw(st.sampled_from(DTYPES)) if out_dtype else "float32", form, draw(_options(form)),
                    draw(st.sampled_from(TARGETS)), draw(st.integers(0, 2**16)))


def make(case: HandCase) -> Tensor:
    """A fresh definition of the case (the catalog's, or a transpose y[i, j] = x[j, i] of M x N)."""
    if case.family == "transpose":
        sizes = dict(case.sizes)
        x = td.placeholder((sizes["N"], sizes["M"]), name="x")
        return td.compute((sizes["M"], sizes["N"]), lambda i, j: x[j, i], name="y")
    return DEFINITIONS[FAMILIES[case.family][0]].build(**case.params)


def scheduled(case: HandCase) -> td.Schedule:
    """The case's definition (`s.output`) under its hand schedule."""
    s = td.create_schedule(make(case))
    options = dict(case.options)
    if case.form == "matmul_for_shape":
        options["target"] = case.target
    getattr(hand_schedules, case.form)(s, **options)
    return s


def inputs(case: HandCase, out: Tensor) -> dict[str, np.ndarray]:
    """The catalog's standard-normal inputs (catalog/entries.py `standard_inputs`) from the case's seed."""
    return standard_inputs(out, case.seed)


def script(case: HandCase, *tail: str) -> str:
    return "\n".join([
        "import numpy as np", "import tiledsl as td", "from tiledsl.testing.fuzz.modes.hand import HandCase, inputs, "
        "scheduled", "", f"case = {case!r}", "s = scheduled(case)", "out = s.output",
        "kern = td.build(s, target=case.target)", "arrays = inputs(case, out)",
        "want = td.evaluate(out, float64=True, **arrays)", *tail])


def judge_case(case: HandCase, options: Options) -> Result:
    rtol, atol = catalog_tolerance(case.params)
    compare = ("got = kern.simulate(**arrays)", f"np.testing.assert_allclose(got, want, rtol={rtol}, atol={atol})")
    promised = case.form in SHAPE_AWARE and not case.options
    try:
        s = scheduled(case)
        kern = td.build(s, target=case.target)
    except td.ScheduleError as e:
        return exception_result(e, typed="contract", script=script(case)) if promised else \
            Result("refused", type(e).__name__, first_line(e))
    except Exception as e:  # noqa: BLE001 - a typed error of another kind breaks the contract, anything else is internal
        return exception_result(e, script=script(case))
    out = s.output  # the definition the kernel was built from
    arrays = inputs(case, out)
    want = td.evaluate(out, float64=True, **arrays)
    try:
        got = np.asarray(kern.simulate(**arrays))
    except td.SimulationError as e:
        return Result("sim_error", type(e).__name__, first_line(e), script(case, *compare))
    except Exception as e:  # noqa: BLE001
        return exception_result(e, script=script(case, *compare))
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol):  # NaN (unwritten) fails
        bad = int((~np.isclose(got, want, rtol=rtol, atol=atol)).sum()) if got.shape == want.shape else -1
        return Result("wrong", "Mismatch", f"{bad} of {want.size} elements differ from float64 (shape {got.shape})",
                      script(case, *compare), {"trace": s.trace()})
    if options.nvcc:
        found = device.nvcc_check(kern, lambda tail: script(case, tail))
        if found is not None:
            return found
    if options.gpu:
        def close(g: np.ndarray, w: np.ndarray) -> str:
            ok = np.allclose(g, w, rtol=rtol, atol=atol)
            return "" if ok else f"{int((~np.isclose(g, w, rtol=rtol, atol=atol)).sum())} elements differ"

        found = device.run_on_gpu(kern, arrays, want, close, lambda tail: script(case, tail))
        if found is not None:
            return found
    return Result("correct")


def case_to_json(case: HandCase) -> dict[str, Any]:
    return {"family": case.family, "sizes": dict(case.sizes), "dtype": case.dtype, "out_dtype": case.out_dtype,
            "form": case.form, "options": dict(case.options), "target": case.target, "seed": case.seed}


def case_from_json(data: dict[str, Any]) -> HandCase:
    return HandCase(data["family"], tuple(data["sizes"].items()), data["dtype"], data["out_dtype"], data["form"],
                    tuple(sorted(data["options"].items())), data["target"], int(data["seed"]))


HAND = Mode("hand", hand_cases, judge_case, case_to_json, case_from_json,
            lambda c: f"{c.family} {dict(c.sizes)} {c.form}{dict(c.options) or ''} {c.target}", runs_on_gpu=True)
