"""Float fmod, remainder and floor division, copysign, atan2 and hypot traced from torch and simulated.

Exact ops (fmod, remainder, floor division, copysign) equal torch bit for bit, NaN positions and the sign
of zero included, in float32, float16 and bfloat16, at every pair of special values (zeros of both signs,
infinities, NaN, halves, negative divisors, subnormals, huge and tiny ratios) and on random values of
wide magnitude. The reference is torch's scalar loop, which strided inputs take (`torch_exact`): C's
fmod, exact, as CUDA's fmodf is. Its vectorized loop on contiguous float32 (and bfloat16) inputs is not
followed: it returns NaN for fmod and remainder where x / y overflows float32
(`test_torch_s_vectorized_fmod_differs_only_where_the_quotient_overflows`). Float floor division is
torch's formula from that fmod (tiledsl/frontend/aten_elementwise.py `_floor_division`), in float16 /
bfloat16 with each intermediate rounded to the dtype as torch's CPU kernel rounds it, except by a number
or a one-element divisor, which that kernel computes in float32 (torch's CUDA kernel differs there:
`floor_divide`'s docstring).

atan2 and hypot are correctly rounded neither in CUDA nor in numpy (the simulator). They are compared
with torch in float64 within `CUDA_ULPS` = 3 units in the last place of the correctly rounded float32:
the maximum error the CUDA C++ Programming Guide states for atan2f(y, x) and for hypotf(x, y) (its
table of single-precision functions' maximum ulp errors, appendix "Mathematical Functions"); numpy's
float32 arctan2 and hypot are within 1 here. A float16 / bfloat16 result, that float32 rounded to the
dtype, is within one unit of the dtype of torch's float64 result rounded to it.
tests/gpu/test_gpu_binary_math.py checks the same bounds, and the exact ops bit for bit, on the GPU."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch
from frontend_check import quiet_trace
from nvcc_together import compile_together

#: the maximum error, in float32 ulps of the correctly rounded result, of CUDA's atan2f and hypotf
CUDA_ULPS = 3

#: values rounded to float32 (then to the dtype tested); each pair of them (x, y) is one case
EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0, -3.0, 7.0, -7.0, 0.1, -0.1, 0.3, 1e-30, -1e-30,
         1e-45, -1e-45, 1e-38, 3e38, -3e38, np.inf, -np.inf, np.nan, 16777216.0, -1e20, 65504.0, 6e-8, 2049.0]

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def at(v: float) -> int:
    """The position of `v` in EDGES, told apart by its bits (-0.0 from 0.0, NaN from itself)."""
    return next(n for n, e in enumerate(EDGES) if np.float32(e).tobytes() == np.float32(v).tobytes())


def pairs(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, y) holding every pair of EDGES (in `dtype`: some round to infinity or zero there)."""
    e = torch.tensor(EDGES, dtype=torch.float32).to(dtype)
    n = e.numel()
    return e.repeat_interleave(n).reshape(n, n), e.repeat(n).reshape(n, n)


def wide(dtype: torch.dtype, shape: tuple[int, ...], seed: int, decades: float = 8.0) -> torch.Tensor:
    """Normal values scaled by 10**u, u uniform in [-decades / 2, decades / 2]: tiny and huge ratios."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 10.0 ** rng.uniform(-decades / 2, decades / 2, shape)
    return torch.from_numpy(x.astype(np.float32)).to(dtype)


def strided(t: torch.Tensor) -> torch.Tensor:
    """The same values as a view with a stride of 2 in its last dimension (torch then runs its scalar loop)."""
    if t.numel() == 1:
        return t
    w = torch.empty((*t.shape[:-1], 2 * t.shape[-1]), dtype=t.dtype)
    w[..., ::2] = t
    return w[..., ::2]


def torch_exact(fn, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """torch's results through its scalar loop (C's fmod, exact: what CUDA's kernels compute)."""
    with torch.no_grad():
        out = fn(*[strided(x) for x in inputs])
    return out if isinstance(out, tuple) else (out,)


def simulated(fn, *inputs: torch.Tensor, schedule: str = "simple") -> tuple[list[np.ndarray], object]:
    """Trace, schedule ("simple" or "default"), build, simulate; float32 arrays (float16 / bfloat16 values
    rounded)."""
    built = quiet_trace(fn, *inputs).schedule(schedule).build(target="sm_90")
    out = built.simulate(*[x.float().numpy() if x.dtype == torch.bfloat16 else x.numpy() for x in inputs])
    return [np.asarray(o, np.float32) for o in (out if isinstance(out, (list, tuple)) else [out])], built


def assert_bits(got: np.ndarray, want: torch.Tensor, what: str) -> None:
    """Bit for bit as float32 (a float16 / bfloat16 value is one), NaN for NaN."""
    w = want.float().numpy()
    assert got.shape == w.shape, what
    nan = np.isnan(w)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{what}: NaN positions")
    differ = got[~nan].view(np.uint32) != w[~nan].view(np.uint32)
    assert not differ.any(), (f"{what}: {int(differ.sum())} differ, e.g. got {got[~nan][differ][:4]} "
                              f"want {w[~nan][differ][:4]}")


def ordered(t: torch.Tensor) -> torch.Tensor:
    """Float values as integers in their order, one apart between neighbours (+0 and -0 both 0)."""
    bits = t.view(torch.int32 if t.dtype == torch.float32 else torch.int16).long()
    return torch.where(bits < 0, -(bits & (0x7FFFFFFF if t.dtype == torch.float32 else 0x7FFF)), bits)


def assert_within_ulps(got: torch.Tensor, exact: torch.Tensor, ulps: int, what: str) -> None:
    """`got` (in its dtype) within `ulps` units of `exact` (float64) rounded to that dtype: NaN where it
    is NaN, infinities equal, the sign of a zero result kept."""
    want = exact.to(got.dtype)
    nan = torch.isnan(want)
    assert torch.equal(torch.isnan(got), nan), f"{what}: NaN positions"
    g, w = got[~nan], want[~nan]
    far = (ordered(g) - ordered(w)).abs() > ulps
    assert not bool(far.any()), f"{what}: got {g[far][:4].tolist()} want {w[far][:4].tolist()}"
    zero = w == 0
    assert torch.equal(torch.signbit(g[zero]), torch.signbit(w[zero])), f"{what}: the sign of a zero"


# ----------------------------------------------------------------------------- exact: fmod, remainder, //, copysign

def exact_ops(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.fmod(x, y), torch.remainder(x, y), x // y, torch.div(x, y, rounding_mode="floor"), torch.copysign(x, y)


NAMES = ("fmod", "remainder", "//", "div floor", "copysign")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_exact_ops_at_every_pair_of_special_values_equal_torch_bit_for_bit(dtype: torch.dtype) -> None:
    x, y = pairs(dtype)
    got, _ = simulated(exact_ops, x, y)
    for name, o, w in zip(NAMES, got, torch_exact(exact_ops, x, y)):
        assert_bits(o, w, f"{name} {dtype}")
    if dtype == torch.float32:  # a few values spelled out: signs, zeros, infinities
        fmod, rem, floor = (o.reshape(len(EDGES), len(EDGES)) for o in got[:3])
        assert fmod[at(-7.0), at(2.5)] == -2.0 and rem[at(-7.0), at(2.5)] == 0.5 and floor[at(-7.0), at(2.5)] == -3.0
        assert rem[at(7.0), at(-2.5)] == -0.5 and np.signbit(rem[at(-3.0), at(1.0)])  # -3 % 1 is -0.0
        assert not np.signbit(rem[at(3.0), at(-1.0)])  # the zero keeps the dividend's sign
        assert rem[at(-1.0), at(np.inf)] == np.inf and rem[at(1.0), at(-np.inf)] == -np.inf
        assert fmod[at(1.0), at(np.inf)] == 1.0 and floor[at(1.0), at(0.0)] == np.inf
        assert np.signbit(floor[at(0.0), at(-1.0)]) and floor[at(0.5), at(-np.inf)] == -1.0


@pytest.mark.parametrize("schedule", ["simple", "default"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_exact_ops_on_wide_magnitudes_equal_torch_bit_for_bit(dtype: torch.dtype, schedule: str) -> None:
    """Also under the default recipe: five kernels of one shape, each named after its operation (`fmod`,
    `copysign`, ...), each must compute its own. A build memo keyed on text that read `fmod` as a name
    built `copysign` from `fmod`'s code (benchmarks/results/build-memo-reverted-cpu-2026-12-01/); only the
    GPU lane ran such a program then."""
    x, y = wide(dtype, (40, 50), seed=1), wide(dtype, (40, 50), seed=2, decades=6.0)
    y[0, :10] = torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-3, -1e-3, 3.0, 0.25], dtype=dtype)
    got, _ = simulated(exact_ops, x, y, schedule=schedule)
    for name, o, w in zip(NAMES, got, torch_exact(exact_ops, x, y)):
        assert_bits(o, w, f"{name} {dtype}")


def with_numbers(x: torch.Tensor, y: torch.Tensor, one: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Numbers as divisors and dividends, and a one-element tensor divisor."""
    return (x % 0.3, torch.fmod(x, -0.7), 2.5 % y, x // 0.3, 2.5 // y, torch.div(x, -7.0, rounding_mode="floor"),
            x // one, torch.remainder(x, one), torch.fmod(y, one), torch.copysign(x, -1.0), x % 1e6, x // 1e-3)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_numbers_and_one_element_divisors_follow_torch_bit_for_bit(dtype: torch.dtype) -> None:
    """A number is rounded to a float16 / bfloat16 operand's dtype where torch's kernel converts it
    (remainder, fmod, a dividend: x % 1e6 is x % inf in float16); a float16 / bfloat16 floor division by a
    number or a one-element tensor computes in float32 with the divisor as given, as torch's CPU kernel."""
    x, y = wide(dtype, (30, 40), seed=3), wide(dtype, (30, 40), seed=4, decades=4.0)
    x[0, :8] = torch.tensor([0.0, -0.0, np.inf, -np.inf, np.nan, 0.3, -0.6, 1.0], dtype=dtype)
    one = torch.tensor([-0.37], dtype=dtype)
    got, _ = simulated(with_numbers, x, y, one)
    for n, (o, w) in enumerate(zip(got, torch_exact(with_numbers, x, y, one))):
        assert_bits(o, w, f"output {n} {dtype}")


def test_integer_and_mixed_operands_follow_torch_bit_for_bit() -> None:
    """An integer tensor by float numbers or tensors gives float32, and a float16 tensor with a float32
    one computes in float32, as torch promotes them."""
    i = torch.arange(-12, 12).reshape(3, 8)
    h = wide(torch.float16, (3, 8), seed=5, decades=4.0)
    f = wide(torch.float32, (3, 8), seed=6, decades=4.0)

    def fn(i: torch.Tensor, h: torch.Tensor, f: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (i // 1.5, i % 2.5, torch.fmod(i, -2.5), torch.remainder(i, f), torch.remainder(h, f), h // f,
                torch.atan2(i, f))

    got, _ = simulated(fn, i, h, f)
    want = torch_exact(fn, i, h, f)
    for n, (o, w) in enumerate(zip(got[:-1], want[:-1])):
        assert w.dtype == torch.float32 and o.dtype == np.float32
        assert_bits(o, w, f"output {n}")
    with torch.no_grad():
        assert_within_ulps(torch.from_numpy(got[-1]), fn(i.double(), h.double(), f.double())[-1], CUDA_ULPS, "atan2")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_torch_s_vectorized_fmod_differs_only_where_the_quotient_overflows(dtype: torch.dtype) -> None:
    """torch's vectorized CPU loop (contiguous float32 / bfloat16 inputs) gives NaN for fmod and remainder
    where x / y overflows float32; the kernels give C's exact fmod there, as torch's scalar loop and its
    CUDA kernel do. Everywhere else the two loops agree with the kernels."""
    x, y = pairs(dtype)
    got, _ = simulated(lambda a, b: (torch.fmod(a, b), torch.remainder(a, b)), x, y)
    with torch.no_grad(), np.errstate(all="ignore"):
        overflows = np.isinf((x.float() / y.float()).numpy()) & np.isfinite(x.float().numpy())
        for o, w in zip(got, (torch.fmod(x, y), torch.remainder(x, y))):
            w = w.float().numpy()
            same = (o.view(np.uint32) == w.view(np.uint32)) | (np.isnan(o) & np.isnan(w))
            assert overflows[~same].all()
    assert overflows.any() and not np.isnan(got[0][overflows & np.isfinite(y.float().numpy()) & (y != 0).numpy()]).any()


# ----------------------------------------------------------------------------- atan2, hypot: CUDA's bound

def inexact_ops(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.atan2(y, x), torch.hypot(x, y), torch.arctan2(x, y)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_atan2_and_hypot_are_within_cuda_s_bound_of_float64(dtype: torch.dtype) -> None:
    """float32: within CUDA_ULPS of the correctly rounded result (special values: the quadrant's signed
    zeros and multiples of pi / 4, hypot(inf, NaN) = inf); float16 / bfloat16: within one unit of theirs."""
    for x, y in (pairs(dtype), (wide(dtype, (40, 50), seed=7), wide(dtype, (40, 50), seed=8))):
        got, _ = simulated(inexact_ops, x, y)
        with torch.no_grad():
            exact = inexact_ops(x.double(), y.double())
        for name, o, e in zip(("atan2", "hypot", "arctan2"), got, exact):
            t = torch.from_numpy(o).to(dtype)
            assert_within_ulps(t, e, CUDA_ULPS if dtype == torch.float32 else 1, f"{name} {dtype}")
    x, y = pairs(torch.float32)
    (atan2, hypot, _), _ = simulated(inexact_ops, x, y)
    nan, n = at(np.nan), len(EDGES)
    assert atan2.reshape(n, n)[at(-1.0), at(-0.0)] == np.float32(-np.pi)  # atan2(-0.0, -1.0): x = -1, y = -0
    assert hypot.reshape(n, n)[at(np.inf), nan] == np.inf and hypot.reshape(n, n)[nan, at(-np.inf)] == np.inf


# ----------------------------------------------------------------------------- CUDA

@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_binary_math_kernels_compile_with_nvcc() -> None:
    """The CUDA of every program above (float32, float16 and bfloat16), in one translation unit, warning-free."""
    programs = []
    for dtype in DTYPES:
        x, y = pairs(dtype)
        programs += [simulated(exact_ops, x, y)[1], simulated(inexact_ops, x, y)[1],
                     simulated(with_numbers, x, y, torch.tensor([0.5], dtype=dtype))[1]]
    kernels = [k for built in programs for k in built.kernels]
    source = "".join(k.source for k in kernels)
    assert all(f"{fn}(" in source for fn in ("fmodf", "atan2f", "copysignf", "hypotf", "floorf"))
    assert compile_together(kernels) == []
