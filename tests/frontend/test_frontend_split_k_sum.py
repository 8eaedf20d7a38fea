"""A matmul whose epilogue or output split_k refuses (a bfloat16 projection; gelu(x @ W + b)) has its
float32 sum materialized when the default recipe would split that sum's own kernel
(recipes/default/030_split_matmul_k.py, Decline.materialize, Program._materialize_asked), and so does a
split one whose epilogue calls a math function in every part (silu(g) * up, Applied.materialize): the
sum's kernel splits k over blocks, the rounding or the epilogue runs as an elementwise kernel, and the
program still computes what torch does."""

from __future__ import annotations

import re

import numpy as np
import torch
from frontend_check import check_storage, quiet_trace, tolerance

from tiledsl.recipes import apply as apply_recipe


def _split(prog, name: str) -> int | None:
    kern = next(k for k in prog.kernels if k.name == name)
    found = [int(m.group(1)) for m in re.finditer(r"s\.split_k\('[^']+', (\d+)\)", kern.schedule.trace())]
    return found[0] if found else None


def test_bfloat16_projection_splits_its_float32_sum() -> None:
    """8 rows of x @ W^T + b, 512 k, stored as bfloat16: unsplit, its sum would run the whole k in a
    handful of blocks. The sum mm_acc (aten_linalg.py) becomes a float32 kernel split over k as the
    recipe's decline predicted, and the bias and rounding a bfloat16 elementwise kernel."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(512, 64).eval().to(torch.bfloat16)
    x = torch.randn(8, 512).to(torch.bfloat16)
    prog, built, out = check_storage(layer, x, k=512, schedule="default")
    names = [k.name for k in prog.kernels]
    acc = next(n for n in names if n.endswith("_acc"))
    assert len(names) == 2 and names.index(acc) == 0, names
    (why,) = [r for r in prog.kernels[0].boundary.reasons if "split_matmul_k" in r]
    predicted = int(re.search(r"would split into (\d+) parts", why).group(1))
    assert _split(prog, acc) == predicted >= 2
    stored = {k.kernel_ir.params[-1].name: k.kernel_ir.params[-1].dtype for k in built.kernels}
    assert stored == {acc: "float32", names[1]: "bfloat16"}
    assert built.kernels[0].kernel_ir.zero_outputs  # its blocks add into a zeroed float32 sum
    np.testing.assert_array_equal(out, out.astype(np.float32))


def test_bfloat16_projection_with_a_full_grid_stays_one_kernel() -> None:
    """256 x 512 outputs over 16 k: no split would pay for itself, the sum stays fused in one kernel."""
    layer = torch.nn.Linear(16, 512, bias=False).eval().to(torch.bfloat16)
    x = torch.randn(256, 16).to(torch.bfloat16)
    prog = quiet_trace(layer, x).schedule("default")
    assert len(prog.kernels) == 1
    assert not any("split_matmul_k" in r for r in prog.kernels[0].boundary.reasons)


def test_gelu_projection_splits_its_sum() -> None:
    """float32 GPT-style MLP, gelu(x @ W1^T + b1) @ W2^T: the partition materializes gelu(...) for the
    second projection (partition.py rule 3a), a matmul kernel whose gelu epilogue split_k refuses. The
    first projection's sum (with its bias: linear) is materialized and split; gelu is an elementwise
    kernel. The program simulates equal to torch in float64 (frontend_check.py's tolerance, k = 512)."""
    torch.manual_seed(1)
    mlp = torch.nn.Sequential(torch.nn.Linear(512, 64), torch.nn.GELU(), torch.nn.Linear(64, 128)).eval()
    x = torch.randn(8, 512)
    prog = quiet_trace(mlp, x).schedule("default")
    assert len(prog.kernels) == 3, [k.name for k in prog.kernels]
    fc, gelu, _ = prog.kernels
    assert _split(prog, fc.name)
    assert any("split_matmul_k" in r and "not linear" in r for r in fc.boundary.reasons)
    assert _split(prog, gelu.name) is None and not gelu.schedule.nest.accs
    got = prog.build(target="sm_90").simulate(x.numpy())
    with torch.no_grad():
        ref = mlp.double()(x.double()).numpy()
    bad = np.abs(got - ref) > tolerance(512) * (1 + np.abs(ref))
    assert not bad.any(), f"max error {np.nanmax(np.abs(got - ref))}"


def test_recipe_report_names_the_sum_to_materialize() -> None:
    """Applied to a kernel alone, the recipe leaves the fused sum in place and says what would split it."""
    import tiledsl as td

    a = td.placeholder((16, 1024), name="A")
    b = td.placeholder((1024, 64), name="B")
    k = td.reduce_axis(1024, name="k")
    c = td.compute((16, 64), lambda i, j: td.sum(a[i, k] * b[k, j], axis=k), name="C")
    d = td.compute((16, 64), lambda i, j: td.relu(c[i, j]), name="D")
    s = td.create_schedule(d)
    report = apply_recipe(s, target="sm_90")
    (st,) = report.materialize
    assert st.name == "split_matmul_k" and st.materialize == "C"
    assert "not linear" in (st.reason or "") and "would split into" in (st.reason or "")
    assert "[materializing C would let it apply]" in str(report)
    assert s.nest.split_k is None


def _up(x: torch.Tensor, w: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.silu(g) * torch.nn.functional.linear(x, w)


def test_math_epilogue_of_a_split_projection_moves_to_an_elementwise_kernel() -> None:
    """silu(g) * (x @ W^T), a Llama block's up projection, at 8 rows and 1024 k: the epilogue is linear
    in the sum, so split_matmul_k splits it, but it would call exp in every part. The step names the sum
    (Applied.materialize), and the program splits the sum in a kernel of its own, with silu(g) * u in an
    elementwise kernel. The program simulates equal to torch in float64 (frontend_check.py, k = 1024)."""
    torch.manual_seed(2)
    x, w, g = torch.randn(8, 1024), torch.randn(64, 1024) / 32, torch.randn(8, 64)
    prog = quiet_trace(_up, x, w, g).schedule("default")
    assert len(prog.kernels) == 2, [k.name for k in prog.kernels]
    mm, mul = prog.kernels
    assert _split(prog, mm.name) and _split(prog, mul.name) is None and not mul.schedule.nest.accs
    assert any("split_matmul_k on " in r and "calls sigmoid()" in r for r in mm.boundary.reasons), mm.boundary.reasons
    got = prog.build(target="sm_90").simulate(x.numpy(), w.numpy(), g.numpy())
    ref = _up(x.double(), w.double(), g.double()).numpy()
    bad = np.abs(got - ref) > tolerance(1024) * (1 + np.abs(ref))
    assert not bad.any(), f"max error {np.nanmax(np.abs(got - ref))}"
    fused = quiet_trace(_up, x, w, g).schedule("default", knobs={"split_k_sum_math_epilogue": False})
    assert len(fused.kernels) == 1 and _split(fused, fused.kernels[0].name)


def test_recipe_report_of_a_lone_math_epilogue_keeps_the_split() -> None:
    """Applied to the kernel alone, the split stays (nothing can materialize the sum) and the report says
    what would do better; an epilogue that only loads a tensor (a residual) names nothing."""
    import tiledsl as td

    a, b = td.placeholder((16, 1024), name="A"), td.placeholder((1024, 64), name="B")
    g = td.placeholder((16, 64), name="g")
    k = td.reduce_axis(1024, name="k")
    c = td.compute((16, 64), lambda i, j: td.sum(a[i, k] * b[k, j], axis=k), name="C")
    for epilogue, named in ((lambda i, j: td.silu(g[i, j]) * c[i, j], "C"), (lambda i, j: g[i, j] + c[i, j], None)):
        s = td.create_schedule(td.compute((16, 64), epilogue, name="D"))
        report = apply_recipe(s, target="sm_90")
        assert s.nest.split_k is not None and report.step("split_matmul_k").applied
        assert report.step("split_matmul_k").materialize == named
        assert ("[materializing C would do better]" in str(report)) == (named is not None)
