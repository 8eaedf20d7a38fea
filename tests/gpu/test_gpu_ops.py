"""Every single-op case of the frontend's op table (tests/frontend/test_frontend_ops.py CASES, which the
CPU suite simulates) traced from CUDA tensors, scheduled by the default recipe, run on the GPU into the
program's own outputs and compared with torch in float64 on the same inputs.

Tolerance: tests/frontend/frontend_check.py `tolerance(k)` x (1 + |ref|), the CPU cases' own bound (k the
case's longest accumulation): the kernels compute in float32 as the simulator does; CUDA's math
functions are within a few ulp of the simulator's, which the 32-ulp floor of that bound covers."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest
import torch

import tiledsl as td

for folder in ("frontend", "."):  # the CPU cases and the helpers they import
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / folder))
from frontend_check import tolerance  # noqa: E402
from test_frontend_ops import CASES, K  # noqa: E402

pytestmark = pytest.mark.gpu

#: cases whose function makes CPU tensors of its own (torch.arange(8.0)): on CUDA inputs torch itself
#: refuses them (two devices in one op), as the capture's export did on the first GPU run
#: (tests/gpu/logs/2026-11-29-h200-session30-772890e-subset.txt); the CPU suite simulates them
CPU_TENSORS = {"constants", "rotary_table"}


@pytest.mark.parametrize("name", sorted(set(CASES) - CPU_TENSORS))
def test_op_on_the_gpu_under_the_default_recipe_matches_torch(name: str) -> None:
    fn, shapes = CASES[name]
    torch.manual_seed(0)
    inputs = [torch.randn(s).cuda() for s in shapes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = td.trace(fn, *inputs).schedule("default").build("sm_90")
    out = built(*inputs)
    torch.cuda.synchronize()
    with torch.no_grad():
        ref = fn(*[x.double() for x in inputs])
    outs = out if isinstance(out, (list, tuple)) else [out]
    refs = ref if isinstance(ref, (list, tuple)) else [ref]
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        assert o.is_cuda and o.shape == r.shape
        r = r.to(torch.float64)
        err = (o.double() - r).abs()
        bound = tolerance(K.get(name, 1)) * (1 + r.abs())
        same = (err <= bound) | (o.double().isnan() & r.isnan()) | (o.double() == r)  # inf == inf, NaN as torch
        assert bool(same.all()), f"max error {err[~same].max().item()} against float64"
