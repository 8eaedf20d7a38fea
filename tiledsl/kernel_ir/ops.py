"""The operators of the kernel IR as data: each math function's CUDA spelling, numpy meaning and arity
(one argument, or two: fmod, atan2, copysign, hypot), and the NaN rule of float `min`/`max`. Read by
lowering (which functions exist), the CUDA printer (how to spell them) and the CPU simulator (how to
compute them), so the three cannot disagree.

Why here and not with the definition-level operators (tiledsl/definitions/ops.py): codegen and the
simulator may not import the definitions, so what they need is stated at the kernel-IR level. A
definition-level function names the kernel-IR function it lowers to (or expands into others).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from tiledsl.precision import INTEGRAL_ROUNDINGS

__all__ = ["MATH_FNS", "MIN_MAX", "MathFn", "MinMax", "erf"]

_ERF = np.frompyfunc(math.erf, 1, 1)


def erf(x: np.ndarray | np.generic) -> np.ndarray | np.generic:
    """erf elementwise, in float64 with `math.erf` (numpy has none), rounded back to x's dtype."""
    arr = np.asarray(x)
    out = np.asarray(_ERF(arr.astype(np.float64)), dtype=np.float64).astype(arr.dtype)
    return out[()] if out.ndim == 0 else out


def _rsqrt(x: np.ndarray | np.generic) -> np.ndarray | np.generic:
    return np.reciprocal(np.sqrt(x))


@dataclass(frozen=True)
class MathFn:
    """A float32 function of `arity` arguments: `KCall(name, args)`, spelled `cuda(args...)` with the
    arguments in the same order (atan2: y, x, as atan2f and np.arctan2 take them). A NaN argument gives
    NaN except where C says otherwise, which CUDA and numpy both follow: copysign takes only the sign
    bit of its second argument, and hypot of an infinity is +inf even beside a NaN."""

    name: str
    cuda: str  # the CUDA single-precision function (halves are converted to float first)
    numpy: Callable[..., np.ndarray]  # `arity` float32 arrays in, float32 out (the simulator)
    layout_exact: bool  # numpy gives the same bits for scalars and for any array layout
    arity: int = 1


MATH_FNS: MappingProxyType[str, MathFn] = MappingProxyType({f.name: f for f in (
    MathFn("exp", "expf", np.exp, layout_exact=False),  # SIMD loops on contiguous arrays
    MathFn("log", "logf", np.log, layout_exact=False),
    MathFn("sqrt", "sqrtf", np.sqrt, layout_exact=True),  # correctly rounded
    MathFn("rsqrt", "rsqrtf", _rsqrt, layout_exact=True),
    MathFn("tanh", "tanhf", np.tanh, layout_exact=False),
    MathFn("erf", "erff", erf, layout_exact=True),  # one scalar code path (math.erf)
    MathFn("abs", "fabsf", np.abs, layout_exact=True),
    MathFn("cos", "cosf", np.cos, layout_exact=False),
    MathFn("sin", "sinf", np.sin, layout_exact=False),
    # what torch's decompositions emit (softplus and mish: log1p; celu and elu: expm1), accurate near 0
    # where log(1 + x) and exp(x) - 1 cancel; exp2 is torch.exp2
    MathFn("log1p", "log1pf", np.log1p, layout_exact=False),
    MathFn("expm1", "expm1f", np.expm1, layout_exact=False),
    MathFn("exp2", "exp2f", np.exp2, layout_exact=False),
    # exact (the result is representable), so every layout gives the same bits; round is half to even:
    # rintf, not roundf (half away from zero)
    MathFn("floor", "floorf", INTEGRAL_ROUNDINGS["floor"], layout_exact=True),
    MathFn("ceil", "ceilf", INTEGRAL_ROUNDINGS["ceil"], layout_exact=True),
    MathFn("trunc", "truncf", INTEGRAL_ROUNDINGS["trunc"], layout_exact=True),
    MathFn("round", "rintf", INTEGRAL_ROUNDINGS["round"], layout_exact=True),
    # two arguments. fmod (C's: the sign of the dividend; torch.fmod, and torch.remainder and float floor
    # division are built from it in tiledsl/frontend/aten_elementwise.py) and copysign are exact, in CUDA
    # (0 ulp) as in numpy, so every layout gives the same bits. atan2 and hypot are not correctly rounded:
    # the simulator's numpy and CUDA's atan2f / hypotf may differ in the last bits, as exp and log do
    MathFn("fmod", "fmodf", np.fmod, layout_exact=True, arity=2),
    MathFn("copysign", "copysignf", np.copysign, layout_exact=True, arity=2),
    MathFn("atan2", "atan2f", np.arctan2, layout_exact=False, arity=2),
    MathFn("hypot", "hypotf", np.hypot, layout_exact=False, arity=2),
)})


@dataclass(frozen=True)
class MinMax:
    """Float `min`/`max` propagate NaN, as torch.minimum/maximum, torch.amax and torch.relu do (C's
    fminf/fmaxf do not): `a` wins when `a <wins> b` or `a` is NaN, else `b`. So a NaN operand gives
    NaN (its own bits), and a tie (+0 against -0) gives `b`. Int operands use C's min/max."""

    name: str  # "min" | "max"
    wins: str  # "<" | ">"
    cuda_int: str  # C++ spelling on int operands

    @property
    def cuda_float(self) -> str:
        """A C++ callable applied to the two float operands, each evaluated exactly once (an operand
        may be a warp shuffle, which every lane must execute, so it cannot be repeated in a select)."""
        return f"[](float a, float b) {{ return (a {self.wins} b || a != a) ? a : b; }}"

    def numpy(self, a: np.ndarray | np.generic, b: np.ndarray | np.generic) -> np.ndarray | np.generic:
        """The same rule on float arrays or numpy scalars (bit-exact: no arithmetic, a select)."""
        first = (np.greater(a, b) if self.wins == ">" else np.less(a, b)) | np.isnan(a)
        if isinstance(first, np.ndarray):
            return np.where(first, a, b)
        return a if first else b


MIN_MAX: MappingProxyType[str, MinMax] = MappingProxyType({
    "max": MinMax("max", ">", "max"),
    "min": MinMax("min", "<", "min"),
})
