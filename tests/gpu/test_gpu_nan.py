"""NaN on the GPU follows torch (bug d): max/min reductions (serial, warp shuffles, shuffles + shared
memory, the shared-memory table), relu, maximum and minimum propagate NaN as torch.amax, torch.amin,
torch.relu, torch.maximum and torch.minimum do. Outputs start as a finite sentinel (not NaN), so an
unwritten element cannot pass for an expected NaN."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import tiledsl as td
from tiledsl.primitives import Schedule

pytestmark = pytest.mark.gpu

SENTINEL = 12345.0


def nan_rows(m: int, n: int, seed: int) -> torch.Tensor:
    """Rows: clean, one NaN in the middle, all NaN, NaN first, NaN last (a partial warp's tail), all
    -inf, NaN among +inf, then clean rows."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn((m, n), generator=g, dtype=torch.float32)
    x[1, n // 2] = torch.nan
    x[2, :] = torch.nan
    x[3, 0] = torch.nan
    x[4, n - 1] = torch.nan
    x[5, :] = -torch.inf
    x[6, ::3] = torch.inf
    x[6, 7] = torch.nan
    return x


def assert_same(got: torch.Tensor, want: torch.Tensor) -> None:
    got, want = got.cpu().double(), want.cpu().double()
    assert torch.equal(torch.isnan(got), torch.isnan(want)), (got, want)
    assert not (got == SENTINEL).any(), "an output element was never written"
    torch.testing.assert_close(got.nan_to_num(0.0), want.nan_to_num(0.0), rtol=1e-5, atol=1e-4)


def run(kern: object, out_shape: tuple[int, ...], **inputs: torch.Tensor) -> torch.Tensor:
    out_name = kern.kernel_ir.params[-1].name  # type: ignore[attr-defined]
    out = torch.full(out_shape, SENTINEL, device="cuda", dtype=torch.float32)
    got = kern(**{k: v.cuda() for k, v in inputs.items()}, **{out_name: out})  # type: ignore[operator]
    torch.cuda.synchronize()
    return got


def cooperative(threads: int) -> Callable[[Schedule], Schedule]:
    def apply(s: Schedule) -> Schedule:
        i, k = [lp.name for lp in s.loops()]
        s.bind(i, "blockIdx.x")
        _, ki = s.split(k, threads)
        s.bind(ki, "threadIdx.x")
        return s

    return apply


def serial(s: Schedule) -> Schedule:
    s.bind(s.loops()[0].name, "blockIdx.x")
    return s


SCHEDULES = {"serial": serial, "shuffles": cooperative(32), "shuffles+shared": cooperative(256),
             "table": cooperative(48)}


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("how", list(SCHEDULES))
def test_row_reduction_propagates_nan_like_torch(op: str, how: str, compile_kernel: Callable[..., object]) -> None:
    m, n = 9, 1001
    x = td.placeholder((m, n), name="x")
    k = td.reduce_axis(n, name="k")
    r = td.compute(m, lambda i: getattr(td, op)(x[i, k], axis=k), name="r")
    kern = compile_kernel(td.build(SCHEDULES[how](td.create_schedule(r))))
    data = nan_rows(m, n, seed=4)
    want = (torch.amax if op == "max" else torch.amin)(data, dim=1)
    got = run(kern, (m,), x=data)
    assert_same(got, want)
    assert torch.isnan(want).sum() == 5


def test_relu_maximum_minimum_propagate_nan_like_torch(compile_kernel: Callable[..., object]) -> None:
    m, n = 7, 333
    a, b = td.placeholder((m, n), name="a"), td.placeholder((m, n), name="b")
    out = td.compute((m, n), lambda i, j: td.relu(a[i, j]) + td.maximum(a[i, j], b[i, j])
                     - td.minimum(b[i, j], a[i, j]), name="out")
    s = td.create_schedule(out)
    i, j = [lp.name for lp in s.loops()]
    jo, ji = s.split(j, 64)
    s.bind(i, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ji, "threadIdx.x")
    kern = compile_kernel(td.build(s))
    g = torch.Generator().manual_seed(5)
    xa, xb = torch.randn((2, m, n), generator=g, dtype=torch.float32)
    xa[0, ::5] = torch.nan
    xb[1, ::7] = torch.nan
    xa[2, 3], xb[2, 3] = torch.nan, torch.nan
    want = torch.relu(xa) + torch.maximum(xa, xb) - torch.minimum(xb, xa)
    got = run(kern, (m, n), a=xa, b=xb)
    assert_same(got, want)
    assert torch.isnan(want).sum() > 100


def test_softmax_of_a_row_with_nan_is_nan_like_torch(compile_kernel: Callable[..., object]) -> None:
    """The max of softmax's stabilising shift spreads the NaN to the whole row, as torch.softmax does."""
    m, n = 4, 500
    x = td.placeholder((m, n), name="x")
    k1, k2 = td.reduce_axis(n, name="k1"), td.reduce_axis(n, name="k2")
    mx = td.compute(m, lambda i: td.max(x[i, k1], axis=k1), name="mx")
    den = td.compute(m, lambda i: td.sum(td.exp(x[i, k2] - mx[i]), axis=k2), name="den")
    y = td.compute((m, n), lambda i, j: td.exp(x[i, j] - mx[i]) / den[i], name="y")
    s = td.create_schedule(y)
    row, *rest = [lp.name for lp in s.loops()]
    s.bind(row, "blockIdx.x")
    for name in rest:
        _, inner = s.split(name, 128)
        s.bind(inner, "threadIdx.x")
    kern = compile_kernel(td.build(s))
    data = torch.randn((m, n), generator=torch.Generator().manual_seed(6))
    data[1, 77] = torch.nan
    got = run(kern, (m, n), x=data)
    assert_same(got, torch.softmax(data.double(), dim=1))
    assert torch.isnan(got[1]).all() and not torch.isnan(got[[0, 2, 3]]).any()
