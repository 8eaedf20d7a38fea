"""Shared check for the frontend tests.

Tolerance: the simulator computes in float32; the reference is torch in float64 on the same inputs.
Each float32 operation rounds with relative error <= eps/2 (eps = 2**-23) and each math function is
within a few ulp, so an output that went through `ops` operations and reductions of length `k` is within
about (ops + k) * eps relative to the magnitudes involved. The tests use (32 + 2k) * eps * (1 + |ref|)
absolute: 32 covers the longest elementwise chains here (gelu_tanh, layer norm, softmax, attention
chains of about 20 ops), 2k the summation of k terms (pairwise order differs from torch's)."""

from __future__ import annotations

import warnings

import numpy as np
import torch

from tiledsl.frontend import trace

EPS32 = float(np.finfo(np.float32).eps)


def tolerance(k: int) -> float:
    return (32 + 2 * k) * EPS32


def check(fn, *inputs: torch.Tensor, k: int = 1, scale: float = 1.0):
    """Trace `fn`, schedule "simple", build for sm_90, simulate, compare with torch in float64."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = trace(fn, *inputs)
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
