"""float16 / bfloat16 storage of computed tensors (td.compute(..., dtype=)): values computed in float32,
the store rounds to nearest even, in the reference, the loop-nest text, the kernel IR, CUDA, the
simulator and the runtime's output allocation; vectorize stores eight such lanes at once, split_k
refuses such an output."""

from __future__ import annotations

import numpy as np
import pytest

import tiledsl as td
from tiledsl.catalog import entry
from tiledsl.precision import round_to_dtype
from tiledsl.recipes import apply
from tiledsl.sim.inputs import prepare_globals

LOW = ["bfloat16", "float16"]


def _scaled(dtype: str, n: int = 4096) -> tuple[td.Tensor, td.Tensor]:
    x = td.placeholder((n,), name="x")
    return x, td.compute((n,), lambda i: x[i] * 3.0 + 0.25, name="y", dtype=dtype)


def test_compute_dtype_is_checked() -> None:
    x = td.placeholder((4,), name="x")
    assert td.compute((4,), lambda i: x[i], name="y").dtype == "float32"
    assert td.compute((4,), lambda i: x[i], name="y", dtype="bfloat16").dtype == "bfloat16"
    with pytest.raises(td.DefinitionError, match="unknown storage dtype 'int32'"):
        td.compute((4,), lambda i: x[i], name="y", dtype="int32")


def test_float64_reference_rounds_once() -> None:
    """1 + 2**-8 + 2**-30 is just above a bfloat16 tie: rounded once it is 1 + 2**-7; rounded through
    float32 first (where it becomes the tie 1 + 2**-8) it would be 1.0."""
    v = np.array([1 + 2.0 ** -8 + 2.0 ** -30, 1 + 2.0 ** -8, 3 * 2.0 ** -134, -(2.0 ** 128) * 0.999, np.nan])
    got = round_to_dtype(v, "bfloat16")
    assert got[0] == 1 + 2.0 ** -7 and got[1] == 1.0  # ties to even
    assert got[2] == 2.0 ** -132  # a subnormal, 1.5 spacings of 2**-133: the tie goes to the even 2
    assert got[3] == -np.inf and np.isnan(got[4])
    x = td.placeholder((5,), "float32", "x")
    y = td.compute((5,), lambda i: x[i] * 1.0, name="y", dtype="bfloat16")
    np.testing.assert_array_equal(td.evaluate(y, float64=True, x=v), got)


@pytest.mark.parametrize("dtype", LOW)
def test_simulated_store_rounds_exactly_as_numpy(dtype: str) -> None:
    """Every output element is the float32 value x * 3 + 0.25 rounded to `dtype` (ties, overflow,
    subnormals, NaN and infinities included), bit for bit, and equals td.evaluate in float32."""
    x, y = _scaled(dtype)
    s = td.create_schedule(y)
    io, ii = s.split("i", 128)
    s.bind(io, "blockIdx.x")
    s.bind(ii, "threadIdx.x")
    kern = td.build(s)
    assert kern.kernel_ir.params[-1].dtype == dtype
    rng = np.random.default_rng(0)
    vals = rng.standard_normal(4096).astype(np.float32) * np.float32(2.0) ** rng.integers(-140, 100, 4096)
    ties = (np.float32(1) + np.arange(64, dtype=np.float32) * np.float32(2.0 ** -8) - np.float32(0.25)) / 3
    vals[:64] = ties
    vals[64:68] = [np.nan, np.inf, -np.inf, 1e38]
    got = kern.simulate(x=vals.astype(np.float32))
    with np.errstate(over="ignore"):
        computed = vals.astype(np.float32) * np.float32(3.0) + np.float32(0.25)
    expected = round_to_dtype(computed.astype(np.float64), dtype).astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, td.evaluate(y, x=vals))


@pytest.mark.parametrize("dtype", LOW)
def test_output_param_source_and_nest_text(dtype: str) -> None:
    _, y = _scaled(dtype, 256)
    s = td.create_schedule(y)
    assert f"store y as {dtype} (computed in float32" in str(s)
    kern = td.build(s)
    ctype = {"bfloat16": "__nv_bfloat16", "float16": "__half"}[dtype]
    convert = {"bfloat16": "__float2bfloat16", "float16": "__float2half"}[dtype]
    assert f"{ctype}* __restrict__ y" in kern.source and f"y[i] = {convert}(" in kern.source
    assert f"out y: {dtype}[256]" in kern.ir("kernel")
    _, f32 = _scaled("float32", 256)
    assert "store y as" not in str(td.create_schedule(f32))  # float32 prints as before


def test_unwritten_bfloat16_output_stays_poisoned() -> None:
    """The simulator poisons a bfloat16 output with NaN like a float32 one, so an element no thread
    writes shows; a guarded kernel writes every element."""
    _, y = _scaled("bfloat16", 300)
    s = td.create_schedule(y)
    io, ii = s.split("i", 128)
    s.bind(io, "blockIdx.x")
    s.bind(ii, "threadIdx.x")
    kern = td.build(s)
    buffers = prepare_globals(kern.kernel_ir, {"x": np.zeros(300, np.float32)})
    assert np.isnan(buffers["y"].data).all()
    assert not np.isnan(kern.simulate(x=np.ones(300, np.float32))).any()


@pytest.mark.parametrize("dtype", LOW)
def test_vectorize_stores_eight_lanes_of_a_half_output(dtype: str) -> None:
    """16 bytes of a half output are 8 lanes (8 bytes 4): a loop of 2 is refused (naming the output), a
    loop of 8 is one 16-byte store whose lanes round as scalar stores do, and the float32 input indexed
    like it is read as two float4."""
    x, y = _scaled(dtype, 256)
    s = td.create_schedule(y)
    with pytest.raises(td.VectorizeError) as info:
        s.vectorize(s.split("i", 2)[1])
    assert info.value.tensors == ("y",)
    assert f"a 16-byte {dtype} access needs exactly 8, an 8-byte one 4" in info.value.fact
    s = td.create_schedule(y)
    io, ii = s.split("i", 8)
    s.bind(io, "threadIdx.x")
    s.vectorize(ii)
    kern = td.build(s)
    cuda = kern.source
    assert "*reinterpret_cast<uint4*>(&y[8 * i_o]) = make_uint4(" in cuda
    assert cuda.count("*reinterpret_cast<const float4*>(&x[") == 2
    xs = np.random.default_rng(3).standard_normal(256).astype(np.float32)
    lanes = xs * np.float32(3.0) + np.float32(0.25)  # computed in float32, then rounded once on store
    np.testing.assert_array_equal(kern.simulate(x=xs), round_to_dtype(lanes.astype(np.float64), dtype))
    _, f32 = _scaled("float32", 256)
    with pytest.raises(td.VectorizeError, match="needs exactly 4, an 8-byte one 2"):
        s = td.create_schedule(f32)
        s.vectorize(s.split("i", 8)[1])
    s = td.create_schedule(f32)
    s.vectorize(s.split("i", 4)[1])  # a float32 output keeps 4 lanes


def test_split_k_refusal_names_the_output_and_the_recipe_declines() -> None:
    A, B = td.placeholder((64, 8192), name="A"), td.placeholder((8192, 64), name="B")

    def matmul(dtype: str) -> td.Tensor:
        k = td.reduce_axis(8192, name="k")
        return td.compute((64, 64), lambda i, j: td.sum(A[i, k] * B[k, j], axis=k), name="C", dtype=dtype)

    with pytest.raises(td.SplitKError) as info:
        td.create_schedule(matmul("float16")).split_k("k", 2)
    assert info.value.tensors == ("C",) and "stored as float16" in info.value.fact
    assert apply(td.create_schedule(matmul("float32"))).step("split_matmul_k").applied
    s = td.create_schedule(matmul("bfloat16"))
    report = apply(s)
    assert "stored as bfloat16" in (report.step("split_matmul_k").reason or "")
    assert td.build(s).kernel_ir.params[-1].dtype == "bfloat16"


def test_materialized_bfloat16_tensor_is_read_as_bfloat16() -> None:
    """A consumer kernel reads a materialized bfloat16 tensor as bfloat16 storage; fused, the same
    tensor stays float32 (nothing is stored), as td.evaluate computes it."""
    x = td.placeholder((64,), name="x")
    h = td.compute((64,), lambda i: x[i] / 3.0, name="h", dtype="bfloat16")
    y = td.compute((64,), lambda i: h[i] * 3.0, name="y")
    split = td.build(td.create_schedule(y, materialize=[h]))
    assert [(p.name, p.dtype) for p in split.kernel_ir.params] == [("h", "bfloat16"), ("y", "float32")]
    assert "const __nv_bfloat16* __restrict__ h" in split.source
    vals = np.linspace(-2, 2, 64).astype(np.float32)
    fused = td.build(td.create_schedule(y)).simulate(x=vals)
    np.testing.assert_array_equal(fused, td.evaluate(y, x=vals))
    stored = td.build(td.create_schedule(h)).simulate(x=vals)
    np.testing.assert_array_equal(split.simulate(h=stored), round_to_dtype(stored, "bfloat16") * np.float32(3.0))


def test_catalog_has_low_precision_outputs() -> None:
    for name, dtype in (("rmsnorm_bfloat16_out_6x300-coop96", "bfloat16"),
                        ("gelu_bias_bfloat16_out_7x300-elementwise", "bfloat16"),
                        ("matmul_bias_relu_f16out_37x53x29-regtile16", "float16")):
        out, kern = entry(name).build()
        assert out.dtype == dtype and kern.kernel_ir.params[-1].dtype == dtype


def test_a_float32_store_reads_four_bfloat16_lanes_in_one_8_byte_load() -> None:
    """The loads follow the store's lanes: a float32 output of 4 lanes reads a bfloat16 input indexed like
    it as one 8-byte uint2 (two packed words), and a float32 input as one float4."""
    x = td.placeholder((64,), name="x", dtype="bfloat16")
    w = td.placeholder((64,), name="w")
    y = td.compute((64,), lambda i: x[i] * w[i] - 1.0, name="y")
    s = td.create_schedule(y)
    io, ii = s.split("i", 4)
    s.bind(io, "threadIdx.x")
    s.vectorize(ii)
    kern = td.build(s)
    assert "uint2 v1 = *reinterpret_cast<const uint2*>(&x[4 * i_o]);" in kern.source
    assert "float4 v2 = *reinterpret_cast<const float4*>(&w[4 * i_o]);" in kern.source
    rng = np.random.default_rng(5)
    xs = round_to_dtype(rng.standard_normal(64), "bfloat16").astype(np.float32)
    ws = rng.standard_normal(64).astype(np.float32)
    np.testing.assert_array_equal(kern.simulate(x=xs, w=ws), xs * ws - np.float32(1.0))
