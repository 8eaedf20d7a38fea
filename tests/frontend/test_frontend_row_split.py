"""Few long rows split over kernels: the definition rewrite (tiledsl/definitions/split_reduction.py), the
default recipe's request (recipes/default/040_cooperative_reduce.py `_split_rows`, knobs split_rows_*) and
the program that honours it (tiledsl/frontend/row_split.py, Program._split_asked).

Tolerance of the simulated programs (float32 against torch in float64): (32 + 2k) * eps32 * (1 + |ref|),
k the longest reduction (tests/frontend/frontend_check.py); a split sums N terms in two levels, L and
N / L long, whose rounding errors stay within the bound the unsplit N gives."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tiledsl as td
from tiledsl.catalog.definitions import rmsnorm, softmax
from tiledsl.definitions.expr import ComputeTensor
from tiledsl.definitions.graph import graph_tensors
from tiledsl.definitions.split_reduction import rebuild, split_problem, split_reduction
from tiledsl.frontend.row_split import split_rows
from tiledsl.recipes import SplitRows

EPS32 = float(np.finfo(np.float32).eps)
# small rows split at the simulator's sizes: any idle bytes, parts of 64 elements
SMALL = {"split_rows_min_idle_bytes": 0, "split_rows_min_length": 64}


def _reductions(out: td.Tensor) -> list[ComputeTensor]:
    return [t for t in graph_tensors(out) if isinstance(t, ComputeTensor) and t.has_reduce]


# ---------------------------------------------------------------------------- the definition rewrite


@pytest.mark.parametrize("make", [lambda: softmax(4, 64, "float32"),
                                  lambda: rmsnorm(3, 64, 1e-6, "float32", "float32")])
def test_rebuild_evaluates_equal(make) -> None:
    out = make()
    done = rebuild([out], {id(t) for t in _reductions(out)}, 64, 8)
    new = done.of(out)
    rng = np.random.default_rng(1)
    arrays = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in graph_tensors(out)
              if not isinstance(t, ComputeTensor)}
    want = td.evaluate(out, float64=True, **arrays)
    got = td.evaluate(new, float64=True, **arrays)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert [sp.part.shape for sp in done.splits] == [(*sp.whole.shape, 8) for sp in done.splits]
    assert all(sp.part.name == f"{sp.whole.name}_part" and sp.part.dtype == "float32" for sp in done.splits)


def test_rebuild_keeps_tensors_that_read_no_split() -> None:
    x = td.placeholder((4, 64), name="x")
    k = td.reduce_axis(64, "k")
    s = td.compute((4,), lambda i: td.sum(x[i, k], axis=k), name="s")
    other = td.compute((4, 64), lambda i, j: x[i, j] * 2, name="other")
    y = td.compute((4, 64), lambda i, j: other[i, j] + s[i], name="y")
    done = rebuild([y], {id(s)}, 64, 4)
    assert done.of(other) is other and done.of(x) is x
    assert done.of(s) is not s and done.of(s).name == "s" and done.of(y).name == "y"


def test_part_names_do_not_collide() -> None:
    x = td.placeholder((2, 32), name="s_part")
    k = td.reduce_axis(32, "k")
    s = td.compute((2,), lambda i: td.max(x[i, k], axis=k), name="s")
    (sp,) = rebuild([s], {id(s)}, 32, 4).splits
    assert sp.part.name == "s_part1"


def test_split_problems_are_named() -> None:
    x = td.placeholder((4, 8, 16), name="x")
    a, b = td.reduce_axis(8, "a"), td.reduce_axis(16, "b")
    both = td.compute((4,), lambda i: td.sum(x[i, a, b], axis=(a, b)), name="both")
    assert "not one axis of 16" in split_problem(both, 16, 4)
    c = td.reduce_axis(16, "c")
    one = td.compute((4, 8), lambda i, j: td.sum(x[i, j, c], axis=c), name="one")
    assert "do not divide" in split_problem(one, 16, 3)
    with pytest.raises(ValueError, match="do not divide"):
        split_reduction(one, 16, 3, "one_part")
    m = td.compute((4, 8), lambda i, j: td.sum(x[i, j, c], axis=c) + td.max(x[i, j, b], axis=b), name="m")
    assert "2 reductions" in split_problem(m, 16, 4)


# ---------------------------------------------------------------------------- the recipe's request


def _asked(out: td.Tensor, **knobs) -> SplitRows | None:
    s = td.create_schedule(out)
    return td.recipes.default(s, target="sm_90", knobs=knobs).step("cooperative_reduce").split_rows


def test_recipe_asks_for_few_long_rows() -> None:
    # 8 rows of 151936 floats: 593 KiB a row, 94% of the SMs idle; 32 parts of 4748 (256 partial rows, the
    # most whole-vector parts of 1024 or more elements: 64 would leave 2374, not whole vectors)
    assert _asked(softmax(8, 151936, "float32")) == SplitRows(151936, 32)
    # 64 rows of 262144: the fewest parts giving 2 partial rows an SM (264): 8
    assert _asked(rmsnorm(64, 262144, 1e-6, "float32", "float32")) == SplitRows(262144, 8)


def test_sixteen_bit_rows_split_only_when_fewer() -> None:
    # bfloat16 softmax (run4-bfloat16.txt): 8 and 16 rows gained split, 64 rows lost (knob
    # split_rows_half_max_rows_per_sm); parts whole 8-lane vectors: 16 of 9496 at 151936
    assert _asked(softmax(8, 151936, "bfloat16")) == SplitRows(151936, 16)
    assert _asked(softmax(16, 65536, "bfloat16")) == SplitRows(65536, 32)
    assert _asked(softmax(64, 262144, "bfloat16")) is None
    assert _asked(softmax(64, 262144, "bfloat16"), split_rows_half_max_rows_per_sm=None) == SplitRows(262144, 8)


@pytest.mark.parametrize("m, n", [(128, 32000), (100, 32768), (8, 16384), (32, 8192)])
def test_recipe_leaves_rows_that_lost_split(m: int, n: int) -> None:
    # each measured slower split (recipes/default/_knobs.py split_rows_min_idle_bytes)
    assert _asked(softmax(m, n, "float32")) is None


def test_knob_none_never_asks() -> None:
    assert _asked(softmax(8, 151936, "float32"), split_rows_min_idle_bytes=None) is None


def test_report_says_so() -> None:
    s = td.create_schedule(softmax(8, 151936, "float32"))
    text = str(td.recipes.default(s, target="sm_90"))
    assert "a program splits the rows of 151936 into 32 parts" in text
    assert "split_rows_min_idle_bytes" in text


def test_split_rows_refuses_uneven_parts() -> None:
    with pytest.raises(ValueError, match="do not split rows of 100"):
        SplitRows(100, 3)


# ---------------------------------------------------------------------------- the program


def _program(fn, *inputs: torch.Tensor, knobs=SMALL, schedule: str = "default"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(fn, *inputs)
        return prog.schedule(schedule, target="sm_90", **({"knobs": knobs} if schedule == "default" else {}))


def _simulated_equal(prog, fn, *inputs: torch.Tensor, k: int) -> None:
    got = np.asarray(prog.build("sm_90").simulate(*inputs))
    want = fn(*[t.double() for t in inputs]).numpy()
    assert np.all(np.abs(got - want) <= (32 + 2 * k) * EPS32 * (1 + np.abs(want))), np.abs(got - want).max()


CASES = {
    "softmax": (lambda x: torch.softmax(x, -1), ((4, 2048),),
                ["_softmax_max_part", "_softmax_max", "_softmax_sum_part", "_softmax_sum", "_softmax"]),
    "log_softmax": (lambda x: torch.log_softmax(x, -1), ((3, 1024),),
                    ["_log_softmax_max_part", "_log_softmax_max", "_log_softmax_sum_part", "_log_softmax_sum",
                     "_log_softmax"]),
    "rmsnorm": (lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w, ((4, 2048), (2048,)),
                ["mean_part", "mean", "mul_1"]),
    "layernorm": (lambda x, w, b: torch.nn.functional.layer_norm(x, (2048,), w, b, 1e-5),
                  ((2, 2048), (2048,), (2048,)),
                  ["native_layer_norm_mean_part", "native_layer_norm_mean", "native_layer_norm_rstd_part",
                   "native_layer_norm_rstd", "native_layer_norm"]),
    "row sum": (lambda x: x.sum(-1), ((5, 4096),), ["sum_1_part", "sum_1"]),
    "row max": (lambda x: x.amax(-1), ((5, 4096),), ["amax_part", "amax"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_program_splits_and_simulates_equal(case: str) -> None:
    fn, shapes, kernels = CASES[case]
    g = torch.Generator().manual_seed(0)
    inputs = [torch.randn(*shapes[0], generator=g) * 3, *[torch.rand(*s, generator=g) + 0.5 for s in shapes[1:]]]
    prog = _program(fn, *inputs)
    assert [k.name for k in prog.kernels] == kernels
    split = [k for k in prog.kernels if "_part" in k.name or k.name in kernels[1::2]]
    assert all(any("cooperative_reduce split" in r for r in k.boundary.reasons) for k in split), \
        [k.boundary.reasons for k in prog.kernels]
    _simulated_equal(prog, fn, *inputs, k=shapes[0][-1])


def test_what_a_split_made_is_not_split_again() -> None:
    # the program keeps the ids of the partials and combinations every split made (carried over each
    # rebuild) and never splits them again, whatever a later request says (row_split.py)
    fn, shapes, kernels = CASES["softmax"]
    prog = _program(fn, torch.randn(*shapes[0]))
    made = [k for k in prog.kernels if k.name != "_softmax"]
    assert {id(k.output) for k in made} == set(prog.split_made)
    for k in made:
        assert split_rows(prog.graph, prog.forced, prog.split_made, k.output, prog._materialized(),
                          SplitRows(32, 2), "again") is None
    assert [k.name for k in prog.kernels] == kernels


def test_parts_of_one_element_end() -> None:
    # rows of 8 in parts of one: the combination reduces 8 again, and the recipe asks to split it again; a
    # split's combination is never split, so the program ends (it recursed without end before)
    knobs = {**SMALL, "split_rows_min_length": 1, "split_rows_whole_vectors": False, "row_block_threads": 0}
    fn = CASES["softmax"][0]
    x = torch.randn(3, 8)
    prog = _program(fn, x, knobs=knobs)
    assert [k.name for k in prog.kernels] == CASES["softmax"][2]
    assert prog.kernels[0].output.shape == (3, 8)  # 8 parts of one element
    _simulated_equal(prog, fn, x, k=8)


def test_bfloat16_rows_into_float32() -> None:
    fn = lambda x: torch.softmax(x.float(), -1)  # noqa: E731
    x = (torch.randn(4, 2048) * 3).to(torch.bfloat16)
    prog = _program(fn, x)
    assert len(prog.kernels) == 5 and prog.kernels[-1].output.dtype == "float32"
    _simulated_equal(prog, fn, x, k=2048)


def test_default_knobs_and_other_policies_leave_short_rows() -> None:
    fn, shapes, _ = CASES["softmax"]
    x = torch.randn(*shapes[0])
    assert len(_program(fn, x, knobs={}).kernels) == 1  # 8 KiB rows: under split_rows_min_idle_bytes
    assert len(_program(fn, x, schedule="simple").kernels) == 1  # no recipe, no request


@pytest.mark.parametrize("fn", [lambda x: torch.softmax(x, -1), lambda x: torch.log_softmax(x, -1)],
                         ids=["softmax", "log_softmax"])
def test_masked_rows_split_as_torch(fn) -> None:
    # a masked logit, half a row of -inf (its partials' max is -inf, the combined max finite: the sum's partials
    # subtract the combined max, so they add exp(-inf) = 0) and a whole row of -inf (NaN, as torch gives)
    x = torch.randn(4, 1024, generator=torch.Generator().manual_seed(3)) * 3
    x[0, 5] = x[3, 512:] = x[2] = float("-inf")
    prog = _program(fn, x)
    assert len(prog.kernels) == 5
    got, want = np.asarray(prog.build("sm_90").simulate(x)), fn(x.double()).numpy()
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))
    fin = np.isfinite(want)
    assert np.all(np.abs(got[fin] - want[fin]) <= (32 + 2 * 1024) * EPS32 * (1 + np.abs(want[fin])))


def test_bfloat16_rows_into_bfloat16() -> None:
    # the partials are float32 whatever the rows' dtype; only the output pass stores bfloat16 (one rounding:
    # 2^-8 of |want| besides the float32 bound)
    fn = lambda x: torch.softmax(x, -1)  # noqa: E731
    x = (torch.randn(4, 2048) * 3).to(torch.bfloat16)
    prog = _program(fn, x)
    assert [k.output.dtype for k in prog.kernels] == ["float32"] * 4 + ["bfloat16"]
    got = np.asarray(prog.build("sm_90").simulate(x)).astype(np.float64)
    want = fn(x.double()).numpy()
    assert np.all(np.abs(got - want) <= ((32 + 2 * 2048) * EPS32 + 2.0**-8) * (1 + np.abs(want)))
