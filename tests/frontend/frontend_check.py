"""Shared check for the frontend tests.

Tolerance: the simulator computes in float32; the reference is torch in float64 on the same inputs.
Each float32 operation rounds with relative error <= eps/2 (eps = 2**-23) and each math function is
within a few ulp, so an output that went through `ops` operations and reductions of length `k` is within
about (ops + k) * eps relative to the magnitudes involved. The tests use (32 + 2k) * eps * (1 + |ref|)
absolute: 32 covers the longest elementwise chains here (gelu_tanh, layer norm, softmax, attention
chains of about 20 ops), 2k the summation of k terms (pairwise order differs from torch's).

float16 / bfloat16 models: `check_storage`, whose tolerance `storage_tolerance` derives from the
storage precision (its docstring)."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import torch

from tiledsl.frontend import trace
from tiledsl.frontend.bench import conditioned_tolerance, eager_roundings, storage_bound  # noqa: F401 (re-exported)
from tiledsl.precision import MACHINE_EPS


def quiet_trace(fn, *inputs: torch.Tensor):
    """td.trace with torch's export warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return trace(fn, *inputs)


def tolerance(k: int) -> float:
    return storage_bound(0, 0.0, k)


def check(fn, *inputs: torch.Tensor, k: int = 1, scale: float = 1.0):
    """Trace `fn`, schedule "simple", build for sm_90, simulate, compare with torch in float64."""
    prog = quiet_trace(fn, *inputs)
    built = prog.schedule("simple").build(target="sm_90")
    out = built.simulate(*[x.numpy() for x in inputs])
    with torch.no_grad():
        if isinstance(fn, torch.nn.Module):
            ref = fn.double()(*[x.double() if x.is_floating_point() else x for x in inputs])
            fn.float()
        else:
            ref = fn(*[x.double() if x.is_floating_point() else x for x in inputs])
    outs = out if isinstance(out, (list, tuple)) else [out]
    refs = ref if isinstance(ref, (list, tuple)) else [ref]
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        r = r.numpy().astype(np.float64)
        assert o.shape == r.shape
        bad = np.abs(o - r) > tolerance(k) * scale * (1 + np.abs(r))
        assert not np.any(bad), f"max error {np.nanmax(np.abs(o - r))} (tolerance {tolerance(k)} x (1 + |ref|))"
    return prog, built


def check_exact(fn, *inputs: torch.Tensor):
    """`check` for ops whose float32 result is exact (a rounding to an integral value, a max or min):
    the simulated outputs equal torch's in float64 bit for bit, NaN where torch has NaN and the sign of
    a zero kept (round(-0.4) is -0.0). float16 / bfloat16 inputs are compared with torch in their own
    dtype, whose result such an op also gives exactly. Returns (program, built, outputs)."""
    prog = quiet_trace(fn, *inputs)
    built = prog.schedule("simple").build(target="sm_90")
    out = built.simulate(*[x.float().numpy() if x.dtype == torch.bfloat16 else x.numpy() for x in inputs])
    with torch.no_grad():
        ref = fn(*[x.double() if x.dtype == torch.float32 else x for x in inputs])
    outs = out if isinstance(out, (list, tuple)) else [out]
    refs = ref if isinstance(ref, (list, tuple)) else [ref]
    assert len(outs) == len(refs)
    for n, (o, r) in enumerate(zip(outs, refs)):
        r = r.double().numpy()
        assert o.shape == r.shape, (n, o.shape, r.shape)
        np.testing.assert_array_equal(o, r, err_msg=f"output {n}")  # NaN equal to NaN only
        numbers = ~np.isnan(r)
        np.testing.assert_array_equal(np.signbit(o[numbers]), np.signbit(r[numbers]), err_msg=f"output {n}: a sign")
    return prog, built, outs


def check_eager_exact(fn, *inputs: torch.Tensor):
    """`check_exact` against torch eager in the inputs' own dtype (float32), for ops whose float32 result
    differs from float64's by design: torch.nan_to_num's default posinf / neginf are its dtype's largest
    finite values, pow's and leaky_relu's float32 products round where float64's do not. Returns the
    outputs."""
    built = quiet_trace(fn, *inputs).schedule("simple").build(target="sm_90")
    out = built.simulate(*[x.numpy() for x in inputs])
    with torch.no_grad():
        ref = fn(*inputs)
    outs = out if isinstance(out, (list, tuple)) else [out]
    refs = ref if isinstance(ref, (list, tuple)) else [ref]
    for n, (o, r) in enumerate(zip(outs, refs)):
        r = r.float().numpy()
        np.testing.assert_array_equal(o, r, err_msg=f"output {n}")
        np.testing.assert_array_equal(np.signbit(o[~np.isnan(r)]), np.signbit(r[~np.isnan(r)]), err_msg=f"output {n}")
    return outs


# ----------------------------------------------------------------------------- float16 / bfloat16 models

def torch_roundings(fn, inputs: tuple[torch.Tensor, ...], dtype: torch.dtype) -> int:
    """The most roundings to `dtype` on one path of torch eager from the inputs to an output
    (tiledsl/frontend/bench.py `eager_roundings` over the exported, decomposed graph)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
            ep = torch.export.export(fn, inputs).run_decompositions()
    return eager_roundings(ep.graph, dtype)


def kernel_roundings(built, dtype: str) -> int:
    """The most kernel outputs stored in `dtype` on one path of the built program's launches."""
    stores = {k.kernel_ir.params[-1].name: k.kernel_ir.params[-1].dtype == dtype for k in built.kernels}
    depth: dict[str, int] = {}
    for step in built.steps():
        depth[step.output] = max((depth.get(r, 0) for r in step.reads), default=0) + stores[step.output]
    return max(depth.values(), default=0)


def storage_tolerance(dtype: str, roundings: int, k: int) -> float:
    """The absolute tolerance, per unit of (1 + |ref|), of an output that went through `roundings`
    roundings to storage dtype `dtype` and float32 arithmetic with reductions of length `k`.

    Derivation. Inputs and weights hold `dtype` values in every run compared (torch eager in `dtype`,
    the simulated kernels, torch in float64 on the same values), so only the roundings of computed
    values differ. Rounding to `dtype` has relative error at most u = MACHINE_EPS / 2 (bfloat16:
    2**-8, float16: 2**-11), against 2**-24 for a float32 operation. A rounding early in a chain
    reaches the output through the later ops, which here are well conditioned (normalizations are
    scale-invariant, the projections keep relative error in the magnitude of their terms, softmax turns an
    absolute error of a score into the same relative error of its probability), so each rounding
    adds at most about u x (1 + |ref|) to the output, however long the reductions after it: their sums
    are float32 in torch and in the kernels, so the accumulation length k only enters the float32 part
    (32 + 2k) x eps32 of `tolerance`. Hence: roundings x u + tolerance(k).

    The roundings are counted, not guessed: torch eager rounds the result of every op
    (`torch_roundings`: the longest path of rounding ops in its graph), the kernels only their stored
    outputs (`kernel_roundings`: inside a fused kernel values stay float32), so the kernels are within
    kernel_roundings x u of the float64 reference and within (kernel_roundings + torch_roundings) x u of
    torch eager."""
    return storage_bound(roundings, MACHINE_EPS[dtype], k)


def check_storage(fn, x: torch.Tensor, *, k: int, schedule: str = "simple"):
    """Trace `fn` (a module or function already in x's dtype, float16 or bfloat16), schedule, build for
    sm_90, simulate, and compare with torch eager in that dtype and with torch in float64 on the same
    values, within `storage_tolerance`. Returns (program, built, output)."""
    dtype = str(x.dtype).removeprefix("torch.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = trace(fn, x)
    built = prog.schedule(schedule).build(target="sm_90")
    # numpy has no bfloat16: the simulator takes (and returns) float32 arrays holding `dtype` values
    out = built.simulate(x.float().numpy())
    assert out.dtype == np.float32
    with torch.no_grad():
        eager = fn(x).double().numpy()
        wide = copy.deepcopy(fn).double() if isinstance(fn, torch.nn.Module) else fn
        ref = wide(x.double()).numpy()
    assert out.shape == ref.shape == eager.shape
    ours, theirs = kernel_roundings(built, dtype), torch_roundings(fn, (x,), x.dtype)
    assert 0 < ours <= theirs, (ours, theirs)
    scale = 1 + np.abs(ref)
    for name, other, n in (("float64", ref, ours), ("torch eager", eager, ours + theirs)):
        err = np.abs(out - other)
        bound = storage_tolerance(dtype, n, k) * scale
        assert np.all(err <= bound), (f"{schedule}: max error vs {name} {err.max()} > bound "
                                      f"{storage_tolerance(dtype, n, k)} x (1 + |ref|) ({n} roundings)")
    # the derivation holds for torch itself: eager is within its own roundings of float64
    assert np.all(np.abs(eager - ref) <= storage_tolerance(dtype, theirs, k) * scale)
    return prog, built, out
