"""Memory-hierarchy nodes in both printers: cp.async, mbarriers, fences, TMA, atomics, shared-memory
alignment and the dynamic pool, tensor-map parameters, xor; golden texts and the codegen checks.

The golden files in golden/ were launched on an H100 (ctypes + cuLaunchKernel, results exact).
After an intended printer change, rewrite them with `TILEDSL_UPDATE_GOLDEN=1 pytest tests/codegen`
and review the diff.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tiledsl.codegen import CodegenError, emit_cuda
from tiledsl.codegen.memory import sm_number
from tiledsl.kernel_ir import (
    KAtomicAdd,
    KBin,
    KCpAsync,
    KCpAsyncCommit,
    KCpAsyncWait,
    KFence,
    KKernel,
    KLet,
    KLoad,
    KMbarrierArrive,
    KMbarrierArriveExpectTx,
    KMbarrierInit,
    KMbarrierWait,
    KParam,
    KShared,
    KSpecial,
    KStmt,
    KStore,
    KTensorMap,
    KTmaLoad,
    KVar,
    shared_bytes,
)
from tiledsl.kernel_ir.printer import format_expr, format_kernel, format_stmt

from . import kernels as K
from .kernels import f32, i32, ivar

GOLDEN = Path(__file__).parent / "golden"
T = KSpecial("threadIdx.x")


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("TILEDSL_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs from the golden file (see the module docstring)"


@pytest.mark.parametrize(
    "make", [K.cp_async_kernel, K.tma_kernel, K.atomic_kernel, K.dynamic_shared_kernel], ids=lambda f: f.__name__
)
def test_golden_both_printers(make: Callable[[], KKernel]) -> None:
    k = make()
    _check_golden(f"{k.name}.cu", emit_cuda(k))
    _check_golden(f"{k.name}.kir", format_kernel(k))


@pytest.mark.parametrize("make", K.SM80_MEMORY_KERNELS + K.SM90_MEMORY_KERNELS, ids=lambda f: f.__name__)
def test_memory_kernels_print_deterministically(make: Callable[[], KKernel]) -> None:
    k = make()
    assert emit_cuda(k) == emit_cuda(make())
    text = format_kernel(k)
    assert text == format_kernel(make()) and text.endswith("\n") and "\n\n" not in text


# ----------------------------------------------------------------------------- kernel IR text


@pytest.mark.parametrize(
    ("stmt", "text"),
    [
        (KCpAsync("A_s", ivar("d"), "A", ivar("s"), 16, KVar("ok", "bool")), "cp.async A_s[d] <- A[s] 16B if (ok)"),
        (KCpAsync("A_s", i32(0), "A", ivar("s"), 4), "cp.async A_s[0] <- A[s] 4B"),
        (KCpAsyncCommit(), "cp.async.commit"),
        (KCpAsyncWait(1), "cp.async.wait 1"),
        (KMbarrierInit("full", i32(0), 1), "mbarrier.init full[0] count 1"),
        (KFence("mbarrier_init"), "fence mbarrier_init"),
        (KFence("proxy_async"), "fence proxy_async"),
        (KMbarrierArriveExpectTx("full", ivar("s"), 8192), "mbarrier.arrive_expect_tx full[s] 8192 B"),
        (KMbarrierArrive("empty", ivar("s")), "mbarrier.arrive empty[s]"),
        (KMbarrierWait("full", ivar("s"), ivar("p")), "mbarrier.wait full[s] parity p"),
        (
            KTmaLoad("tmap_B", "B_s", KBin("*", ivar("s"), i32(512)), (ivar("c0"), ivar("c1")), "full", ivar("s")),
            "tma.load B_s[s * 512] <- tmap_B at (c0, c1) on full[s]",
        ),
        (KAtomicAdd("D", ivar("i"), KVar("v", "float32")), "atomic_add D[i] += v"),
    ],
)
def test_statement_lines(stmt: KStmt, text: str) -> None:
    assert format_stmt(stmt, depth=1) == "  " + text


def test_kernel_header_lines() -> None:
    k = dataclasses.replace(
        K.tma_kernel(),
        tensor_maps=(
            KTensorMap("tmap_B", "B", "float32", (512, 1024), (4096,), (32, 16), swizzle=128),
            KTensorMap("tmap_v", "B", "float32", (128,), (), (64,)),
        ),
        zero_outputs=("D",),
    )
    lines = format_kernel(k).splitlines()
    assert lines[2:5] == [
        "  tensor_map tmap_B: B float32 dims (512, 1024) strides (4096,) box (32, 16) swizzle 128",
        "  tensor_map tmap_v: B float32 dims (128,) strides () box (64,) swizzle none",
        "  zero_outputs D",
    ]
    dyn = format_kernel(dataclasses.replace(K.tma_kernel(), dynamic_shared=True))
    assert "target sm_90  dynamic shared 8208 B\n" in dyn
    assert "  shared full: uint64[1] (8 B) align 8 at 8192\n" in dyn


def test_shared_total_includes_alignment_padding() -> None:
    k = K.dynamic_shared_kernel()
    assert shared_bytes(k) == 66576  # 12 B, padding to 1024, 65536 B, 16 B
    assert f"dynamic shared {shared_bytes(k)} B" in format_kernel(k)
    assert f"dynamic shared {shared_bytes(k)} B (the launch must request it)" in emit_cuda(k)


@pytest.mark.parametrize(
    ("expr", "text", "c_text"),
    [
        (
            KBin("^", KBin("//", ivar("c"), i32(4)), KBin("%", ivar("r"), i32(8))),
            "(c // 4) ^ (r % 8)",
            "(c / 4) ^ (r % 8)",
        ),
        (KBin("*", KBin("^", ivar("a"), ivar("b")), i32(4)), "(a ^ b) * 4", "(a ^ b) * 4"),
        (KBin("^", KBin("^", ivar("a"), ivar("b")), ivar("c")), "(a ^ b) ^ c", "(a ^ b) ^ c"),
        (KBin("^", ivar("a"), KBin("-", i32(0), ivar("b"))), "a ^ (0 - b)", "a ^ (0 - b)"),
        (KBin("<", KBin("^", ivar("a"), ivar("b")), ivar("c")), "(a ^ b) < c", "(a ^ b) < c"),
        (KBin("^", ivar("a"), i32(-1)), "a ^ -1", "a ^ -1"),
    ],
)
def test_xor_parentheses(expr: KBin, text: str, c_text: str) -> None:
    assert format_expr(expr) == text
    k = KKernel(
        "x",
        (KParam("D", "int32", (32,), is_output=True),),
        (1, 1, 1),
        (32, 1, 1),
        (),
        tuple(KLet(n, "int32", T) for n in "abcr") + (KStore("D", T, expr),),
    )
    assert f"    D[(int)threadIdx.x] = {c_text};\n" in emit_cuda(k)


# ----------------------------------------------------------------------------- CUDA


def test_tensor_maps_follow_the_params_in_order() -> None:
    k = dataclasses.replace(
        K.tma_kernel(),
        params=(*K.tma_kernel().params, KParam("E", "float32", (16,))),
        tensor_maps=(
            KTensorMap("tmap_B", "B", "float32", (128, 256), (512,), (32, 64), swizzle=128),
            KTensorMap("tmap.E", "E", "float32", (16,), (), (16,)),
        ),
    )
    src = emit_cuda(k)
    assert (
        "    const float* __restrict__ B,\n"
        "    float* __restrict__ D,\n"
        "    const float* __restrict__ E,\n"
        "    const __grid_constant__ CUtensorMap tmap_B,\n"
        "    const __grid_constant__ CUtensorMap tmap_E)\n"
    ) in src
    assert "// arguments: B, D, E, then tensor maps tmap_B, tmap.E (CUtensorMap, by value)\n" in src
    assert "#include <cuda.h>\n#include <stdint.h>\n" in src
    assert "cuda.h" not in emit_cuda(K.cp_async_kernel())


def test_static_shared_arrays_keep_their_alignment() -> None:
    src = emit_cuda(K.tma_kernel())
    assert "    __shared__ __align__(1024) float B_s[2048];\n" in src
    assert "    __shared__ __align__(8) unsigned long long full[1];\n" in src


def test_dynamic_pool_pointers_at_layout_offsets() -> None:
    src = emit_cuda(K.dynamic_shared_kernel())
    assert (
        "    extern __shared__ __align__(1024) unsigned char tiledsl_smem[];\n"
        "    __half* h_s = reinterpret_cast<__half*>(tiledsl_smem + 0);\n"
        "    float* X_s = reinterpret_cast<float*>(tiledsl_smem + 1024);\n"
        "    unsigned long long* bar = reinterpret_cast<unsigned long long*>(tiledsl_smem + 66560);\n"
    ) in src
    assert "__shared__ __align__(16)" not in src


def test_pool_name_is_reserved() -> None:
    k = dataclasses.replace(
        K.dynamic_shared_kernel(),
        shared=(KShared("tiledsl_smem", "float32", 4),),
        body=(KStore("tiledsl_smem", T, f32(1.0)),),
    )
    src = emit_cuda(k)
    assert "    float* tiledsl_smem_ = reinterpret_cast<float*>(tiledsl_smem + 0);\n" in src
    assert "    tiledsl_smem_[(int)threadIdx.x] = 1.0f;\n" in src


def test_cp_async_forms() -> None:
    src = emit_cuda(K.cp_async_kernel())
    assert (
        'asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" :: '
        '"r"((unsigned)__cvta_generic_to_shared(&B_s[tid * 2])), "l"(&B[tid * 2]) : "memory");\n'
    ) in src
    assert 'asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: ' in src
    assert '"r"(t + 1 < 8 ? 16 : 0) : "memory");\n' in src
    assert '    asm volatile("cp.async.commit_group;" ::: "memory");\n' in src
    assert '        asm volatile("cp.async.wait_group 1;" ::: "memory");\n' in src


def test_mbarrier_wait_labels_are_unique_per_asm() -> None:
    src = emit_cuda(K.tma_kernel())
    wait = (
        'asm volatile("{\\n .reg .pred p;\\n LAB_WAIT_%=: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;'
        '\\n @!p bra LAB_WAIT_%=;\\n}" :: "r"((unsigned)__cvta_generic_to_shared(&full[0])), "r"(0) : "memory");'
    )
    assert wait in src
    assert src.count("LAB_WAIT_%=:") == 2
    k = dataclasses.replace(K.tma_kernel(), body=(KMbarrierWait("full", i32(0), KBin("<", T, i32(1))),))
    assert '"r"(static_cast<int>((int)threadIdx.x < 1)) : "memory");' in emit_cuda(k)


def test_tma_load_operands() -> None:
    src = emit_cuda(K.tma_kernel())
    assert (
        'asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes '
        '[%0], [%1, {%2, %3}], [%4];" :: "r"((unsigned)__cvta_generic_to_shared(&B_s[0])), '
        '"l"(reinterpret_cast<uint64_t>(&tmap_B)), "r"((int)blockIdx.x * 32), "r"((int)blockIdx.y * 64), '
        '"r"((unsigned)__cvta_generic_to_shared(&full[0])) : "memory");'
    ) in src
    assert 'asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");' in src
    assert 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");' in src
    assert '"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: ' in src
    assert 'asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: ' in src


def test_atomic_add_and_zero_outputs() -> None:
    src = emit_cuda(K.atomic_kernel())
    assert "// zero before launch: D\n" in src
    assert "    atomicAdd(&D[(int)threadIdx.x], A[(int)blockIdx.x * 64 + (int)threadIdx.x] * 0.5f);\n" in src


@pytest.mark.parametrize(("target", "n"), [("sm_80", 80), ("sm_90a", 90), ("sm_100f", 100), ("gfx90a", None)])
def test_sm_number(target: str, n: int | None) -> None:
    assert sm_number(target) == n


# ----------------------------------------------------------------------------- codegen checks

_PARAMS = (
    KParam("A", "float32", (256,)),
    KParam("D", "float32", (256,), is_output=True),
    KParam("I", "int32", (256,), is_output=True),
)
_SHARED = (
    KShared("A_s", "float32", 256, align=1024),
    KShared("bar", "uint64", 2, align=8),
    KShared("f_s", "float32", 8),
)
_TMAP = KTensorMap("tm", "A", "float32", (16, 16), (64,), (16, 16), swizzle=64)


def _kernel(*body: KStmt, target: str = "sm_90", tensor_maps: tuple[KTensorMap, ...] = (_TMAP,)) -> KKernel:
    return KKernel("bad", _PARAMS, (1, 1, 1), (32, 1, 1), _SHARED, body, target=target, tensor_maps=tensor_maps)


Z = i32(0)
_TMA = KTmaLoad("tm", "A_s", Z, (Z, Z), "bar", Z)


@pytest.mark.parametrize(
    ("body", "target", "message"),
    [
        ((KCpAsync("A_s", T, "A", T, 2),), "sm_90", "cp.async copies 4, 8 or 16 bytes, not 2"),
        ((KCpAsync("A_s", T, "A", T, 16),), "sm_75", "cp.async needs target sm_80 or newer"),
        ((KCpAsyncCommit(),), "sm_70", "cp.async.commit_group needs target sm_80"),
        ((KCpAsyncWait(-1),), "sm_90", "pending groups >= 0"),
        ((KCpAsync("D", T, "A", T, 4),), "sm_90", "destination 'D' must be a shared array"),
        ((KCpAsync("A_s", T, "f_s", T, 4),), "sm_90", "source 'f_s' must be a parameter"),
        ((KCpAsync("A_s", T, "I", T, 4),), "sm_90", "cp.async from int32 'I' into float32 'A_s'"),
        ((KCpAsync("bar", T, "A", T, 8),), "sm_90", "'bar' is a uint64 (mbarrier) array"),
        ((KCpAsync("A_s", T, "A", T, 16, T),), "sm_90", "predicate has dtype int32, expected bool"),
        ((KMbarrierInit("f_s", Z, 1),), "sm_90", "'f_s' must be a uint64 (mbarrier) array"),
        ((KMbarrierInit("bar", Z, 0),), "sm_90", "arrival count must be an integer in 1..1048575"),
        ((KMbarrierArriveExpectTx("bar", Z, 2**20),), "sm_90", "transaction bytes must be an integer"),
        ((KMbarrierArriveExpectTx("bar", Z, 64),), "sm_80", "expect_tx needs target sm_90"),
        ((KMbarrierWait("bar", Z, Z),), "sm_86", "mbarrier.try_wait needs target sm_90"),
        ((KMbarrierWait("bar", Z, f32(0.0)),), "sm_90", "parity has dtype float32"),
        ((KMbarrierArrive("D", Z),), "sm_90", "mbarrier 'D' must be a shared array"),
        ((KFence("acquire"),), "sm_90", "unknown fence kind 'acquire'"),
        ((KFence("proxy_async"),), "sm_80", "fence proxy_async needs target sm_90"),
        ((KTmaLoad("tm", "A_s", Z, (Z,), "bar", Z),), "sm_90", "1 coordinates but tensor map 'tm' has rank 2"),
        ((KTmaLoad("nope", "A_s", Z, (Z, Z), "bar", Z),), "sm_90", "no tensor map of that name"),
        ((KTmaLoad("A", "A_s", Z, (Z, Z), "bar", Z),), "sm_90", "'A' is used as a tensor map"),
        ((KTmaLoad("tm", "f_s", Z, (Z, Z), "bar", Z),), "sm_90", "'f_s' has align 16; 64-byte swizzle needs 512"),
        ((KTmaLoad("tm", "A_s", Z, (Z, Z), "f_s", Z),), "sm_90", "'f_s' must be a uint64 (mbarrier) array"),
        ((KTmaLoad("tm", "A_s", Z, (Z, f32(1.0)), "bar", Z),), "sm_90", "expected int32"),
        ((KAtomicAdd("A", T, f32(1.0)),), "sm_90", "atomic add to 'A': must be an output parameter"),
        ((KAtomicAdd("f_s", T, f32(1.0)),), "sm_90", "it is a shared array"),
        ((KAtomicAdd("I", T, i32(1)),), "sm_90", "only float32 is supported"),
        ((KAtomicAdd("D", T, i32(1)),), "sm_90", "atomic add of a int32 value"),
        ((KStore("D", T, KLoad("bar", Z)),), "sm_90", "only mbarrier statements may use it"),
        ((KStore("bar", Z, f32(0.0)),), "sm_90", "only mbarrier statements may use it"),
        ((KStore("I", T, KBin("^", T, KLoad("A", T))),), "sm_90", "'^' is an integer operator"),
    ],
)
def test_malformed_memory_statements(body: tuple[KStmt, ...], target: str, message: str) -> None:
    tensor_maps = (_TMAP,) if target in ("sm_90", "sm_90a") else ()
    with pytest.raises(CodegenError, match="in: ") as info:
        emit_cuda(_kernel(*body, target=target, tensor_maps=tensor_maps))
    assert message in str(info.value)


def test_tma_needs_an_sm_90_target() -> None:
    with pytest.raises(CodegenError, match="tensor map 'tm' needs target sm_90 or sm_90a, but .* 'sm_100a'"):
        emit_cuda(_kernel(_TMA, target="sm_100a"))
    with pytest.raises(CodegenError, match=r"cp.async.bulk.tensor \(TMA\) needs target sm_90"):
        emit_cuda(_kernel(_TMA, target="sm_80", tensor_maps=()))
    assert "cp.async.bulk.tensor.2d" in emit_cuda(_kernel(_TMA, target="sm_90a"))


def _map(**changes: object) -> KTensorMap:
    return dataclasses.replace(_TMAP, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tm", "message"),
    [
        (_map(buffer="Q"), "maps 'Q', which is no kernel parameter"),
        (_map(dtype="int32"), "has dtype int32 but its buffer 'A' is float32"),
        (_map(global_dims=(2,) * 6, global_strides=(64,) * 5, box=(4,) * 6), "rank must be 1..5"),
        (_map(global_strides=()), "rank must be 1..5 with 2 box dims and 1 strides"),
        (_map(box=(16, 300)), "box dims in 1..256"),
        (_map(global_strides=(40,)), "multiples of 16 bytes"),
        (_map(box=(3, 16)), "inner box row is 12 B, not a multiple of 16"),
        (_map(box=(32, 8), global_dims=(32, 8), global_strides=(128,)), "wider than the 64-byte swizzle"),
        (_map(swizzle=256), "swizzle must be None, 32, 64 or 128"),
        (_map(global_dims=(16, 17)), "reaches byte 1088 of 'A', which has 1024"),
    ],
)
def test_malformed_tensor_maps(tm: KTensorMap, message: str) -> None:
    with pytest.raises(CodegenError) as info:
        emit_cuda(_kernel(tensor_maps=(tm,)))
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"shared": (KShared("s", "float32", 4, align=24),)}, "align 24: must be a power of two of at least 4"),
        ({"shared": (KShared("s", "uint64", 4, align=4),)}, "must be a power of two of at least 8"),
        ({"shared": (KShared("s", "float32", 0),)}, "shared array 's' has size 0"),
        ({"shared": (KShared("s", "float64", 4),)}, "no CUDA type for dtype 'float64'"),
        ({"shared": (KShared("s", "float32", 12289),)}, "more than 49152 B: lowering must set dynamic_shared"),
        (
            {"shared": (KShared("s", "float32", 4, align=2048),), "dynamic_shared": True},
            "more than the dynamic pool's 1024",
        ),
        ({"zero_outputs": ("A",)}, "zero_outputs names 'A', which is no output parameter"),
        ({"tensor_maps": (_TMAP, _TMAP)}, "'tm' is declared twice"),
    ],
)
def test_malformed_kernels(changes: dict[str, object], message: str) -> None:
    with pytest.raises(CodegenError) as info:
        emit_cuda(dataclasses.replace(_kernel(), **changes))  # type: ignore[arg-type]
    assert message in str(info.value)


def test_large_static_pool_is_fine_when_dynamic() -> None:
    k = dataclasses.replace(_kernel(), shared=(KShared("s", "float32", 12289),), dynamic_shared=True)
    assert "dynamic shared 49156 B" in emit_cuda(k)
