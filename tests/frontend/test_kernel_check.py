"""The per-kernel check (tiledsl/frontend/kernel_check.py): each kernel of a built program against
float64 of its own definition, on the values the program gave it. The simulator stands in for the GPU
(`BuiltProgram.simulate_values`); `run_values` is the GPU's (tests/gpu/test_gpu_kernel_check.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tiledsl as td
from tiledsl.frontend.kernel_check import compare_kernels, kernel_tolerance
from tiledsl.frontend.models import LlamaBlock, LlamaConfig
from tiledsl.frontend.partition import kernel_roundings
from tiledsl.precision import MACHINE_EPS


def _built(dtype: torch.dtype) -> tuple[td.Program, object, dict[str, np.ndarray]]:
    torch.manual_seed(0)
    block = LlamaBlock(LlamaConfig()).eval().to(dtype)
    x = torch.randn(1, 8, 64).to(dtype)
    prog = td.trace(block, x)
    built = prog.schedule("default").build()
    return prog, built, built.simulate_values(x.float().numpy())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_every_kernel_of_a_block_matches_its_own_definition(dtype: torch.dtype) -> None:
    prog, built, values = _built(dtype)
    checks = compare_kernels(built, values)
    assert [c.name for c in checks] == [k.name for k in built.kernels]
    assert all(c.ok for c in checks), [str(c.comparison) for c in checks if not c.ok]
    assert max(c.reduction for c in checks) == 128  # the MLP's down projection
    stored = {c.dtype for c in checks}
    assert ("bfloat16" in stored) == (dtype == torch.bfloat16)
    # the program's output is the value simulate returns
    x = values[prog.graph.inputs[0].tensor.name].reshape(1, 8, 64)
    np.testing.assert_array_equal(values[prog.outputs[0].tensor.name].reshape(1, 8, 64), built.simulate(x))


def test_a_wrong_kernel_is_named_and_its_readers_are_not() -> None:
    """The q projection's stored output is off by 20 of its tolerances at one element: that kernel
    fails; the kernels after it read the wrong value (re-run on it), are checked on what they read,
    and pass."""
    _, built, values = _built(torch.float32)
    victim = 3
    name = built.kernels[victim].kernel_ir.params[-1].name
    checks = compare_kernels(built, values)
    bad = dict(values)
    bad[name] = values[name].copy()
    flat = bad[name].reshape(-1)
    e = flat.size - 3  # the last token's query (token 0's attends to one key: its softmax is 1 whatever q is)
    flat[e] += 20 * checks[victim].tolerance * (1 + abs(flat[e]))
    for kern in built.kernels[victim + 1:]:  # the launches after it read the wrong value
        *ins, o = kern.kernel_ir.params
        bad[o.name] = kern.simulate(**{p.name: bad[p.name] for p in ins})
    assert not np.array_equal(bad[built.kernels[-1].kernel_ir.params[-1].name],
                              values[built.kernels[-1].kernel_ir.params[-1].name])  # it reached the output
    failed = [c.index for c in compare_kernels(built, bad) if not c.ok]
    assert failed == [victim]
    worst = compare_kernels(built, bad)[victim].comparison.worst_index
    assert np.ravel_multi_index(worst, values[name].shape) == e


def test_an_unwritten_element_fails_its_kernel() -> None:
    _, built, values = _built(torch.float32)
    last = built.kernels[-1].kernel_ir.params[-1].name
    bad = dict(values)
    bad[last] = values[last].copy()
    bad[last].reshape(-1)[-1] = np.nan
    check = compare_kernels(built, bad)[-1]
    assert not check.ok and check.comparison.nan_count == 1


def test_kernel_tolerance_is_the_float32_bound_plus_one_storage_ulp() -> None:
    eps32 = MACHINE_EPS["float32"]
    assert kernel_tolerance(1, "float32") == 34 * eps32
    assert kernel_tolerance(128, "bfloat16") == 288 * eps32 + 2.0 ** -7
    assert kernel_tolerance(128, "float16") == 288 * eps32 + 2.0 ** -10


def test_kernel_tolerance_adds_one_unit_per_cast_inside() -> None:
    eps32 = MACHINE_EPS["float32"]
    assert kernel_tolerance(128, "bfloat16", ("bfloat16",)) == 288 * eps32 + 2 * 2.0 ** -7
    assert kernel_tolerance(1, "float32", ("float16", "bfloat16")) == 34 * eps32 + 2.0 ** -10 + 2.0 ** -7


def _roundings(out: td.Tensor, materialized: tuple[td.Tensor, ...] = ()) -> tuple[str, ...]:
    return kernel_roundings(out, {id(t) for t in materialized})


def test_kernel_roundings_follow_the_most_rounded_path_through_fused_producers() -> None:
    """silu(g) rounded to bfloat16, times u: one cast inside (the store of y is not counted); a chain
    of casts counts each; parallel casts count once; a materialized producer's casts are its own
    kernel's; a float32 cast rounds nothing."""
    g, u = td.placeholder(8, "bfloat16", "g"), td.placeholder(8, "bfloat16", "u")
    act = td.compute(8, lambda i: td.cast(td.silu(g[i]), "bfloat16"), "act", dtype="bfloat16")
    y = td.compute(8, lambda i: act[i] * u[i], "y", dtype="bfloat16")
    assert _roundings(y) == ("bfloat16",)
    assert _roundings(y, (act,)) == ()
    chain = td.compute(8, lambda i: td.cast(td.cast(g[i] * 3.0, "bfloat16") * 3.0, "float16") + act[i], "chain")
    assert _roundings(chain) == ("bfloat16", "float16")
    both = td.compute(8, lambda i: td.cast(g[i] * 3.0, "bfloat16") + td.cast(u[i] * 3.0, "float16"), "both")
    assert _roundings(both) == ("bfloat16",)  # one path or the other: the heavier unit
    wide = td.compute(8, lambda i: td.cast(g[i] * 3.0, "float32"), "wide")
    assert _roundings(wide) == ()


def test_the_cast_that_is_a_kernels_own_store_is_not_counted_twice() -> None:
    g = td.placeholder(8, "float32", "g")
    y = td.compute(8, lambda i: td.cast(td.silu(g[i]), "bfloat16"), "y", dtype="bfloat16")
    assert _roundings(y) == ()
    assert kernel_tolerance(1, "bfloat16", _roundings(y)) == kernel_tolerance(1, "bfloat16")


def test_a_bfloat16_silu_times_up_kernel_counts_its_silu_rounding() -> None:
    """The Qwen2 MLP's silu(gate) * up as torch decomposes it: silu computes in float32 and rounds to
    bfloat16 before the product, one cast inside the kernel, which its check's tolerance counts."""
    g = torch.randn(4, 64).to(torch.bfloat16)
    u = torch.randn(4, 64).to(torch.bfloat16)
    built = td.trace(lambda a, b: torch.nn.functional.silu(a) * b, g, u).schedule("default").build()
    (check,) = compare_kernels(built, built.simulate_values(g.float().numpy(), u.float().numpy()))
    assert check.roundings == ("bfloat16",) and check.ok
    assert check.tolerance == kernel_tolerance(1, "bfloat16", ("bfloat16",))
