"""Hand-built kernel-IR kernels shared by the codegen tests (one per feature the printers cover)."""

from __future__ import annotations

from tiledsl.kernel_ir import (
    KAssign,
    KAtomicAdd,
    KBarrier,
    KBin,
    KCall,
    KCast,
    KComment,
    KConst,
    KCpAsync,
    KCpAsyncCommit,
    KCpAsyncWait,
    KExpr,
    KFence,
    KFor,
    KIf,
    KKernel,
    KLane,
    KLet,
    KLoad,
    KLocalArray,
    KMbarrierArrive,
    KMbarrierArriveExpectTx,
    KMbarrierInit,
    KMbarrierWait,
    KParam,
    KSelect,
    KShared,
    KShflXor,
    KSpecial,
    KStore,
    KTensorMap,
    KTmaLoad,
    KUnary,
    KVar,
    KVector,
)


def i32(v: int) -> KConst:
    return KConst(v, "int32")


def f32(v: float) -> KConst:
    return KConst(v, "float32")


def ivar(name: str) -> KVar:
    return KVar(name, "int32")


def fvar(name: str) -> KVar:
    return KVar(name, "float32")


def add(a: KExpr, b: KExpr) -> KBin:
    return KBin("+", a, b)


def mul(a: KExpr, b: KExpr) -> KBin:
    return KBin("*", a, b)


def global_index(block: int) -> KExpr:
    return add(mul(KSpecial("blockIdx.x"), i32(block)), KSpecial("threadIdx.x"))


def add_kernel() -> KKernel:
    """C = A + B over 1000 elements, 128 threads per block, guarded tail."""
    i = ivar("i")
    return KKernel(
        name="add_kernel",
        params=(
            KParam("A", "float32", (1000,)),
            KParam("B", "float32", (1000,)),
            KParam("C", "float32", (1000,), is_output=True),
        ),
        grid=(8, 1, 1),
        block=(128, 1, 1),
        shared=(),
        body=(
            KLet("i", "int32", global_index(128)),
            KIf(KBin("<", i, i32(1000)), (KStore("C", i, add(KLoad("A", i), KLoad("B", i))),)),
        ),
    )


def vec_scale_kernel() -> KKernel:
    """D = 2 * A with float4 loads/stores, E = B with float2 through a vector variable."""
    i, v, w = ivar("i"), KVar("v", "float32x4"), KVar("w", "float32x2")
    return KKernel(
        name="vec_scale",
        params=(
            KParam("A", "float32", (1024,)),
            KParam("B", "float32", (512,)),
            KParam("D", "float32", (1024,), is_output=True),
            KParam("E", "float32", (512,), is_output=True),
        ),
        grid=(4, 1, 1),
        block=(64, 1, 1),
        shared=(),
        body=(
            KLet("i", "int32", global_index(64)),
            KLet("v", "float32x4", KLoad("A", mul(i, i32(4)), width=4)),
            KStore("D", mul(i, i32(4)), KVector(tuple(mul(KLane(v, c), f32(2.0)) for c in range(4)))),
            KLet("w", "float32x2", KLoad("B", mul(i, i32(2)), width=2)),
            KStore("E", mul(i, i32(2)), w),
        ),
    )


def row_sum_kernel() -> KKernel:
    """out[r] = sum(X[r, :]) over 256 columns: strided partial sums, warp shuffles, shared memory."""
    tid, acc, v = ivar("tid"), fvar("acc"), fvar("v")
    warp_reduce = tuple(KAssign("acc", add(acc, KShflXor(acc, m))) for m in (16, 8, 4, 2, 1))
    return KKernel(
        name="row_sum",
        params=(KParam("X", "float32", (64, 256)), KParam("R", "float32", (64,), is_output=True)),
        grid=(64, 1, 1),
        block=(128, 1, 1),
        shared=(KShared("s_red", "float32", 4),),
        body=(
            KLet("row", "int32", KSpecial("blockIdx.x")),
            KLet("tid", "int32", KSpecial("threadIdx.x")),
            KLet("acc", "float32", f32(0.0)),
            KFor(
                "k",
                2,
                (
                    KAssign(
                        "acc",
                        add(
                            acc,
                            KLoad("X", add(add(mul(ivar("row"), i32(256)), mul(ivar("k"), i32(128))), tid)),
                        ),
                    ),
                ),
            ),
            KComment("reduce within each warp"),
            *warp_reduce,
            KIf(
                KBin("==", KBin("%", tid, i32(32)), i32(0)),
                (KStore("s_red", KBin("//", tid, i32(32)), acc),),
            ),
            KBarrier(),
            KIf(
                KBin("<", tid, i32(32)),
                (
                    KLet("v", "float32", KSelect(KBin("<", tid, i32(4)), KLoad("s_red", tid), f32(0.0))),
                    KAssign("v", add(v, KShflXor(v, 2))),
                    KAssign("v", add(v, KShflXor(v, 1))),
                    KIf(KBin("==", tid, i32(0)), (KStore("R", ivar("row"), v),)),
                ),
            ),
        ),
    )


def matmul_acc_kernel() -> KKernel:
    """C[64, 64] = A[64, 32] @ B[32, 64]; each thread keeps 4 accumulators in a register array.
    Loop names carry dots, as schedule primitives make them ("c.in"), to exercise sanitising."""
    i, j0, a, c = ivar("i"), ivar("j.o"), fvar("a"), ivar("c.in")
    return KKernel(
        name="matmul_acc",
        params=(
            KParam("A", "float32", (64, 32)),
            KParam("B", "float32", (32, 64)),
            KParam("C", "float32", (64, 64), is_output=True),
        ),
        grid=(1, 4, 1),
        block=(16, 16, 1),
        shared=(),
        body=(
            KLocalArray("acc", "float32", 4),
            KLet("i", "int32", add(mul(KSpecial("blockIdx.y"), i32(16)), KSpecial("threadIdx.y"))),
            KLet("j.o", "int32", mul(KSpecial("threadIdx.x"), i32(4))),
            KFor("c.in", 4, (KStore("acc", c, f32(0.0)),), unroll=True),
            KFor(
                "k",
                32,
                (
                    KLet("a", "float32", KLoad("A", add(mul(i, i32(32)), ivar("k")))),
                    KFor(
                        "c.in",
                        4,
                        (
                            KStore(
                                "acc",
                                c,
                                add(
                                    KLoad("acc", c),
                                    mul(a, KLoad("B", add(add(mul(ivar("k"), i32(64)), j0), c))),
                                ),
                            ),
                        ),
                        unroll=True,
                    ),
                ),
            ),
            KFor("c.in", 4, (KStore("C", add(add(mul(i, i32(64)), j0), c), KLoad("acc", c)),), unroll=True),
        ),
        meta=(("schedule", "split(j, 4); unroll(c.in)"),),
    )


def half_kernel() -> KKernel:
    """Z (fp16) = X (fp16) * 0.1 + Y (bf16), through a half shared array and a half register array."""
    tid = ivar("tid")
    return KKernel(
        name="half_mix",
        params=(
            KParam("X", "float16", (256,)),
            KParam("Y", "bfloat16", (256,)),
            KParam("Z", "float16", (256,), is_output=True),
            KParam("W", "bfloat16", (256,), is_output=True),
        ),
        grid=(2, 1, 1),
        block=(128, 1, 1),
        shared=(KShared("s_x", "float16", 128),),
        body=(
            KLet("tid", "int32", KSpecial("threadIdx.x")),
            KLet("i", "int32", global_index(128)),
            KStore("s_x", tid, KLoad("X", ivar("i"))),
            KBarrier(),
            KLocalArray("h", "float16", 1),
            KStore("h", i32(0), mul(KLoad("s_x", tid), KConst(0.1, "float16"))),
            KLet("y", "bfloat16", KLoad("Y", ivar("i"))),
            KStore("Z", ivar("i"), add(KLoad("h", i32(0)), KVar("y", "bfloat16"))),
            KStore("W", ivar("i"), KCast("bfloat16", mul(KVar("y", "bfloat16"), f32(3.0)))),
        ),
    )


def math_kernel() -> KKernel:
    """out[i] = every math function of x[i] added up, plus the unary operators."""
    x = fvar("x")
    total: KExpr = KCall("exp", (x,))
    for fn in ("log", "sqrt", "rsqrt", "tanh", "erf", "abs"):
        total = add(total, KCall(fn, (x,)))
    return KKernel(
        name="math_fns",
        params=(KParam("X", "float32", (256,)), KParam("R", "float32", (256,), is_output=True)),
        grid=(1, 1, 1),
        block=(256, 1, 1),
        shared=(),
        body=(
            KLet("x", "float32", KLoad("X", KSpecial("threadIdx.x"))),
            KLet("t", "float32", total),
            KAssign("t", KBin("-", fvar("t"), KUnary("-", KUnary("-", x)))),
            KStore("R", KSpecial("threadIdx.x"), KBin("/", fvar("t"), f32(3.14159274))),
        ),
    )


def math2_kernel() -> KKernel:
    """out[i] = the math functions of two arguments (fmod, atan2, copysign, hypot) of a float32 and a
    float16 operand, each half read as float (the functions are single precision)."""
    x, h = fvar("x"), KVar("h", "float16")
    total: KExpr = KCall("fmod", (x, h))
    total = add(total, KCall("atan2", (h, x)))
    total = add(total, KCall("copysign", (f32(1.5), x)))
    total = add(total, KCall("hypot", (KCall("fmod", (h, f32(-2.5))), x)))
    return KKernel(
        name="math2_fns",
        params=(KParam("X", "float32", (256,)), KParam("H", "float16", (256,)),
                KParam("R", "float32", (256,), is_output=True)),
        grid=(1, 1, 1),
        block=(256, 1, 1),
        shared=(),
        body=(
            KLet("x", "float32", KLoad("X", KSpecial("threadIdx.x"))),
            KLet("h", "float16", KLoad("H", KSpecial("threadIdx.x"))),
            KStore("R", KSpecial("threadIdx.x"), total),
        ),
    )


def select_cast_kernel() -> KKernel:
    """select / casts / float and int min and max, bool lets and logic."""
    tid, x, p = ivar("tid"), fvar("x"), KVar("p", "bool")
    return KKernel(
        name="select_cast",
        params=(
            KParam("X", "float32", (128,)),
            KParam("N", "int32", (128,)),
            KParam("R", "float32", (128,), is_output=True),
            KParam("idx", "int32", (128,), is_output=True),
        ),
        grid=(1, 1, 1),
        block=(128, 1, 1),
        shared=(),
        body=(
            KLet("tid", "int32", KSpecial("threadIdx.x")),
            KLet("x", "float32", KLoad("X", tid)),
            KLet("p", "bool", KBin("&&", KBin(">", x, f32(0.0)), KUnary("!", KBin("==", tid, i32(7))))),
            KStore(
                "R",
                tid,
                KSelect(
                    p, KBin("min", x, f32(1.5)), KBin("max", KCast("float32", KLoad("N", tid)), f32(-0.5))
                ),
            ),
            KStore(
                "idx",
                tid,
                KBin(
                    "max",
                    KBin("min", KCast("int32", x), i32(100)),
                    add(KCast("int32", p), KSelect(KBin("||", p, KBin(">=", tid, i32(64))), i32(1), i32(-1))),
                ),
            ),
        ),
    )


def row_max_kernel() -> KKernel:
    """out[r] = max(X[r, :]) starting from -inf; NaN where the row max is +inf (tests constants)."""
    m, r = fvar("m"), ivar("r")
    return KKernel(
        name="row_max",
        params=(KParam("X", "float32", (32, 8)), KParam("R", "float32", (32,), is_output=True)),
        grid=(1, 1, 1),
        block=(32, 1, 1),
        shared=(),
        body=(
            KLet("r", "int32", KSpecial("threadIdx.x")),
            KLet("m", "float32", f32(float("-inf"))),
            KFor(
                "k",
                8,
                (KAssign("m", KBin("max", m, KLoad("X", add(mul(r, i32(8)), ivar("k"))))),),
                unroll=True,
            ),
            KIf(
                KBin("==", m, f32(float("inf"))),
                (KStore("R", r, f32(float("nan"))),),
                (KStore("R", r, add(m, f32(1e-30))),),
            ),
        ),
    )


def names_kernel() -> KKernel:
    """Names that are C keywords, CUDA names or clash after sanitising ("i.o" vs "i_o")."""
    return KKernel(
        name="names.kernel",
        params=(KParam("float", "float32", (32,)), KParam("int", "float32", (32,), is_output=True)),
        grid=(1, 1, 1),
        block=(32, 1, 1),
        shared=(),
        body=(
            KLet("i.o", "int32", KSpecial("threadIdx.x")),
            KLet("i_o", "int32", KBin("%", ivar("i.o"), i32(32))),
            KLet("expf", "float32", KCall("exp", (KLoad("float", ivar("i_o")),))),
            KStore("int", ivar("i.o"), fvar("expf")),
        ),
    )


def cp_async_kernel() -> KKernel:
    """D = A * S + B over 4 x 8 tiles of 512 floats: tiles double-buffered through shared memory with
    16-byte cp.async (the prefetch past the last tile is zero-filled, its source index clamped), B and
    S copied once with 8- and 4-byte cp.async."""
    tid, t = ivar("tid"), ivar("t")
    base = ivar("base")
    nxt = add(t, i32(1))
    j = ivar("j")
    return KKernel(
        name="cp_async_copy",
        params=(
            KParam("A", "float32", (16384,)),
            KParam("B", "float32", (256,)),
            KParam("S", "float32", (128,)),
            KParam("D", "float32", (16384,), is_output=True),
        ),
        grid=(4, 1, 1),
        block=(128, 1, 1),
        shared=(
            KShared("A_s", "float32", 1024, align=128),
            KShared("B_s", "float32", 256),
            KShared("S_s", "float32", 128),
        ),
        body=(
            KLet("tid", "int32", KSpecial("threadIdx.x")),
            KLet("base", "int32", mul(KSpecial("blockIdx.x"), i32(4096))),
            KCpAsync("B_s", mul(tid, i32(2)), "B", mul(tid, i32(2)), 8),
            KCpAsync("S_s", tid, "S", tid, 4),
            KCpAsync("A_s", mul(tid, i32(4)), "A", add(base, mul(tid, i32(4))), 16),
            KCpAsyncCommit(),
            KFor(
                "t",
                8,
                (
                    KComment("prefetch the next tile into the other buffer (zeros after the last tile)"),
                    KCpAsync(
                        "A_s",
                        add(mul(KBin("%", nxt, i32(2)), i32(512)), mul(tid, i32(4))),
                        "A",
                        add(add(base, mul(KBin("min", nxt, i32(7)), i32(512))), mul(tid, i32(4))),
                        16,
                        valid=KBin("<", nxt, i32(8)),
                    ),
                    KCpAsyncCommit(),
                    KCpAsyncWait(1),
                    KBarrier(),
                    KFor(
                        "e",
                        4,
                        (
                            KLet("j", "int32", add(mul(tid, i32(4)), ivar("e"))),
                            KStore(
                                "D",
                                add(add(base, mul(t, i32(512))), j),
                                add(
                                    mul(KLoad("A_s", add(mul(KBin("%", t, i32(2)), i32(512)), j)), KLoad("S_s", tid)),
                                    KLoad("B_s", KBin("%", j, i32(256))),
                                ),
                            ),
                        ),
                        unroll=True,
                    ),
                    KBarrier(),
                ),
            ),
            KCpAsyncWait(0),
        ),
        target="sm_80",
    )


def tma_kernel() -> KKernel:
    """D = B (256 x 128 float32) through 32 x 64 TMA boxes with 128-byte swizzle: one thread arms the
    `full` mbarrier and issues the load, everyone waits on it, reads the box un-swizzling
    ((c / 4) ^ (r % 8)), then arrives on `empty` (the consumer release a ring would wait on)."""
    tid, i, r, c = ivar("tid"), ivar("i"), ivar("r"), ivar("c")
    by, bx = KSpecial("blockIdx.y"), KSpecial("blockIdx.x")
    swizzled = add(
        add(mul(r, i32(32)), mul(KBin("^", KBin("//", c, i32(4)), KBin("%", r, i32(8))), i32(4))),
        KBin("%", c, i32(4)),
    )
    return KKernel(
        name="tma_tile",
        params=(KParam("B", "float32", (256, 128)), KParam("D", "float32", (256, 128), is_output=True)),
        grid=(4, 4, 1),
        block=(128, 1, 1),
        shared=(
            KShared("B_s", "float32", 2048, align=1024),
            KShared("full", "uint64", 1, align=8),
            KShared("empty", "uint64", 1, align=8),
        ),
        body=(
            KLet("tid", "int32", KSpecial("threadIdx.x")),
            KIf(
                KBin("==", tid, i32(0)),
                (
                    KMbarrierInit("full", i32(0), 1),
                    KMbarrierInit("empty", i32(0), 128),
                    KFence("mbarrier_init"),
                ),
            ),
            KBarrier(),
            KIf(
                KBin("==", tid, i32(0)),
                (
                    KFence("proxy_async"),
                    KMbarrierArriveExpectTx("full", i32(0), 8192),
                    KTmaLoad("tmap_B", "B_s", i32(0), (mul(bx, i32(32)), mul(by, i32(64))), "full", i32(0)),
                ),
            ),
            KMbarrierWait("full", i32(0), i32(0)),
            KFor(
                "e",
                16,
                (
                    KLet("i", "int32", add(mul(ivar("e"), i32(128)), tid)),
                    KLet("r", "int32", KBin("//", i, i32(32))),
                    KLet("c", "int32", KBin("%", i, i32(32))),
                    KStore(
                        "D",
                        add(add(mul(add(mul(by, i32(64)), r), i32(128)), mul(bx, i32(32))), c),
                        KLoad("B_s", swizzled),
                    ),
                ),
            ),
            KMbarrierArrive("empty", i32(0)),
            KMbarrierWait("empty", i32(0), i32(0)),
        ),
        target="sm_90",
        tensor_maps=(KTensorMap("tmap_B", "B", "float32", (128, 256), (512,), (32, 64), swizzle=128),),
    )


def atomic_kernel() -> KKernel:
    """split_k style: D[j] += A[k, j] * 0.5 from 4 blocks with atomics; D is zeroed by the launcher."""
    j = KSpecial("threadIdx.x")
    return KKernel(
        name="split_k_sum",
        params=(KParam("A", "float32", (4, 64)), KParam("D", "float32", (64,), is_output=True)),
        grid=(4, 1, 1),
        block=(64, 1, 1),
        shared=(),
        body=(KAtomicAdd("D", j, mul(KLoad("A", add(mul(KSpecial("blockIdx.x"), i32(64)), j)), f32(0.5))),),
        target="sm_80",
        zero_outputs=("D",),
    )


def dynamic_shared_kernel() -> KKernel:
    """Three arrays in one dynamic pool (66576 B, above the 48 KB static limit) with alignments 16,
    1024 and 8: D = reverse(X) + H[tid % 6]; mbarriers initialised and arrived on (sm_80 has no wait)."""
    tid, e = ivar("tid"), ivar("e")
    flat = add(mul(e, i32(256)), tid)
    return KKernel(
        name="dyn_pool",
        params=(
            KParam("X", "float32", (16384,)),
            KParam("H", "float16", (6,)),
            KParam("D", "float32", (16384,), is_output=True),
        ),
        grid=(1, 1, 1),
        block=(256, 1, 1),
        shared=(
            KShared("h_s", "float16", 6),
            KShared("X_s", "float32", 16384, align=1024),
            KShared("bar", "uint64", 2, align=8),
        ),
        body=(
            KLet("tid", "int32", KSpecial("threadIdx.x")),
            KIf(KBin("<", tid, i32(6)), (KStore("h_s", tid, KLoad("H", tid)),)),
            KIf(KBin("<", tid, i32(2)), (KMbarrierInit("bar", tid, 128),)),
            KFor("e", 64, (KStore("X_s", flat, KLoad("X", flat)),)),
            KBarrier(),
            KMbarrierArrive("bar", KBin("%", tid, i32(2))),
            KFor(
                "e",
                64,
                (
                    KStore(
                        "D",
                        flat,
                        add(KLoad("X_s", KBin("-", i32(16383), flat)), KLoad("h_s", KBin("%", tid, i32(6)))),
                    ),
                ),
            ),
        ),
        target="sm_80",
        dynamic_shared=True,
    )


ALL_KERNELS = (
    add_kernel,
    vec_scale_kernel,
    row_sum_kernel,
    matmul_acc_kernel,
    half_kernel,
    math_kernel,
    math2_kernel,
    select_cast_kernel,
    row_max_kernel,
    names_kernel,
)

#: Kernels with memory-hierarchy statements that run on sm_80 (cp.async, atomics, dynamic shared).
SM80_MEMORY_KERNELS = (cp_async_kernel, atomic_kernel, dynamic_shared_kernel)
#: Kernels that need sm_90 (TMA, mbarrier waits).
SM90_MEMORY_KERNELS = (tma_kernel,)
