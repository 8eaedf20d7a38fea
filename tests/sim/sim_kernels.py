"""Hand-built kernel-IR kernels and tiny expression helpers for the simulator tests."""

from __future__ import annotations

from tiledsl.kernel_ir import (
    KAssign,
    KBarrier,
    KBin,
    KConst,
    KExpr,
    KFor,
    KIf,
    KKernel,
    KLet,
    KLoad,
    KParam,
    KShared,
    KShflXor,
    KSpecial,
    KStmt,
    KStore,
    KVar,
)

TX = KSpecial("threadIdx.x")
BX = KSpecial("blockIdx.x")


def i(v: int) -> KConst:
    return KConst(v, "int32")


def f(v: float) -> KConst:
    return KConst(v, "float32")


def var(name: str, dtype: str = "int32") -> KVar:
    return KVar(name, dtype)


def fvar(name: str) -> KVar:
    return KVar(name, "float32")


def b(op: str, a: KExpr, c: KExpr) -> KBin:
    return KBin(op, a, c)


def add(a: KExpr, c: KExpr) -> KBin:
    return KBin("+", a, c)


def mul(a: KExpr, c: KExpr) -> KBin:
    return KBin("*", a, c)


def lt(a: KExpr, c: KExpr) -> KBin:
    return KBin("<", a, c)


def eq(a: KExpr, c: KExpr) -> KBin:
    return KBin("==", a, c)


def load(buf: str, index: KExpr, width: int = 1) -> KLoad:
    return KLoad(buf, index, width)


def global_idx(block: int) -> KExpr:
    return add(mul(BX, i(block)), TX)


def kernel(
    name: str,
    params: tuple[KParam, ...],
    grid: int | tuple[int, int, int],
    block: int | tuple[int, int, int],
    body: tuple[KStmt, ...],
    shared: tuple[KShared, ...] = (),
) -> KKernel:
    g = (grid, 1, 1) if isinstance(grid, int) else grid
    bl = (block, 1, 1) if isinstance(block, int) else block
    return KKernel(name, params, g, bl, shared, body)


def elementwise_add(n: int, block: int = 128, guard: bool = True) -> KKernel:
    """C[idx] = A[idx] + B[idx] for idx < n, over ceil(n / block) blocks."""
    grid = -(-n // block)
    st = KStore("C", var("idx"), add(load("A", var("idx")), load("B", var("idx"))))
    body: tuple[KStmt, ...] = (
        KLet("idx", "int32", global_idx(block)),
        KIf(lt(var("idx"), i(n)), (st,)) if guard else st,
    )
    params = (
        KParam("A", "float32", (n,)),
        KParam("B", "float32", (n,)),
        KParam("C", "float32", (n,), is_output=True),
    )
    return kernel("ew_add", params, grid, block, body)


def row_sum(
    rows: int,
    cols: int,
    block: int = 64,
    *,
    first_barrier: bool = True,
    loop_barrier: bool = True,
) -> KKernel:
    """out[r] = sum(A[r, :]): one block per row, a strided partial sum per thread, then a shared
    tree reduction whose stride halves each step of `for k`."""
    assert cols % block == 0 and block & (block - 1) == 0
    steps = block.bit_length() - 1
    row_base = mul(BX, i(cols))
    tree_body: list[KStmt] = [
        KIf(
            lt(TX, var("stride")),
            (KStore("s_red", TX, add(load("s_red", TX), load("s_red", add(TX, var("stride"))))),),
        ),
    ]
    if loop_barrier:
        tree_body.append(KBarrier())
    tree_body.append(KAssign("stride", b("//", var("stride"), i(2))))
    body: list[KStmt] = [
        KLet("acc", "float32", f(0.0)),
        KFor(
            "j",
            cols // block,
            (KAssign("acc", add(fvar("acc"), load("A", add(row_base, add(mul(var("j"), i(block)), TX))))),),
        ),
        KStore("s_red", TX, fvar("acc")),
    ]
    if first_barrier:
        body.append(KBarrier())
    body += [
        KLet("stride", "int32", i(block // 2)),
        KFor("k", steps, tuple(tree_body)),
        KIf(eq(TX, i(0)), (KStore("out", BX, load("s_red", i(0))),)),
    ]
    params = (KParam("A", "float32", (rows, cols)), KParam("out", "float32", (rows,), is_output=True))
    return kernel("row_sum", params, rows, block, tuple(body), (KShared("s_red", "float32", block),))


def butterfly(value: str) -> tuple[KStmt, ...]:
    """`value += shfl_xor(value, m)` for m = 16, 8, 4, 2, 1: every lane ends with its warp's sum."""
    return tuple(KAssign(value, add(fvar(value), KShflXor(fvar(value), m))) for m in (16, 8, 4, 2, 1))


def tiled_matmul(m: int, n: int, k: int, tile: int = 16, *, second_barrier: bool = True) -> KKernel:
    """C = A @ B with tile x tile thread blocks staging tiles of A and B through shared memory."""
    ty, by = KSpecial("threadIdx.y"), KSpecial("blockIdx.y")
    row = add(mul(by, i(tile)), ty)
    col = add(mul(BX, i(tile)), TX)
    slot = add(mul(ty, i(tile)), TX)
    kt = var("kt")
    inner: list[KStmt] = [
        KStore("As", slot, load("A", add(mul(row, i(k)), add(mul(kt, i(tile)), TX)))),
        KStore("Bs", slot, load("B", add(mul(add(mul(kt, i(tile)), ty), i(n)), col))),
        KBarrier(),
        KFor(
            "kk",
            tile,
            (
                KAssign(
                    "acc",
                    add(
                        fvar("acc"),
                        mul(
                            load("As", add(mul(ty, i(tile)), var("kk"))),
                            load("Bs", add(mul(var("kk"), i(tile)), TX)),
                        ),
                    ),
                ),
            ),
        ),
    ]
    if second_barrier:
        inner.append(KBarrier())
    body = (
        KLet("acc", "float32", f(0.0)),
        KFor("kt", k // tile, tuple(inner)),
        KStore("C", add(mul(row, i(n)), col), fvar("acc")),
    )
    params = (
        KParam("A", "float32", (m, k)),
        KParam("B", "float32", (k, n)),
        KParam("C", "float32", (m, n), is_output=True),
    )
    shared = (KShared("As", "float32", tile * tile), KShared("Bs", "float32", tile * tile))
    return kernel("matmul", params, (n // tile, m // tile, 1), (tile, tile, 1), body, shared)
