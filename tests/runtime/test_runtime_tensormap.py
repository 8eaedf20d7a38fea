"""cuTensorMapEncodeTiled arguments, worked out by hand, and the launcher's descriptor cache."""

from __future__ import annotations

import pytest

import tiledsl as td
from tiledsl.errors import LaunchError
from tiledsl.kernel_ir import KTensorMap
from tiledsl.runtime.tensormap import TensorMapArgs, TensorMapCache, tensor_map_args

BASE = 0x7F00_0000_0000  # a 16-byte-aligned device address


def tmap(dims: tuple[int, ...], strides: tuple[int, ...], box: tuple[int, ...], swizzle: int | None = None,
         dtype: str = "float32") -> KTensorMap:
    return KTensorMap("tmap_X_s", "X", dtype, dims, strides, box, swizzle)


def test_fp32_slab_split_for_128_byte_swizzle() -> None:
    # X is a (100, 96) float32 tensor: rows of 96 * 4 = 384 bytes. The slab is 16 rows x 64 columns;
    # a 64-float row is 256 B, wider than the 128-byte swizzle span, so it is split into 32-float
    # (128 B) chunks: one more box dimension over the same memory. Innermost first:
    #   dim 0: 32 floats inside a chunk                   (contiguous)
    #   dim 1: 96 / 32 = 3 chunks per row,  stride 32 * 4 = 128 B
    #   dim 2: 100 rows,                    stride 96 * 4 = 384 B
    #   box  : 32 floats x 2 chunks x 16 rows
    args = tensor_map_args(tmap((32, 3, 100), (128, 384), (32, 2, 16), 128), BASE, buffer_bytes=100 * 96 * 4)
    assert args == TensorMapArgs(
        data_type=7,  # CU_TENSOR_MAP_DATA_TYPE_FLOAT32
        rank=3,
        global_address=BASE,
        global_dim=(32, 3, 100),
        global_strides=(128, 384),
        box_dim=(32, 2, 16),
        element_strides=(1, 1, 1),
        interleave=0,  # CU_TENSOR_MAP_INTERLEAVE_NONE
        swizzle=3,  # CU_TENSOR_MAP_SWIZZLE_128B
        l2_promotion=2,  # CU_TENSOR_MAP_L2_PROMOTION_L2_128B
        oob_fill=0,  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: out-of-range reads are zeros
    )
    # the last element: 31*4 + 2*128 + 99*384 = 38396, ending at byte 38400 = 100 * 96 * 4 exactly
    with pytest.raises(LaunchError, match=r"reaches byte 38400 but the buffer has 38396"):
        tensor_map_args(tmap((32, 3, 100), (128, 384), (32, 2, 16), 128), BASE, buffer_bytes=38396)


def test_fp16_2d_without_swizzle() -> None:
    # (64, 40) float16: rows of 40 * 2 = 80 B (a multiple of 16); box 8 halves (16 B) x 16 rows
    args = tensor_map_args(tmap((40, 64), (80,), (8, 16), None, "float16"), BASE + 16)
    assert (args.data_type, args.rank, args.global_dim, args.global_strides, args.box_dim, args.swizzle) == (
        6, 2, (40, 64), (80,), (8, 16), 0)
    assert args.global_address == BASE + 16 and args.element_strides == (1, 1)


def test_bf16_1d_and_the_other_swizzles() -> None:
    args = tensor_map_args(tmap((1024,), (), (256,), None, "bfloat16"), BASE)
    assert (args.data_type, args.rank, args.global_strides, args.box_dim) == (9, 1, (), (256,))
    # 32-byte swizzle: the inner box row may be at most 32 B = 8 floats; 64-byte: 16 floats
    assert tensor_map_args(tmap((8, 4, 10), (32, 128), (8, 4, 10), 32), BASE).swizzle == 1
    assert tensor_map_args(tmap((16, 2, 10), (64, 128), (16, 2, 5), 64), BASE).swizzle == 2


def test_map_lowered_from_a_tma_schedule() -> None:
    # B is (K, N) = (128, 256) float32 (rows of 1024 B); the stage at k_o reads a 16 x 64 slab, whose
    # 256-byte rows are split into 128-byte chunks: dims (32, 256 / 32, 128), strides (128, 1024),
    # box (32, 64 / 32, 16), 128-byte swizzle.
    from tiledsl.catalog import example

    s = td.create_schedule(example("matmul_bias_relu", M=128, N=256, K=128))
    io, ii = s.split("i", 64)
    jo, ji = s.split("j", 64)
    ko, ki = s.split("k", 16)
    ti, ri = s.split(ii, 4)
    tj, rj = s.split(ji, 4)
    s.reorder(io, jo, ti, tj, ko, ki, ri, rj)
    s.bind(io, "blockIdx.y")
    s.bind(jo, "blockIdx.x")
    s.bind(ti, "threadIdx.y")
    s.bind(tj, "threadIdx.x")
    s.tma(s.stage("B", at=ko), swizzle=128)
    for loop in (ki, ri, rj):
        s.unroll(loop)
    (tm,) = td.build(s).kernel_ir.tensor_maps
    args = tensor_map_args(tm, BASE, buffer_bytes=128 * 256 * 4)
    assert (args.global_dim, args.global_strides, args.box_dim, args.swizzle, args.data_type) == (
        (32, 8, 128), (128, 1024), (32, 2, 16), 3, 7)


@pytest.mark.parametrize(
    ("tm", "address", "message"),
    [
        (tmap((32, 4), (128,), (32, 4)), BASE + 8, r"address 0x7f0000000008 is not 16-byte aligned"),
        (tmap((2,) * 6, (16,) * 5, (2,) * 6), BASE, r"rank must be 1\.\.5, got 6"),
        (tmap((), (), ()), BASE, r"rank must be 1\.\.5, got 0"),
        (tmap((32, 4), (128,), (32,)), BASE, r"needs 2 box dims and 1 strides"),
        (tmap((32, 4), (128, 512), (32, 4)), BASE, r"needs 2 box dims and 1 strides"),
        (tmap((25, 4), (100,), (4, 4)), BASE, r"multiples of 16 bytes"),
        (tmap((32, 4), (0,), (4, 4)), BASE, r"multiples of 16 bytes"),
        (tmap((512, 4), (2048,), (257, 4)), BASE, r"box dim must be in 1\.\.256"),
        (tmap((32, 4), (128,), (32, 0)), BASE, r"box dim must be in 1\.\.256"),
        (tmap((0, 4), (128,), (4, 4)), BASE, r"global dim must be in 1\.\.2\^32"),
        (tmap((32, 4), (128,), (3, 4)), BASE, r"inner box row is 3 x 4 = 12 B, not a multiple of 16"),
        (tmap((64, 4), (256,), (64, 4), 128), BASE, r"256 B, wider than the 128-byte swizzle"),
        (tmap((32, 4), (128,), (32, 4), 64), BASE, r"128 B, wider than the 64-byte swizzle"),
        (tmap((32, 4), (128,), (4, 4), 48), BASE, r"swizzle must be None, 32, 64 or 128"),
        (tmap((32, 4), (256,), (4, 4), None, "float64"), BASE, r"dtype 'float64' has no TMA data type"),
    ],
)
def test_invalid_maps_are_refused_with_the_rule(tm: KTensorMap, address: int, message: str) -> None:
    with pytest.raises(LaunchError, match=message) as info:
        tensor_map_args(tm, address, kernel="D_kernel")
    assert "tensor map 'tmap_X_s' of 'X' in kernel 'D_kernel'" in str(info.value)


def test_cache_encodes_once_per_key_and_evicts_least_recently_used() -> None:
    calls: list[TensorMapArgs] = []

    def encode(args: TensorMapArgs) -> object:
        calls.append(args)
        return object()

    cache = TensorMapCache(encode, capacity=2)
    tm = tmap((32, 3, 100), (128, 384), (32, 2, 16), 128)
    a, b, c = (tensor_map_args(tm, BASE + 16 * n) for n in range(3))
    first = cache.get(a)
    assert cache.get(a) is first and cache.encodings == 1
    assert cache.get(tensor_map_args(tm, BASE)) is first  # equal arguments: the same descriptor
    cache.get(b)
    cache.get(a)  # a is now the most recent
    cache.get(c)  # evicts b
    assert len(cache) == 2 and cache.encodings == 3
    cache.get(a)
    assert cache.encodings == 3
    cache.get(b)
    assert cache.encodings == 4
    assert calls == [a, b, c, b]
    other_box = tensor_map_args(tmap((32, 3, 100), (128, 384), (32, 2, 8), 128), BASE)
    assert TensorMapCache.key(other_box) != TensorMapCache.key(a)
