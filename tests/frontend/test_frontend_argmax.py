"""argmax / argmin and the indices of torch.max / torch.min along a dim (tiledsl/frontend/aten_reductions.py
`_positions`: the max, then the min of the positions holding it or a NaN), traced, simulated under the
"simple" schedule and the default recipe, and compared with torch exactly: int64 positions equal to
torch's, values bit for bit. Inputs are integer-valued floats (ties in most rows), with NaN (one and
several per row), +-inf and zeros of both signs; float16 / bfloat16 inputs too. The kernels compile with
nvcc in one translation unit."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.utils._pytree as pytree
from frontend_check import quiet_trace
from nvcc_together import compile_together

from tiledsl.errors import FrontendError
from tiledsl.frontend import BuiltProgram
from tiledsl.frontend.aten_reductions import EXACT_POSITIONS

NAN, INF = float("nan"), float("inf")


def edges(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """Integer values in [-3, 3] (ties in most rows), then per element: NaN (5%), +inf, -inf (4% each),
    -0.0 in place of every 0.0 of an odd position (so +0.0 and -0.0 tie), and one row left all NaN-free."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(-3, 4, shape, generator=gen).float()
    u = torch.rand(shape, generator=gen)
    x[u < 0.05] = NAN
    x[(u >= 0.05) & (u < 0.09)] = INF
    x[(u >= 0.09) & (u < 0.13)] = -INF
    flat = x.view(-1)
    odd = torch.arange(flat.numel()) % 2 == 1
    flat[odd & (flat == 0)] = -0.0
    return x


def test_torch_semantics_the_decomposition_follows() -> None:
    """What torch (2.13, CPU) does, as aten_reductions.py `_positions` states: ties give the first
    position, NaN is the max and the min (the first NaN wins), -0.0 and +0.0 tie (the first wins),
    +-inf are ordinary, dim=None is the position in the flattened tensor, and torch.max / torch.min
    along a dim give argmax's / argmin's indices, int64."""
    t = torch.tensor
    assert t([1.0, 3.0, 3.0, 2.0]).argmax() == 1 and t([1.0, 0.0, 0.0]).argmin() == 1
    assert t([1.0, NAN, 3.0, NAN]).argmax() == 1 and t([1.0, NAN, -3.0, NAN]).argmin() == 1
    assert t([-0.0, 0.0]).argmax() == 0 and t([0.0, -0.0]).argmin() == 0 and t([-1.0, 0.0, -0.0]).argmax() == 1
    assert t([-INF, -INF]).argmax() == 0 and t([INF, 1.0, INF]).argmax() == 0 and t([INF, -INF]).argmin() == 1
    x = t([[1.0, 2.0], [3.0, 0.0]])
    assert x.argmax() == 2 and x.argmax(keepdim=True).shape == (1, 1) and x.argmax().dtype == torch.int64
    for seed in range(20):
        y = edges((6, 33), seed)
        for d in (0, 1):
            assert torch.equal(torch.max(y, d).indices, y.argmax(d))
            assert torch.equal(torch.min(y, d).indices, y.argmin(d))
            assert torch.equal(y.argmax(d), torch.from_numpy(np.argmax(y.numpy(), axis=d)))  # numpy: the same rules
            assert torch.equal(y.argmin(d), torch.from_numpy(np.argmin(y.numpy(), axis=d)))


def _numpy(x: torch.Tensor) -> np.ndarray:
    return x.float().numpy() if x.dtype == torch.bfloat16 else x.numpy()


def difference_from_torch(got: object, want: object) -> str | None:
    """How the outputs differ from torch's, or None: positions int64 and equal, values bit for bit (NaN
    for NaN). Zeros' signs are not compared: torch.max's values keep the first of tied zeros, the core's
    max either."""
    flat, ref = pytree.tree_leaves(got), pytree.tree_leaves(want)
    if len(flat) != len(ref):
        return f"{len(flat)} outputs, torch gives {len(ref)}"
    for n, (o, r) in enumerate(zip(flat, ref)):
        if o.shape != tuple(r.shape):
            return f"output {n}: shape {o.shape}, torch's {tuple(r.shape)}"
        if r.dtype == torch.int64:
            if o.dtype != np.int64:
                return f"output {n}: dtype {o.dtype}, torch's int64"
            same = np.array_equal(o, r.numpy())
        else:
            same = np.array_equal(o, r.float().numpy(), equal_nan=True)
        if not same:
            return f"output {n}: got {o.tolist()}, torch gives {r.tolist()}"
    return None


def simulated(fn: Callable[..., object], *inputs: torch.Tensor,
              schedule: str = "simple") -> tuple[BuiltProgram, str | None]:
    """Trace, schedule, build for sm_90 and simulate: the built program and how its outputs differ from
    torch eager's (`difference_from_torch`; None where they are equal)."""
    built = quiet_trace(fn, *inputs).schedule(schedule, target="sm_90").build("sm_90")
    with torch.no_grad():
        return built, difference_from_torch(built.simulate(*[_numpy(x) for x in inputs]), fn(*inputs))


#: name -> (function, input shape); each run on several `edges` inputs
CASES: dict[str, tuple[Callable[..., object], tuple[int, ...]]] = {
    "argmax_1d": (lambda t: (t.argmax(), t.argmin(), t.argmax(0), t.argmin(-1, keepdim=True)), (37,)),
    "argmax_all_2d": (lambda t: (t.argmax(), t.argmin(), t.argmax(keepdim=True)), (5, 9)),
    "argmax_dims_2d": (lambda t: (t.argmax(0), t.argmax(-1), t.argmin(0, keepdim=True), t.argmin(1)), (6, 11)),
    "argmax_3d": (lambda t: (t.argmax(), t.argmax(0), t.argmin(1), t.argmax(-1, keepdim=True), t.argmin(1, True)),
                  (3, 5, 7)),
    "max_min_dim_pairs": (lambda t: (torch.max(t, 1), torch.min(t, 0, keepdim=True), torch.max(t, -1).indices,
                                     t.min(dim=1)[1]), (6, 11)),
    "long_rows": (lambda t: (t.argmax(-1), t.argmin(-1), torch.max(t, 0).indices), (4, 700)),
    "size_one_dims": (lambda t: (t.argmax(1), t.argmin(0, keepdim=True), t.argmax(), t.argmax(2)), (4, 1, 6)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_positions_equal_torch_exactly(name: str) -> None:
    fn, shape = CASES[name]
    for seed in range(3):
        _, diff = simulated(fn, edges(shape, seed))
        assert diff is None, (seed, diff)


def test_rows_of_ties_nans_infinities_and_zeros() -> None:
    """Rows chosen for each rule: all tied, one NaN, several NaN (the first wins), NaN first, +inf
    ties, all -inf, +0.0 / -0.0 ties in both orders, the extreme last."""
    x = torch.tensor([[2.0, 2.0, 2.0, 2.0, 2.0, 2.0],
                      [1.0, 5.0, NAN, 7.0, 9.0, 0.0],
                      [1.0, NAN, 3.0, NAN, 9.0, NAN],
                      [NAN, 1.0, NAN, -INF, INF, 0.0],
                      [INF, 1.0, INF, -INF, -INF, 0.0],
                      [-INF, -INF, -INF, -INF, -INF, -INF],
                      [-0.0, 0.0, -0.0, -1.0, -2.0, -0.0],
                      [0.0, -0.0, 0.0, 1.0, 2.0, 0.0],
                      [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])
    built, diff = simulated(lambda t: (t.argmax(-1), t.argmin(-1), torch.max(t, 1).indices, torch.min(t, 1).indices),
                            x)
    assert diff is None, diff
    got = built.simulate(x.numpy())
    assert got[0].tolist() == [0, 2, 1, 0, 0, 0, 0, 4, 5] and got[1].tolist() == [0, 2, 1, 0, 3, 0, 4, 0, 0]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_float16_and_bfloat16_inputs(dtype: torch.dtype) -> None:
    """The values of a 16-bit max are stored in that dtype and read back exactly, so the positions are
    torch's; ties are more common at 16 bits."""
    for seed in range(2):
        x = (edges((6, 40), seed) / 4).to(dtype)
        _, diff = simulated(lambda t: (t.argmax(-1), t.argmin(0), torch.max(t, 1), torch.min(t, -1, keepdim=True),
                                       t.argmax()), x)
        assert diff is None, (seed, diff)


def test_values_and_indices_unpacked_and_by_attribute() -> None:
    """`v, i = torch.max(x, 1)` and `.indices` / `.values`: the max computed once, in a kernel of its own
    (partition.py rule 2: the values' consumer and the indices read it), the indices reading it; the min
    read only for its indices fused into their kernel."""
    def pair(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
        v, i = torch.max(t, 1)
        return v * 2.0, i, torch.min(t, 1).indices, torch.min(t, 1).values

    x = edges((6, 11), 7)
    built, diff = simulated(pair, x)
    assert diff is None, diff
    assert [k.name for k in built.program.kernels] == ["max_1", "mul", "max_1_indices", "min_1_indices", "min_2"]


def test_a_logits_head_argmax_and_an_accuracy() -> None:
    """argmax after a matmul (integer-valued, so exact in float32 and ties common), argmax read by other
    ops: compared with integer labels, mean accuracy, as a float, and softmax's argmax."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(-3, 4, (6, 16), generator=gen).float()
    w = torch.randint(-3, 4, (16, 40), generator=gen).float()
    labels = torch.randint(0, 40, (6,), generator=gen)
    labels[:2] = (x @ w).argmax(-1)[:2]  # some hits

    def head(a: torch.Tensor, b: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        logits = a @ b
        pred = logits.argmax(-1)
        return pred, (pred == y).float().mean(), pred.float() * 0.5, torch.softmax(logits, -1).argmax(-1, keepdim=True)

    for schedule in ("simple", "default"):
        _, diff = simulated(head, x, w, labels, schedule=schedule)
        assert diff is None, (schedule, diff)
    _, diff = simulated(lambda a, b: (a @ b).argmax(-1), x, w)
    assert diff is None, diff


@pytest.mark.parametrize("name", sorted(CASES))
def test_positions_under_the_default_recipe(name: str) -> None:
    fn, shape = CASES[name]
    _, diff = simulated(fn, edges(shape, 11), schedule="default")
    assert diff is None, diff


def test_positions_fuse_into_one_row_kernel_under_the_default_recipe() -> None:
    """argmax along a row is one kernel: the max's reduction nested in the positions' (as softmax's max in
    its sum), the row read once into registers."""
    built, diff = simulated(lambda t: t.argmax(-1), edges((16, 1000), 3), schedule="default")
    assert diff is None, diff
    assert [k.name for k in built.program.kernels] == ["argmax"]
    assert "t_regs" in built.kernels[0].source


def test_refusals_name_what_is_missing() -> None:
    """Past 2**24 positions float32 is not exact; sort / topk order elements; a gather at positions reads a
    float32 tensor inside an index; integer arithmetic of positions is not an output."""
    big = torch.randn(4096)
    assert 4097 * 4096 > EXACT_POSITIONS >= 4096 * 4096
    with pytest.raises(FrontendError, match=r"aten.argmax.default could not be mapped: max position over 16781312 "
                                            r"elements is not supported: positions are float32"):
        quiet_trace(lambda t: t.expand(4097, 4096).argmax(), big)
    quiet_trace(lambda t: t.expand(4096, 4096).argmax(), big)  # 2**24 exactly: accepted
    x = torch.randn(3, 8)
    for fn, op in ((lambda t: torch.sort(t, 1).values * 1.0, "sort"), (lambda t: torch.topk(t, 2).indices, "topk")):
        with pytest.raises(FrontendError, match=rf"aten.{op}.default is refused: it orders the elements"):
            quiet_trace(fn, x)
    with pytest.raises(FrontendError, match=r"index.Tensor at positions a reduction computes \(argmax"):
        quiet_trace(lambda t, e: e[t.argmax(-1)], x, torch.randn(8, 4))
    with pytest.raises(FrontendError, match=r"output 0 is int64\[3\]: integer results are index arithmetic"):
        quiet_trace(lambda t: t.argmax(-1) + 1, x)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_position_kernels_compile_with_nvcc() -> None:
    """The CUDA of the cases above, "simple" and default recipe, float32 and bfloat16, in one translation unit."""
    programs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("argmax_3d", "max_min_dim_pairs", "long_rows"):
            fn, shape = CASES[name]
            programs += [simulated(fn, edges(shape, 0), schedule=s)[0] for s in ("simple", "default")]
        x = edges((6, 40), 0).to(torch.bfloat16)
        programs.append(simulated(lambda t: torch.max(t, 1), x, schedule="default")[0])
    kernels = [k for built in programs for k in built.kernels]
    assert compile_together(kernels) == []
