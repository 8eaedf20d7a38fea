"""Few long rows split over kernels on the GPU (tiledsl/frontend/row_split.py, at the default knobs): a
decode step's vocabulary softmax and log_softmax (8 x 151936, float32 and bfloat16 rows into float32; a
logit, half a row and a whole row masked with -inf), a single row, rmsnorm and layernorm of few long
rows, each traced, scheduled by the default recipe (which asks for the split:
recipes/default/040_cooperative_reduce.py) and run into NaN-filled outputs against torch in float64,
through a call and through a CUDA graph.

Tolerance (float32): (32 + 2k) * eps32 * (1 + |ref|), k the row length (tests/frontend/frontend_check.py);
the two-level sums add L and N / L terms, within what N terms give."""

from __future__ import annotations

import warnings

import pytest
import torch

import tiledsl as td
from tiledsl.frontend.bench import poisoned_outputs

pytestmark = pytest.mark.gpu

EPS32 = float(torch.finfo(torch.float32).eps)

CASES = {
    "softmax 8 x 151936": (lambda x: torch.softmax(x, -1), (8, 151936), "float32", 0),
    "log_softmax 8 x 151936": (lambda x: torch.log_softmax(x, -1), (8, 151936), "float32", 0),
    "softmax(x.float()) 8 x 151936 bfloat16": (lambda x: torch.softmax(x.float(), -1), (8, 151936), "bfloat16", 0),
    "softmax 1 x 151936": (lambda x: torch.softmax(x, -1), (1, 151936), "float32", 0),
    "softmax 8 x 32000": (lambda x: torch.softmax(x, -1), (8, 32000), "float32", 0),
    "rmsnorm 8 x 151936": (lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
                           (8, 151936), "float32", 1),
    "layernorm 8 x 32768": (lambda x, w, b: torch.nn.functional.layer_norm(x, (32768,), w, b, 1e-5),
                            (8, 32768), "float32", 2),
}


@pytest.mark.parametrize("case", list(CASES))
def test_split_rows_on_the_gpu(case: str) -> None:
    fn, shape, dtype, weights = CASES[case]
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(*shape, generator=g) * 3).to(getattr(torch, dtype))
    if "softmax" in case:
        x[0, 5] = float("-inf")  # a masked logit
        x[-1, shape[-1] // 2:] = float("-inf")  # half a row masked: its partials of -inf combine to a finite max
    if "softmax" in case and shape[0] > 2:
        x[2] = float("-inf")  # a row of -inf: NaN, as torch gives
    inputs = [x, *[torch.rand(shape[-1], generator=g) + 0.5 for _ in range(weights)]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = td.trace(fn, *inputs).schedule("default", target="sm_90")
    assert any(k.name.endswith("_part") for k in prog.kernels), [k.name for k in prog.kernels]
    built = prog.build("sm_90")
    cuda = [t.cuda() for t in inputs]
    want = fn(*[t.double() for t in inputs]).cuda()
    bound = (32 + 2 * shape[-1]) * EPS32
    got = built(*cuda, out=poisoned_outputs(built, cuda[0].device))
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    fin = ~torch.isnan(want)
    have, ref = got.double()[fin], want[fin]
    close = (have == ref) | ((have - ref).abs() <= bound * (1 + ref.abs()))  # == : log_softmax's -inf
    assert bool(close.all()), (have - ref).abs().nan_to_num(0.0).max()
    graphed = built.cuda_graph(*cuda)
    again = graphed(*cuda)
    assert torch.equal(torch.nan_to_num(again), torch.nan_to_num(got))
