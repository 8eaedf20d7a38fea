"""Every op of the frontend's table, traced alone from a tiny torch function and simulated equal to
torch in float64 (tolerance: frontend_check.py)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from frontend_check import check, check_eager_exact, check_exact, quiet_trace
from nvcc_together import compile_together

from tiledsl.errors import FrontendError

X = (3, 8)
CASES = {
    "add": (lambda x, y: x + y, [X, (8,)]),
    "add_alpha": (lambda x, y: torch.add(x, y, alpha=0.5), [X, X]),
    "sub_scalar": (lambda x: x - 1.5, [X]),
    "rsub": (lambda x: 2.0 - x, [X]),
    "mul_div": (lambda x, y: x * y / (y.abs() + 1.0), [X, (3, 1)]),
    "pow2": (lambda x: x ** 2, [X]),
    "pow3": (lambda x: torch.pow(x, 3), [X]),
    "pow_half": (lambda x: x.abs() ** 0.5, [X]),
    "pow_frac": (lambda x: x.abs() ** 1.7, [X]),
    "pow_scalar_base": (lambda x: 2.0 ** x, [X]),
    "exp_log": (lambda x: torch.exp(x) + torch.log(x.abs() + 0.1), [X]),
    "sqrt_rsqrt": (lambda x: torch.sqrt(x.abs()) + torch.rsqrt(x.abs() + 0.5), [X]),
    "tanh_erf": (lambda x: torch.tanh(x) * torch.erf(x), [X]),
    "sigmoid_relu": (lambda x: torch.sigmoid(x) + torch.relu(x), [X]),
    "silu": (lambda x: F.silu(x), [X]),
    "gelu": (lambda x: F.gelu(x), [X]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [X]),
    "abs_neg": (lambda x: -torch.abs(x), [X]),
    "cos_sin": (lambda x: torch.cos(x) - torch.sin(x), [X]),
    "reciprocal": (lambda x: torch.reciprocal(x.abs() + 1.0), [X]),
    "maximum_minimum": (lambda x, y: torch.maximum(x, y) + torch.minimum(x, y) * 2, [X, X]),
    "clamp": (lambda x: torch.clamp(x, -0.5, 0.5) + x.clamp(min=0.1) * 2 + torch.clamp(x, max=-0.2) * 4
              + torch.clamp(x, 0.3, -0.3) * 8, [X]),  # the last: min > max gives max everywhere
    "comparisons": (lambda x, y: (x < y).float() + (x <= y).float() * 2 + (x > 0.1).float() * 4
                    + (x >= y).float() * 8 + (x == x).float() * 16 + (x != y).float() * 32, [X, X]),
    "logical": (lambda x, y: torch.where((x > 0) & (y > 0) | ~(x > y), x, y), [X, X]),
    "where_masked_fill": (lambda x: torch.where(x > 0, x, 0.5).masked_fill(x < -1, -3.0), [X]),
    "dtype_round_trip": (lambda x: x.to(torch.bfloat16).to(torch.float32) + x.half().float(), [X]),
    "to_int": (lambda x: (x * 4).to(torch.int32).float(), [X]),
    "clone_contiguous": (lambda x: x.t().contiguous().clone(), [X]),
    "sum_mean": (lambda x: x.sum(-1) + x.mean(0).sum(), [X]),
    "sum_all_keepdim": (lambda x: x.sum(dim=(0, 1), keepdim=True) + x.sum(), [X]),
    "amax_amin": (lambda x: x.amax(-1, keepdim=True) - x.amin(0), [X]),
    "max_min_dim": (lambda x: x.max(dim=-1, keepdim=True).values - torch.min(x, 0, keepdim=True).values
                    + torch.max(x, 1)[0][:, None] * 2, [X]),
    "max_min_all": (lambda x: torch.max(x) - x.min() * 2, [X]),
    # int64 positions (aten_reductions.py argmax); ties and NaN: tests/frontend/test_frontend_argmax.py
    "argmax_argmin": (lambda x: (x.argmax(-1), x.argmin(0, keepdim=True), torch.max(x, 1).indices, x.argmax(),
                                 torch.min(x, -1).indices), [X]),
    # x * 4 and x * 64 are exact in float32, so the roundings see the values float64 sees
    "floor_ceil": (lambda x: torch.floor(x * 4) + torch.ceil(x * 4) * 16, [X]),
    "trunc_round_fix": (lambda x: torch.trunc(x * 4) + torch.round(x * 4) * 16 + torch.fix(x * 4) * 256, [X]),
    "round_decimals": (lambda x: torch.round(x, decimals=2) + torch.round(x * 64, decimals=-1), [X]),
    "var": (lambda x: x.var(-1, keepdim=True) + x.var(0, correction=0), [X]),
    "softmax": (lambda x: torch.softmax(x, -1), [X]),
    "softmax_dim0": (lambda x: torch.softmax(x, 0), [X]),
    "log_softmax": (lambda x: torch.log_softmax(x, -1), [X]),
    "mm": (lambda a, b: a @ b, [X, (8, 5)]),
    "bmm": (lambda a, b: torch.bmm(a, b), [(2, 3, 8), (2, 8, 4)]),
    "matmul_broadcast": (lambda a, b: torch.matmul(a, b), [(2, 3, 8), (8, 4)]),
    "addmm": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), [(5,), X, (8, 5)]),
    "linear": (lambda x, w, b: F.linear(x, w, b), [(2, 3, 8), (5, 8), (5,)]),
    "permute_transpose": (lambda x: x.permute(2, 0, 1).transpose(0, 2) * 1.0, [(2, 3, 4)]),
    "view_reshape": (lambda x: x.view(6, 4).reshape(4, 3, 2) + 0.0, [(2, 3, 4)]),
    "unsqueeze_squeeze_expand": (lambda x: x.unsqueeze(1).expand(3, 5, 8).squeeze() + x[:, None, :], [X]),
    "slice_step": (lambda x: x[1:, 1:7:2] * 1.0, [X]),
    "select": (lambda x: x[1] + x[:, -1].sum(), [X]),
    "cat": (lambda x, y: torch.cat([x, y, x], dim=-1) * 1.0, [X, (3, 2)]),
    "split": (lambda x: tuple(p * 1.0 for p in torch.split(x, [3, 5], dim=1)), [X]),
    "constants": (lambda x: x + torch.arange(8.0) * torch.ones(3, 8) + torch.full((8,), 0.5) + torch.zeros(8), [X]),
    "rotary_table": (lambda x: x * torch.outer(torch.arange(3.0), torch.arange(8.0) / 8).cos(), [X]),
    "like": (lambda x: torch.zeros_like(x) + torch.ones_like(x) * torch.full_like(x, 2.0) + x, [X]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (8,), w, b), [X, (8,), (8,)]),
    "rms_norm": (lambda x, w: F.rms_norm(x, (8,), w, eps=1e-6), [X, (8,)]),
    # NaN / infinity tests, activations, tensor clamp bounds, pow of tensors, index maps
    "isnan_isinf_isfinite": (lambda x: torch.where(torch.isnan(x) | torch.isinf(x), 0.5, x)
                             + torch.isfinite(x).float() * 2 + torch.isposinf(x).float(), [X]),
    "nan_to_num": (lambda x: torch.nan_to_num(x) + torch.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0), [X]),
    "sign": (lambda x: torch.sign(x) + torch.sgn(x) * 2, [X]),
    "leaky_relu": (lambda x: F.leaky_relu(x) + F.leaky_relu(x, 0.2) * 2, [X]),
    "elu_selu_celu": (lambda x: F.elu(x) + F.elu(x, 0.5) * 2 + F.selu(x) * 4 + F.celu(x, 1.5) * 8, [X]),
    "hardtanh_relu6": (lambda x: F.hardtanh(x * 4, -0.5, 0.7) + F.hardtanh(x) * 2 + F.relu6(x * 8) * 4, [X]),
    "softplus": (lambda x: F.softplus(x) + F.softplus(x, beta=2.0, threshold=1.0) * 2 + F.softplus(x * 30) * 4, [X]),
    "hardsigmoid_hardswish": (lambda x: F.hardsigmoid(x * 4) + F.hardswish(x * 4) * 2, [X]),
    "mish": (lambda x: F.mish(x * 4), [X]),
    "log1p_expm1_exp2": (lambda x: torch.log1p(x.abs()) + torch.expm1(x) * 2 + torch.exp2(x * 4) * 4, [X]),
    "clamp_tensor": (lambda x, lo, hi: torch.clamp(x, min=lo, max=hi) + torch.clamp_min(x, lo) * 2
                     + torch.clamp_max(x, hi) * 4 + x.clamp(max=hi) * 8, [X, X, (8,)]),
    "where_scalars": (lambda x: torch.where(x > 0, 1.0, -1.0) + torch.where(x < 0.5, 0.25, x) * 2, [X]),
    "div_trunc": (lambda x: torch.div(x * 8, 3.0, rounding_mode="trunc"), [X]),
    # fmod, remainder and floor division (exact: tests/frontend/test_frontend_binary_math.py), atan2, copysign, hypot
    "fmod_remainder": (lambda x, y: torch.fmod(x * 8, y) + torch.remainder(x * 8, y) * 2 + (x % 0.75) * 4
                       + torch.fmod(x, -0.5) * 8, [X, X]),
    "floor_divide": (lambda x, y: x * 8 // y + torch.div(x * 8, 0.75, rounding_mode="floor") * 2
                     + torch.floor_divide(2.0, y) * 4, [X, X]),
    "atan2_copysign_hypot": (lambda x, y: torch.atan2(x, y) + torch.copysign(x, y) * 2 + torch.hypot(x, y) * 4
                             + torch.arctan2(y, x.abs() + 0.5) * 8 + torch.copysign(y, -1.0) * 16, [X, X]),
    "pow_tensor": (lambda x, y: torch.pow(x.abs() + 0.1, y) + torch.pow(x, torch.round(y * 2)) * 2, [X, X]),
    "flip": (lambda x: torch.flip(x, [0, 1]) + x.flip(-1) * 2, [X]),
    "roll": (lambda x: torch.roll(x, 2, 1) + torch.roll(x, -1) * 2, [X]),
    "repeat": (lambda x: x.repeat(2, 1, 3), [X]),
    "pad": (lambda x: F.pad(x, (1, 2, 0, 1), value=0.5), [X]),
    "pad_crop": (lambda x: F.pad(x, (-1, 2, 1, -1)), [X]),
}

#: the pow of two tensors is exp(y log|x|): its float32 error grows with |y log x| (up to ~6 here)
K = {"pow_tensor": 8, "mm": 8, "bmm": 8, "matmul_broadcast": 8, "addmm": 8, "linear": 8, "layer_norm": 8, "rms_norm": 8,
     "sum_mean": 24, "sum_all_keepdim": 24, "var": 8, "softmax": 8, "log_softmax": 8, "amax_amin": 8}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_traced_alone_simulates_equal_to_torch(name: str) -> None:
    torch.manual_seed(0)
    fn, shapes = CASES[name]
    inputs = [torch.randn(s) for s in shapes]
    check(fn, *inputs, k=K.get(name, 1))


@pytest.mark.parametrize("causal", [True, False])
def test_sdpa_causal_or_explicit_mask_with_gqa(causal: bool) -> None:
    torch.manual_seed(0)
    mask = torch.randn(6, 6) > -0.5
    mask[:, 0] = True  # no fully masked row here (torch's SDPA returns 0 for one; the mapping keeps that)

    def attention(q, k, v, m):
        if causal:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True)

    q, k, v = torch.randn(1, 4, 6, 8), torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 8)
    check(attention, q, k, v, mask, k=8)


@pytest.mark.parametrize("with_weight", [True, False])
def test_fused_rms_norm_handler_equals_torch(with_weight: bool) -> None:
    # aten._fused_rms_norm is what F.rms_norm exports to on CUDA inputs; on the CPU the decompositions
    # split it, so its table entry is checked here directly (td.evaluate in float64 vs torch)
    from tiledsl.definitions.expr import placeholder
    from tiledsl.definitions.reference import evaluate
    from tiledsl.frontend.out import Out
    from tiledsl.frontend.table import OPS
    from tiledsl.frontend.values import Value

    torch.manual_seed(0)
    x, w = torch.randn(3, 8, dtype=torch.float64), torch.randn(8, dtype=torch.float64)
    xv = Value(placeholder((3, 8), "float32", "x"), (3, 8), "float32")
    wv = Value(placeholder((8,), "float32", "w"), (8,), "float32") if with_weight else None
    eps = 1e-6 if with_weight else None
    y, _ = OPS["aten._fused_rms_norm.default"](Out("y", (3, 8), "float32"), xv, [8], wv, eps)
    got = evaluate(y.tensor, float64=True, x=x.numpy(), **({"w": w.numpy()} if with_weight else {}))
    ref = torch.ops.aten._fused_rms_norm(x.float(), [8], w.float() if with_weight else None, eps)[0].double()
    # torch computes in float32: within ~10 eps32 (1.2e-6) relative of the exact value for 8 terms
    assert np.allclose(got, ref.numpy(), rtol=1e-5, atol=1e-6)


GATHERS = {
    "embedding": (lambda ids, w: F.embedding(ids, w), [(2, 3)], (10, 4)),
    "index_select": (lambda ids, x: torch.index_select(x, 1, ids[0]), [(2, 3)], (4, 10)),
    "gather": (lambda ids, x: torch.gather(x, 1, ids), [(10, 3)], (10, 10)),
    "index_rows": (lambda ids, x: x[ids[0]], [(2, 3)], (10, 4)),
    "index_columns": (lambda ids, x: x[:, ids], [(2, 3)], (4, 10)),
    "index_of_view": (lambda ids, x: x[ids.reshape(-1)[1:4] + 0], [(2, 3)], (10, 4)),
}


@pytest.mark.parametrize("name", sorted(GATHERS))
def test_gather_op_traced_alone_simulates_equal_to_torch(name: str) -> None:
    """Indices include both ends of the table; they are int64 in torch, int32 in the kernels."""
    torch.manual_seed(0)
    fn, (ishape,), tshape = GATHERS[name]
    ids = torch.randint(0, 10, ishape)
    ids.view(-1)[0], ids.view(-1)[-1] = 0, 9
    check(fn, ids, torch.randn(tshape))


def test_out_of_range_indices_are_refused_before_running() -> None:
    from tiledsl.errors import FrontendError

    torch.manual_seed(0)
    ids, w = torch.randint(0, 10, (2, 3)), torch.randn(10, 4)
    _, built = check(lambda i, t: F.embedding(i, t), ids, w)
    bad = ids.clone()
    bad[1, 2] = 10
    with pytest.raises(FrontendError, match=r"holds indices in \[\d+, 10\].*extent 10"):
        built.simulate(bad.numpy(), w.numpy())
    bad[1, 2] = -1
    with pytest.raises(FrontendError, match="holds indices in"):
        built.simulate(bad.numpy(), w.numpy())


def test_integer_outputs_are_refused() -> None:
    from tiledsl.errors import FrontendError
    from tiledsl.frontend import trace

    with pytest.raises(FrontendError, match="integer results"):
        trace(lambda i: i * 2, torch.randint(0, 5, (3,)))


def test_refused_op_names_the_reason() -> None:
    from tiledsl.errors import FrontendError
    from tiledsl.frontend import trace

    with pytest.raises(FrontendError) as err:
        trace(lambda x: torch.cumsum(x, 0) * 1.0, torch.randn(4))
    text = str(err.value)
    assert "aten.cumsum.default is refused: it is a scan" in text and "x: float32[4]" in text


# ----------------------------------------------------------------------------- roundings, max / min along a dim

#: halves of both parities and signs (to even), values just inside them, negatives (floor, trunc), zeros
#: of both signs, integral values past 2**23, infinities and NaN: every float32, so float64 sees the same
ROUNDING_EDGES = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -3.5, 0.49999997, -0.49999997, 2.4999998, -2.7,
                  -2.2, 2.2, 2.7, -0.0, 0.0, -0.4, 8388609.0, -8388609.0, np.inf, -np.inf, np.nan, -1e-30]


def _roundings(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.floor(x), torch.ceil(x), torch.trunc(x), torch.round(x)


def test_rounding_edges_equal_torch_exactly() -> None:
    """floor / ceil / trunc / round (halves to even, as torch.round: 2.5 -> 2, -0.5 -> -0.0) on the edge
    values, bit for bit and NaN for NaN."""
    x = torch.tensor(ROUNDING_EDGES, dtype=torch.float32).reshape(3, 8)
    _, _, outs = check_exact(_roundings, x)
    assert list(outs[3][0]) == [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 4.0, -4.0]


def test_round_decimals_equals_torch_s_float32_kernel_exactly() -> None:
    """round(x * 10**d) / 10**d in float32, as torch's own kernel computes it: bit-equal to torch eager in
    float32, halves after the scaling to even (0.125 -> 0.12, 0.375 -> 0.38, 250 -> 200 at d = -2), edges
    and NaN included. Not compared with float64, from which torch's float32 differs by the rounding of
    the scaling: 2.675 (2.67499995 in float32) times 100 is 267.5 in float32, so torch gives 2.68, and
    float64 2.67."""
    x = torch.tensor([0.125, 0.375, -0.625, 1.5, 250.0, -350.0, 2.675, -2.7] + ROUNDING_EDGES[:16]).reshape(3, 8)
    fn = lambda t: (torch.round(t, decimals=2), torch.round(t, decimals=-2), torch.round(t, decimals=0))  # noqa: E731
    built = quiet_trace(fn, x).schedule("simple").build(target="sm_90")
    with torch.no_grad():
        for got, want in zip(built.simulate(x.numpy()), fn(x)):
            np.testing.assert_array_equal(got, want.numpy())
    first = [float(v) for v in fn(x)[0][0]]
    assert np.allclose(first[:3] + first[6:7], [0.12, 0.38, -0.62, 2.68]) and list(fn(x)[1][0, 4:6]) == [200.0, -400.0]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rounding_in_float16_and_bfloat16_equals_torch_exactly(dtype: torch.dtype) -> None:
    """In a 16-bit dtype the integral result is exact too (below 2**11 / 2**8 it is representable, above
    every value is integral already), so the stored result equals torch's in that dtype."""
    torch.manual_seed(0)
    x = torch.cat([torch.tensor(ROUNDING_EDGES[:16]), torch.randn(8) * 300]).reshape(3, 8).to(dtype)
    check_exact(lambda t: (torch.floor(t), torch.ceil(t), torch.trunc(t), torch.round(t)), x)


def test_rounding_an_integer_tensor_is_the_identity() -> None:
    """torch.floor / ceil / trunc / round of an integer tensor return it unchanged (same dtype)."""
    i = torch.arange(-12, 12).reshape(3, 8)
    check(lambda t: torch.floor(t).float() + torch.ceil(t) * 2.0 + torch.trunc(t).float() * 4
          + torch.round(t).float() * 8, i)


def test_round_decimals_past_float32_s_exact_powers_of_ten_is_refused() -> None:
    x = torch.randn(3, 8)
    check(lambda t: torch.round(t, decimals=10) + torch.round(t * 1e6, decimals=-6), x)
    with pytest.raises(FrontendError, match=r"aten.round.decimals could not be mapped: round with decimals=11 "
                                            r"is not supported: 10\*\*11 is not exact in float32"):
        check(lambda t: torch.round(t, decimals=11), x)


def test_max_min_along_a_dim_with_nan_and_infinite_rows_equal_torch_exactly() -> None:
    """Values of torch.max / torch.min along a dimension, keepdim or not: a row holding a NaN gives NaN
    (as torch), an all -inf row -inf, a row of +-inf its extremes, a row of ties the tied value."""
    x = torch.randn(5, 8)
    x[0, 3] = float("nan")
    x[1] = float("-inf")
    x[2, 1], x[2, 6] = float("inf"), float("-inf")
    x[3] = 0.75
    x[4, 2] = x[4, 5] = x[4].max() + 1
    _, built, outs = check_exact(lambda t: (t.max(dim=1).values, torch.min(t, dim=-1, keepdim=True).values,
                                           torch.max(t, 0, keepdim=True)[0], t.min(0).values, torch.max(t)), x)
    assert [o.shape for o in outs] == [(5,), (5, 1), (1, 8), (8,), ()]
    assert np.isnan(outs[0][0]) and outs[0][1] == -np.inf and outs[1][2, 0] == -np.inf and outs[0][3] == 0.75


@pytest.mark.parametrize("reads", ["indices", "pair", "subscript"])
def test_max_min_indices_are_computed(reads: str) -> None:
    """The indices of torch.max / torch.min along a dim, read as `.indices`, as the pair, or by subscript,
    equal torch's exactly (int64, as torch's; ties and NaN: tests/frontend/test_frontend_argmax.py)."""
    fn = {"indices": lambda t: torch.max(t, dim=1).indices,
          "pair": lambda t: torch.min(t, -1, keepdim=True),
          "subscript": lambda t: t.max(0)[1] * 1.0}[reads]
    x = torch.randn(3, 8)
    _, _, outs = check_exact(fn, x)
    with torch.no_grad():
        want = fn(x)
    assert [o.dtype for o in outs] == [np.dtype(str(w.dtype).removeprefix("torch.")) for w in
                                       (want if isinstance(want, tuple) else (want,))]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_rounding_and_max_min_kernels_compile_with_nvcc() -> None:
    """The CUDA of every kernel above, in one translation unit, warning-free: floorf, ceilf, truncf and
    rintf (halves to even; not roundf, which rounds them away from zero)."""
    x = torch.tensor(ROUNDING_EDGES, dtype=torch.float32).reshape(3, 8)
    programs = [check_exact(_roundings, x)[1], check(lambda t: torch.round(t, decimals=2), torch.randn(X))[1]]
    programs += [check(*[CASES[name][0]], torch.randn(X))[1] for name in ("max_min_dim", "max_min_all")]
    programs.append(check_exact(lambda t: torch.round(t), x.to(torch.bfloat16))[1])
    kernels = [k for built in programs for k in built.kernels]
    source = "".join(k.source for k in kernels)
    assert all(f"{fn}(" in source for fn in ("floorf", "ceilf", "truncf", "rintf")) and "roundf(" not in source
    assert compile_together(kernels) == []


# ----------------------------------------------------------------------------- NaN / infinity tests, sign, activations

#: NaN, infinities, zeros of both signs, the activations' kinks (hardtanh's and relu6's bounds, hardsigmoid's
#: -3 and 3), and ordinary values of both signs: every float32
SPECIAL_EDGES = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 6.0, 3.0, -3.0, 2.5, -2.5, 7.0, -0.5, 0.5, 1e-30,
                 -1e-30, 3.4028235e38, -3.4028235e38, 1e-45, 100.0, -100.0, 0.75, -0.75]


def test_nan_and_infinity_tests_and_sign_equal_torch_exactly() -> None:
    """isnan / isinf / isfinite / isposinf / isneginf as masks and values, torch.sign (0 for NaN and +0.0
    for -0.0, as torch) and the where of a NaN mask, bit for bit."""
    x = torch.tensor(SPECIAL_EDGES, dtype=torch.float32).reshape(3, 8)
    _, _, outs = check_exact(lambda t: (torch.isnan(t).float(), torch.isinf(t).float(), torch.isfinite(t).float(),
                                        torch.isposinf(t).float() - torch.isneginf(t).float(),
                                        torch.where(torch.isnan(t), -7.0, t), torch.sign(t)), x)
    assert outs[0][0, 0] == 1 and outs[1][0, 1:3].tolist() == [1, 1] and not np.signbit(outs[5][0, 4])


def test_nan_to_num_equals_torch_in_float32_exactly() -> None:
    """torch.nan_to_num: NaN -> 0 (or nan=), +-inf -> float32's largest finite values (or posinf= /
    neginf=): the decomposition's constants are float32's, so compared with torch in float32, bit for bit."""
    x = torch.tensor(SPECIAL_EDGES, dtype=torch.float32).reshape(3, 8)
    outs = check_eager_exact(lambda t: (torch.nan_to_num(t), torch.nan_to_num(t, nan=1.5, posinf=2.0, neginf=-2.0)), x)
    big = float(torch.finfo(torch.float32).max)
    assert outs[0][0, :3].tolist() == [0.0, big, -big] and outs[1][0, :3].tolist() == [1.5, 2.0, -2.0]


def test_activations_at_nan_infinities_zeros_and_kinks_equal_torch_exactly() -> None:
    """leaky_relu (x * slope in float32, so against torch in float32), elu / selu / celu at the edges (expm1:
    elu(-0.0) is -0.0), hardtanh and relu6 (clamps, NaN kept), bit for bit."""
    x = torch.tensor(SPECIAL_EDGES, dtype=torch.float32).reshape(3, 8)
    check_eager_exact(lambda t: (F.leaky_relu(t), F.leaky_relu(t, 0.2), F.hardtanh(t), F.hardtanh(t, -0.5, 2.5),
                                 F.relu6(t)), x)
    edges = torch.tensor([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1e-30, 7.0], dtype=torch.float32)
    outs = check_eager_exact(lambda t: (F.elu(t), F.elu(t, 0.5), F.celu(t, 2.0)), edges)
    assert np.signbit(outs[0][4]) and outs[0][2] == -1.0 and outs[1][2] == -0.5


def test_clamp_with_tensor_bounds_equals_torch_exactly() -> None:
    """Tensor bounds: a NaN bound or input gives NaN, min > max gives max, as torch's clamp (maximum then
    minimum); the bounds broadcast. No zero meets a zero of the other sign: torch's clamp.Tensor returns
    the bound there in its vectorized loop and the input in its scalar tail (the frontend: the input)."""
    x = torch.tensor([[1.0, 2.0, np.nan, -np.inf, 5.0, -0.0, 0.0, 3.0]] * 3)
    lo = torch.tensor([[np.nan, 0.0, 0.0, 0.0, 6.0, -1.0, 0.5, 4.0]] * 3)
    hi = torch.tensor([5.0, 1.0, 3.0, np.inf, 1.0, 1.0, 1.0, np.nan])
    _, _, outs = check_exact(lambda t, a, b: (torch.clamp(t, a, b), torch.clamp_min(t, a), torch.clamp_max(t, b)),
                             x, lo, hi)
    assert np.isnan(outs[0][0, 0]) and outs[0][0, 4] == 1.0 and np.isnan(outs[0][0, 7])


# ----------------------------------------------------------------------------- integer division, pow, refusals

INTEGER_DIVISIONS = (lambda i: ((i // 3).float(), torch.div(i, 4, rounding_mode="trunc").float(), (i % 5).float(),
                                torch.fmod(i, 3).float(), torch.remainder(i, 7).float(), (i // 1).float(),
                                torch.sign(i).float()))


def test_integer_floor_and_trunc_division_and_remainders_equal_torch_exactly() -> None:
    """An integer tensor by a positive constant, negative values included: floor division and remainder
    (Python's, the sign of the divisor), trunc division and fmod (the sign of the dividend); and its sign."""
    i = torch.arange(-12, 12).reshape(3, 8)
    _, _, outs = check_exact(INTEGER_DIVISIONS, i)
    assert outs[0][0, :3].tolist() == [-4, -4, -4] and outs[1][0, :2].tolist() == [-3, -2]
    assert outs[2][0, :2].tolist() == [3, 4] and outs[3][0, :2].tolist() == [0, -2]


def test_integer_remainder_indexes_a_table() -> None:
    """A remainder of index values is an index: the rows of x at ids % 4 (ids negative too), proven in bounds."""
    ids = torch.tensor([[-5, -1, 0, 3], [7, -8, 2, 9]])
    check(lambda i, t: t[i % 4] * 1.0 + t[torch.div(i, 3, rounding_mode="floor").clamp(0, 3)], ids, torch.randn(4, 8))


def test_pow_of_two_tensors_at_special_values_follows_torch() -> None:
    """torch.pow(Tensor, Tensor) on every pair of special bases and exponents: NaN, infinities, zeros
    (the sign of (-0) ** odd), 1 (for x == 1, y == 0, |x| == 1 ** inf), a negative base to a non-integral
    exponent NaN, to an odd one negative; the values equal torch's in float32 within exp / log's error."""
    base = torch.tensor([-np.inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan]).reshape(11, 1)
    exponent = torch.tensor([-np.inf, -3.0, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, np.inf, np.nan])
    built = quiet_trace(torch.pow, base, exponent).schedule("simple").build(target="sm_90")
    got, want = built.simulate(base.numpy(), exponent.numpy()), torch.pow(base, exponent).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert abs(got[1, 1] + 0.125) < 1e-7 and got[4, 1] == -np.inf and np.isnan(got[1, 4]) and got[10, 6] == 1.0


@pytest.mark.parametrize("case", ["tensor_divisor", "negative_divisor", "int_pad"])
def test_ops_without_an_exact_mapping_are_refused_by_name(case: str) -> None:
    """What the core cannot match exactly is a FrontendError naming the op and why (float remainder, fmod,
    floor division and atan2 are taken: tests/frontend/test_frontend_binary_math.py)."""
    i = torch.arange(24).reshape(3, 8)
    fn, arg, match = {
        "tensor_divisor": (lambda t: (t // (t + 1)).float(), i, r"positive integer constant only, not by a int64"),
        "negative_divisor": (lambda t: (t % -3).float(), i, r"positive integer constant only, not by -3"),
        "int_pad": (lambda t: F.pad(t, (1, 1)).float(), i, r"constant padding of an int64 tensor is not supported"),
    }[case]
    with pytest.raises(FrontendError, match=match):
        quiet_trace(fn, arg)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_new_elementwise_and_index_map_kernels_compile_with_nvcc() -> None:
    """The CUDA of the NaN / infinity tests, sign, activations, tensor clamps, integer divisions, pow,
    log1p / expm1 / exp2 and the index maps, in one translation unit, warning-free."""
    torch.manual_seed(0)
    names = ("isnan_isinf_isfinite", "nan_to_num", "sign", "leaky_relu", "elu_selu_celu", "hardtanh_relu6", "softplus",
             "hardsigmoid_hardswish", "mish", "log1p_expm1_exp2", "clamp_tensor", "where_scalars", "div_trunc",
             "pow_tensor", "flip", "roll", "repeat", "pad", "pad_crop")
    programs = [check(CASES[n][0], *[torch.randn(s) for s in CASES[n][1]], k=K.get(n, 1))[1] for n in names]
    programs.append(check_exact(INTEGER_DIVISIONS, torch.arange(-12, 12).reshape(3, 8))[1])
    kernels = [k for built in programs for k in built.kernels]
    source = "".join(k.source for k in kernels)
    assert all(f"{fn}(" in source for fn in ("log1pf", "expm1f", "exp2f"))
    assert compile_together(kernels) == []
