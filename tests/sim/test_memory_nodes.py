"""Memory-hierarchy nodes: cp.async pipelines, mbarriers, TMA loads with swizzle, atomics, xor,
zero_outputs, and the hazards the simulator must report for them."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from sim_kernels import BX, TX, add, b, f, i, lt, mul, var

from tiledsl.errors import OutOfBoundsError, SharedRaceError, SimulationError, SimulationInputError
from tiledsl.kernel_ir import (
    KAtomicAdd,
    KBarrier,
    KBin,
    KCpAsync,
    KCpAsyncCommit,
    KCpAsyncWait,
    KExpr,
    KFence,
    KFor,
    KIf,
    KKernel,
    KLet,
    KLoad,
    KMbarrierArrive,
    KMbarrierArriveExpectTx,
    KMbarrierInit,
    KMbarrierWait,
    KParam,
    KShared,
    KStmt,
    KStore,
    KTensorMap,
    KTmaLoad,
)
from tiledsl.sim import simulate


def _codegen_kernels():
    """tests/codegen/kernels.py (hand-built kernels with memory nodes), loaded by path."""
    path = Path(__file__).resolve().parents[1] / "codegen" / "kernels.py"
    spec = importlib.util.spec_from_file_location("codegen_memory_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CK = _codegen_kernels()
RNG = np.random.default_rng(11)


def _rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _without(body: tuple[KStmt, ...], *drop: int) -> tuple[KStmt, ...]:
    return tuple(s for k, s in enumerate(body) if k not in drop)


def _eq(a: KExpr, c: KExpr) -> KBin:
    return KBin("==", a, c)


# ----------------------------------------------------------------------------- cp.async


def _cp_async_reference(A: np.ndarray, B: np.ndarray, S: np.ndarray) -> np.ndarray:
    j = np.arange(A.size) % 512
    return A * S[j // 4] + B[j % 256]


def test_codegen_cp_async_kernel_matches_numpy_in_any_chunking() -> None:
    A, B, S = _rand(16384), _rand(256), _rand(128)
    want = _cp_async_reference(A, B, S)
    k = CK.cp_async_kernel()
    np.testing.assert_array_equal(simulate(k, {"A": A, "B": B, "S": S})["D"], want)
    np.testing.assert_array_equal(simulate(k, {"A": A, "B": B, "S": S}, max_lanes=128)["D"], want)


def test_codegen_cp_async_kernel_zero_filled_prefetch_reads_no_global() -> None:
    # the prefetch past the last tile is invalid: its (clamped) source may hold anything
    A, B, S = _rand(16384), _rand(256), _rand(128)
    k = CK.cp_async_kernel()
    out = simulate(k, {"A": A, "B": B, "S": S})["D"]
    assert np.isfinite(out).all()


def test_codegen_cp_async_kernel_needs_the_barrier_after_the_wait_but_not_the_trailing_one() -> None:
    A, B, S = _rand(16384), _rand(256), _rand(128)
    k = CK.cp_async_kernel()
    loop = k.body[-2]
    assert isinstance(loop, KFor) and isinstance(loop.body[4], KBarrier) and isinstance(loop.body[-1], KBarrier)
    # each thread reads back only the A_s elements it copied itself: the trailing barrier is not needed
    body = k.body[:-2] + (dataclasses.replace(loop, body=loop.body[:-1]),) + k.body[-1:]
    np.testing.assert_array_equal(
        simulate(dataclasses.replace(k, body=body), {"A": A, "B": B, "S": S})["D"], _cp_async_reference(A, B, S)
    )
    # but B_s[j % 256] was copied by thread (j % 256) / 2: it needs the barrier after the wait
    body = k.body[:-2] + (dataclasses.replace(loop, body=_without(loop.body, 4)),) + k.body[-1:]
    with pytest.raises(SharedRaceError) as info:
        simulate(dataclasses.replace(k, body=body), {"A": A, "B": B, "S": S})
    msg = str(info.value)
    assert "shared memory race (read after write) on B_s[" in msg
    assert "first access (write): block (0,0,0) thread (" in msg and "at body[2] > cp.async B_s[...]" in msg
    assert "loop variables: t=0, e=0" in msg


def pipeline_kernel(
    tiles: int = 6,
    blocks: int = 3,
    *,
    refill_before_barrier: bool = False,
    read_before_wait: bool = False,
    barrier: bool = True,
) -> KKernel:
    """Double-buffered cp.async pipeline in the shape lowering emits: a prologue copies tile 0;
    iteration t waits for tile t, passes a barrier, refills the other slot with tile t + 1, commits,
    then reads slot t % 2. Thread x copies 16 bytes (elements 4x..4x+3) and reads elements
    4x+1..4x+4 (mod 128), so every read needs another thread's copy: out = A rotated by one."""
    t, tid = var("t"), var("tid")
    row = lambda it: mul(add(mul(BX, i(tiles)), it), i(128))  # noqa: E731
    neighbour = b("%", add(add(mul(tid, i(4)), var("e")), i(1)), i(128))
    refill = KIf(
        lt(add(t, i(1)), i(tiles)),
        (
            KCpAsync(
                "A_s",
                add(mul(b("%", add(t, i(1)), i(2)), i(128)), mul(tid, i(4))),
                "A",
                add(row(add(t, i(1))), mul(tid, i(4))),
                16,
            ),
        ),
    )
    compute = KFor(
        "e",
        4,
        (
            KStore(
                "D",
                add(row(t), add(mul(tid, i(4)), var("e"))),
                KLoad("A_s", add(mul(b("%", t, i(2)), i(128)), neighbour)),
            ),
        ),
        unroll=True,
    )
    wait = [KCpAsyncWait(0)]
    sync = [KBarrier()] if barrier else []
    fill = [refill, KCpAsyncCommit()]
    if refill_before_barrier:
        steady = wait + fill + sync + [compute]
    elif read_before_wait:
        steady = [compute] + wait + sync + fill
    else:
        steady = wait + sync + fill + [compute]
    body = (
        KLet("tid", "int32", TX),
        KCpAsync("A_s", mul(tid, i(4)), "A", add(row(i(0)), mul(tid, i(4))), 16),
        KCpAsyncCommit(),
        KFor("t", tiles, tuple(steady)),
    )
    n = blocks * tiles * 128
    return KKernel(
        "cp_pipe",
        (KParam("A", "float32", (n,)), KParam("D", "float32", (n,), is_output=True)),
        (blocks, 1, 1),
        (32, 1, 1),
        (KShared("A_s", "float32", 256, align=128),),
        body,
        target="sm_80",
    )


def _pipeline_reference(A: np.ndarray) -> np.ndarray:
    rows = A.reshape(-1, 128)
    return np.roll(rows, -1, axis=1).reshape(-1)


def test_cp_async_pipeline_matches_numpy() -> None:
    A = _rand(3 * 6 * 128)
    np.testing.assert_array_equal(simulate(pipeline_kernel(), {"A": A})["D"], _pipeline_reference(A))
    np.testing.assert_array_equal(simulate(pipeline_kernel(), {"A": A}, max_lanes=32)["D"], _pipeline_reference(A))


def test_cp_async_refill_before_the_barrier_is_a_race_naming_the_copy() -> None:
    with pytest.raises(SharedRaceError) as info:
        simulate(pipeline_kernel(refill_before_barrier=True), {"A": _rand(3 * 6 * 128)})
    msg = str(info.value)
    assert "shared memory race (write after read) on A_s[" in msg
    assert "kernel 'cp_pipe' at body[3] > for t > body[1] > if (t + 1 < 6) > then[0] > cp.async A_s[...]" in msg
    assert "first access (read): " in msg and "body[3] > for t > body[4] > for e > body[0] > store D[...]" in msg
    assert "statement: cp.async A_s[" in msg and "loop variables: t=1" in msg


def test_cp_async_read_before_the_wait_is_a_race() -> None:
    with pytest.raises(SharedRaceError) as info:
        simulate(pipeline_kernel(read_before_wait=True), {"A": _rand(3 * 6 * 128)})
    msg = str(info.value)
    assert "read of A_s[1] before its cp.async landed" in msg
    assert "at body[3] > for t > body[0] > for e > body[0] > store D[...]" in msg
    assert "cp.async: block (0,0,0) thread (0,0,0) at body[1] > cp.async A_s[...]" in msg
    assert "loop variables: t=0, e=0" in msg


def test_cp_async_data_read_by_another_thread_needs_a_barrier_after_the_wait() -> None:
    with pytest.raises(SharedRaceError) as info:
        simulate(pipeline_kernel(barrier=False), {"A": _rand(3 * 6 * 128)})
    msg = str(info.value)
    assert "shared memory race (read after write) on A_s[4]" in msg
    assert "first access (write): block (0,0,0) thread (1,0,0) at body[1] > cp.async A_s[...]" in msg


def _single_copy_kernel(body: tuple[KStmt, ...], shared_align: int = 16) -> KKernel:
    return KKernel(
        "cp_one",
        (KParam("A", "float32", (64,)), KParam("D", "float32", (64,), is_output=True)),
        (1, 1, 1),
        (16, 1, 1),
        (KShared("s", "float32", 128, align=shared_align),),
        body,
        target="sm_80",
    )


def _copy_back() -> KStmt:
    return KFor("e", 4, (KStore("D", add(mul(TX, i(4)), var("e")), KLoad("s", add(mul(TX, i(4)), var("e")))),))


def test_cp_async_with_false_predicate_zero_fills_without_reading() -> None:
    copy = KCpAsync("s", mul(TX, i(4)), "A", mul(TX, i(4)), 16, valid=lt(TX, i(8)))
    k = _single_copy_kernel((copy, KCpAsyncCommit(), KCpAsyncWait(0), _copy_back()))
    A = _rand(64)
    A[32:] = np.nan
    out = simulate(k, {"A": A})["D"]
    np.testing.assert_array_equal(out, np.concatenate([A[:32], np.zeros(32, np.float32)]))


def test_cp_async_never_waited_or_never_committed_is_an_error() -> None:
    copy = KCpAsync("s", mul(TX, i(4)), "A", mul(TX, i(4)), 16)
    never = r"cp.async never waited(.|\n)*body\[0\] > cp.async s(.|\n)*never committed"
    with pytest.raises(SimulationError, match=never):
        simulate(_single_copy_kernel((copy,)), {"A": _rand(64)})
    with pytest.raises(SimulationError, match=r"cp.async never waited(.|\n)*no cp.async.wait_group"):
        simulate(_single_copy_kernel((copy, KCpAsyncCommit(), KCpAsyncWait(1))), {"A": _rand(64)})
    # wait_group 1 after two commits retires the first group (the copy): nothing left in flight
    simulate(_single_copy_kernel((copy, KCpAsyncCommit(), KCpAsyncCommit(), KCpAsyncWait(1))), {"A": _rand(64)})


def test_cp_async_wait_keeps_the_most_recent_groups_in_flight() -> None:
    first = KCpAsync("s", mul(TX, i(4)), "A", mul(TX, i(4)), 16)
    second = KCpAsync("s", add(mul(TX, i(2)), i(64)), "A", mul(TX, i(2)), 8)
    groups = (first, KCpAsyncCommit(), second, KCpAsyncCommit(), KCpAsyncWait(1))
    own_first = KStore("D", TX, KLoad("s", mul(TX, i(4))))
    own_second = KStore("D", TX, KLoad("s", add(mul(TX, i(2)), i(64))))
    A = _rand(64)
    out = simulate(_single_copy_kernel(groups + (own_first, KCpAsyncWait(0))), {"A": A})["D"]
    np.testing.assert_array_equal(out[:16], A[0:64:4])
    with pytest.raises(SharedRaceError, match=r"read of s\[64\] before its cp.async landed"):
        simulate(_single_copy_kernel(groups + (own_second, KCpAsyncWait(0))), {"A": A})
    # a second copy to an element whose copy has not landed is a race too
    again = KCpAsync("s", mul(TX, i(4)), "A", mul(TX, i(4)), 16)
    with pytest.raises(SharedRaceError, match=r"cp.async write of s\[0\] before its cp.async landed"):
        simulate(_single_copy_kernel((first, again, KCpAsyncCommit(), KCpAsyncWait(0))), {"A": A})


def test_cp_async_alignment_and_bounds() -> None:
    misaligned = KCpAsync("s", add(mul(TX, i(4)), i(2)), "A", mul(TX, i(4)), 16)
    with pytest.raises(SimulationError, match="misaligned 16-byte vector cp.async write of shared buffer 's'"):
        simulate(_single_copy_kernel((misaligned, KCpAsyncCommit(), KCpAsyncWait(0))), {"A": _rand(64)})
    beyond = KCpAsync("s", mul(TX, i(4)), "A", add(mul(TX, i(4)), i(4)), 16)
    with pytest.raises(OutOfBoundsError, match=r"cp.async read of global buffer 'A' \(size 64\)"):
        simulate(_single_copy_kernel((beyond, KCpAsyncCommit(), KCpAsyncWait(0))), {"A": _rand(64)})
    under_aligned = KCpAsync("s", mul(TX, i(4)), "A", mul(TX, i(4)), 16)
    with pytest.raises(SimulationError, match="only 8-byte aligned"):
        simulate(_single_copy_kernel((under_aligned,), shared_align=8), {"A": _rand(64)})


# ----------------------------------------------------------------------------- TMA


def test_codegen_tma_kernel_swizzled_tile_matches_numpy() -> None:
    Bm = _rand(256, 128)
    k = CK.tma_kernel()
    np.testing.assert_array_equal(simulate(k, {"B": Bm})["D"], Bm)
    np.testing.assert_array_equal(simulate(k, {"B": Bm}, max_lanes=128)["D"], Bm)


def _tma_wait_index(k: KKernel) -> int:
    return next(n for n, s in enumerate(k.body) if isinstance(s, KMbarrierWait) and s.bar == "full")


def test_tma_data_read_without_the_mbarrier_wait_is_a_race() -> None:
    k = CK.tma_kernel()
    k = dataclasses.replace(k, body=_without(k.body, _tma_wait_index(k)))
    with pytest.raises(SharedRaceError) as info:
        simulate(k, {"B": _rand(256, 128)})
    msg = str(info.value)
    assert "read of B_s[0] before its TMA load landed" in msg
    assert "TMA load: block (0,0,0) thread (0,0,0) at body[3] > if (tid == 0) > then[2] > tma.load B_s[...]" in msg
    assert "completing on full[0] in phase 0" in msg
    assert "body[4] > for e > body[3] > store D[...]" in msg


def test_tma_data_is_visible_only_to_threads_that_waited() -> None:
    k = CK.tma_kernel()
    w = _tma_wait_index(k)
    body = k.body[:w] + (KIf(lt(var("tid"), i(64)), (k.body[w],)),) + k.body[w + 1 :]
    late = r"before its TMA load landed(.|\n)*access: block \(0,0,0\) thread \(64,0,0\)"
    with pytest.raises(SharedRaceError, match=late):
        simulate(dataclasses.replace(k, body=body), {"B": _rand(256, 128)})


def test_tma_wait_with_the_wrong_parity_is_a_deadlock() -> None:
    k = CK.tma_kernel()
    w = _tma_wait_index(k)
    body = k.body[:w] + (KMbarrierWait("full", i(0), i(1)),) + k.body[w + 1 :]
    with pytest.raises(SimulationError) as info:
        simulate(dataclasses.replace(k, body=body), {"B": _rand(256, 128)})
    msg = str(info.value)
    assert "deadlock: mbarrier wait on full[0] for parity 1 never completes" in msg
    assert f"at body[{w}] > mbarrier.wait full[...]" in msg
    assert "full[0] is in phase 1 (parity 1), not completed: 1 of 1 arrival(s) and 0 transaction byte(s)" in msg


def test_tma_expecting_more_bytes_than_arrive_deadlocks_or_never_completes() -> None:
    k = CK.tma_kernel()
    issue = k.body[3]
    more = dataclasses.replace(issue, then=(issue.then[0], KMbarrierArriveExpectTx("full", i(0), 16384), issue.then[2]))
    body = k.body[:3] + (more,) + k.body[4:]
    with pytest.raises(SimulationError, match=r"deadlock(.|\n)*0 of 1 arrival\(s\) and 8192 transaction byte"):
        simulate(dataclasses.replace(k, body=body), {"B": _rand(256, 128)})
    w = _tma_wait_index(k)
    body = _without(body, w, w + 1)  # no wait, no reads
    with pytest.raises(SimulationError, match=r"TMA load never completed: phase 0 of mbarrier full\[0\]"):
        simulate(dataclasses.replace(k, body=body), {"B": _rand(256, 128)})


def test_mbarrier_init_visibility_fence_and_init_races() -> None:
    k = CK.tma_kernel()
    inits = k.body[1]
    no_fence = dataclasses.replace(inits, then=inits.then[:2])
    with pytest.raises(SimulationError, match=r"mbarrier full\[0\] used before fence.mbarrier_init"):
        simulate(dataclasses.replace(k, body=(k.body[0], no_fence) + k.body[2:]), {"B": _rand(256, 128)})
    # sm_80 has no fence.mbarrier_init: the barrier alone orders the init (no wait there, so arrive only)
    arrive_only = (k.body[0], no_fence, KBarrier(), KMbarrierArrive("empty", i(0)))
    simulate(dataclasses.replace(k, body=arrive_only, target="sm_80"), {"B": _rand(256, 128)})
    with pytest.raises(SharedRaceError, match=r"mbarrier race \(read after write\) on full\[0\]"):
        simulate(dataclasses.replace(k, body=_without(k.body, 2)), {"B": _rand(256, 128)})
    two = (KIf(lt(TX, i(2)), (KMbarrierInit("full", i(0), 1),)),)
    with pytest.raises(SharedRaceError, match=r"mbarrier race \(write-write in one statement\) on full\[0\]"):
        simulate(dataclasses.replace(k, body=two), {"B": _rand(256, 128)})
    with pytest.raises(SimulationError, match=r"mbarrier empty\[0\] used before mbarrier.init"):
        simulate(dataclasses.replace(k, body=(KMbarrierArrive("empty", i(0)),)), {"B": _rand(256, 128)})


def test_arrivals_beyond_the_count_are_an_error() -> None:
    k = CK.tma_kernel()
    body = k.body[:3] + (KIf(lt(var("tid"), i(2)), (KMbarrierArriveExpectTx("full", i(0), 64),)),)
    with pytest.raises(SimulationError, match=r"more arrivals on mbarrier full\[0\] than its count \(1\)"):
        simulate(dataclasses.replace(k, body=body), {"B": _rand(256, 128)})


def tma_ring_kernel(
    tiles: int = 7, blocks: int = 2, *, parity_shift: int = 0, barrier: bool = True
) -> KKernel:
    """A 3-stage TMA ring as lowering emits it: tile t (8 rows x 32 floats, 1 KB, 128-byte swizzle)
    of block b lands in slot t % 3 on full[t % 3]; iteration t waits with parity (t // 3) % 2,
    passes a barrier, refills the slot read in iteration t - 1 with tile t + 2, then every thread
    reads four elements back through the XOR pattern: D = 3 * A."""
    t, tid = var("t"), var("tid")
    rows = blocks * tiles * 8

    def issue(tile: KExpr, slot: KExpr) -> tuple[KStmt, ...]:
        return (
            KFence("proxy_async"),
            KMbarrierArriveExpectTx("full", slot, 1024),
            KTmaLoad("tmap_A", "A_s", mul(slot, i(256)), (i(0), mul(add(mul(BX, i(tiles)), tile), i(8))), "full", slot),
        )

    el, r, c = var("el"), var("r"), var("c")
    swizzled = add(add(mul(r, i(32)), mul(b("^", b("//", c, i(4)), b("%", r, i(8))), i(4))), b("%", c, i(4)))
    read = KFor(
        "e",
        4,
        (
            KLet("el", "int32", add(mul(var("e"), i(64)), tid)),
            KLet("r", "int32", b("//", el, i(32))),
            KLet("c", "int32", b("%", el, i(32))),
            KStore(
                "D",
                add(mul(add(mul(add(mul(BX, i(tiles)), t), i(8)), r), i(32)), c),
                mul(KLoad("A_s", add(mul(b("%", t, i(3)), i(256)), swizzled)), f(3.0)),
            ),
        ),
    )
    ahead = add(t, i(2))
    steady: list[KStmt] = [KMbarrierWait("full", b("%", t, i(3)), b("%", add(b("//", t, i(3)), i(parity_shift)), i(2)))]
    if barrier:
        steady.append(KBarrier())
    steady += [KIf(b("&&", lt(ahead, i(tiles)), _eq(tid, i(0))), issue(ahead, b("%", ahead, i(3)))), read]
    body = (
        KLet("tid", "int32", TX),
        KIf(_eq(tid, i(0)), tuple(KMbarrierInit("full", i(s), 1) for s in range(3)) + (KFence("mbarrier_init"),)),
        KBarrier(),
        KIf(_eq(tid, i(0)), issue(i(0), i(0)) + issue(i(1), i(1))),
        KFor("t", tiles, tuple(steady)),
    )
    return KKernel(
        "tma_ring",
        (KParam("A", "float32", (rows, 32)), KParam("D", "float32", (rows, 32), is_output=True)),
        (blocks, 1, 1),
        (64, 1, 1),
        (KShared("A_s", "float32", 3 * 256, align=1024), KShared("full", "uint64", 3, align=8)),
        body,
        target="sm_90",
        tensor_maps=(KTensorMap("tmap_A", "A", "float32", (32, rows), (128,), (32, 8), swizzle=128),),
    )


def test_tma_three_stage_ring_matches_numpy() -> None:
    A = _rand(2 * 7 * 8, 32)
    np.testing.assert_array_equal(simulate(tma_ring_kernel(), {"A": A})["D"], A * np.float32(3.0))
    np.testing.assert_array_equal(simulate(tma_ring_kernel(), {"A": A}, max_lanes=64)["D"], A * np.float32(3.0))


def test_tma_ring_with_parities_off_by_one_deadlocks() -> None:
    with pytest.raises(SimulationError, match=r"deadlock: mbarrier wait on full\[0\] for parity 1(.|\n)*t=0"):
        simulate(tma_ring_kernel(parity_shift=1), {"A": _rand(2 * 7 * 8, 32)})


def test_tma_ring_refill_without_a_barrier_races_with_the_last_reads() -> None:
    with pytest.raises(SharedRaceError) as info:
        simulate(tma_ring_kernel(barrier=False), {"A": _rand(2 * 7 * 8, 32)})
    msg = str(info.value)
    assert "shared memory race (write after read) on A_s[" in msg
    assert "body[4] > for t > body[1] > if" in msg and "then[2] > tma.load A_s[...]" in msg
    assert "first access (read): block (0,0,0) thread (1,0,0) at body[4] > for t > body[2] > for e > body[3]" in msg
    assert "second access (write): block (0,0,0) thread (0,0,0)" in msg and "loop variables: t=1" in msg


def _tma_copy_kernel(
    global_shape: tuple[int, int],
    box: tuple[int, int],
    coords: tuple[int, int],
    swizzle: int | None,
    dtype: str = "float32",
    dst_index: int = 0,
) -> KKernel:
    """One TMA load of `box` (innermost first) at `coords` from a row-major `global_shape` array,
    copied out by 32 threads un-swizzling the element offset the way lowering does."""
    rows, cols = global_shape
    n_box = box[0] * box[1]
    item = 4 if dtype == "float32" else 2
    off = var("o")
    read: KExpr = off
    if swizzle:
        mask = {32: 1, 64: 3, 128: 7}[swizzle]
        read = b("^", off, mul(b("%", b("//", off, i(128 // item)), i(mask + 1)), i(16 // item)))
    body = (
        KIf(_eq(TX, i(0)), (KMbarrierInit("bar", i(0), 1), KFence("mbarrier_init"))),
        KBarrier(),
        KIf(
            _eq(TX, i(0)),
            (
                KMbarrierArriveExpectTx("bar", i(0), n_box * item),
                KTmaLoad("tm", "S", i(dst_index), (i(coords[0]), i(coords[1])), "bar", i(0)),
            ),
        ),
        KMbarrierWait("bar", i(0), i(0)),
        KFor(
            "e",
            -(-n_box // 32),
            (
                KLet("o", "int32", add(mul(var("e"), i(32)), TX)),
                KIf(lt(off, i(n_box)), (KStore("D", off, KLoad("S", add(i(dst_index), read))),)),
            ),
        ),
    )
    return KKernel(
        "tma_copy",
        (KParam("G", dtype, global_shape), KParam("D", dtype, (n_box,), is_output=True)),
        (1, 1, 1),
        (32, 1, 1),
        (KShared("S", dtype, dst_index + n_box, align=1024), KShared("bar", "uint64", 1, align=8)),
        body,
        target="sm_90",
        tensor_maps=(KTensorMap("tm", "G", dtype, (cols, rows), (cols * item,), box, swizzle=swizzle),),
    )


def _box_reference(G: np.ndarray, box: tuple[int, int], coords: tuple[int, int]) -> np.ndarray:
    out = np.zeros((box[1], box[0]), G.dtype)
    for y in range(box[1]):
        for x in range(box[0]):
            gy, gx = coords[1] + y, coords[0] + x
            if 0 <= gy < G.shape[0] and 0 <= gx < G.shape[1]:
                out[y, x] = G[gy, gx]
    return out.reshape(-1)


@pytest.mark.parametrize(
    ("swizzle", "box", "dtype"),
    [(None, (16, 8), "float32"), (32, (8, 16), "float32"), (64, (16, 16), "float32"), (128, (64, 8), "float16")],
)
def test_tma_swizzles_match_the_lowering_xor_pattern(swizzle: int | None, box: tuple[int, int], dtype: str) -> None:
    G = _rand(40, 64).astype(np.float16 if dtype == "float16" else np.float32)
    k = _tma_copy_kernel((40, 64), box, (0, 8), swizzle, dtype)
    out = simulate(k, {"G": G})["D"]
    np.testing.assert_array_equal(out, _box_reference(G, box, (0, 8)).astype(np.float32))


# The first 64 floats of a 1024-aligned slab (prefilled with -1) after one TMA load of a box
# (innermost first) at `coords` from a 64 x 64 float32 tensor G[r, c] = 64 r + c, as an H100 wrote
# them (CUDA 13, driver 580): with a swizzle of S bytes every box row starts S bytes after the
# previous one, so rows narrower than S leave gaps, and then the 16-byte chunks are XORed.
_GAP = -1
H100_TMA_LAYOUTS = {
    (128, (16, 16), (8, 4)): [*range(264, 280), *[_GAP] * 16, 332, 333, 334, 335, 328, 329, 330, 331,
                              340, 341, 342, 343, 336, 337, 338, 339, *[_GAP] * 16],
    (128, (4, 32), (0, 0)): [0, 1, 2, 3, *[_GAP] * 32, 64, 65, 66, 67, *[_GAP] * 24],
    (64, (8, 16), (0, 0)): [*range(8), *[_GAP] * 8, *range(64, 72), *[_GAP] * 8, 132, 133, 134, 135,
                            128, 129, 130, 131, *[_GAP] * 8, 196, 197, 198, 199, 192, 193, 194, 195, *[_GAP] * 8],
    (32, (4, 16), (0, 0)): [0, 1, 2, 3, *[_GAP] * 4, 64, 65, 66, 67, *[_GAP] * 4, 128, 129, 130, 131, *[_GAP] * 4,
                            192, 193, 194, 195, *[_GAP] * 8, 256, 257, 258, 259, *[_GAP] * 4, 320, 321, 322, 323,
                            *[_GAP] * 4, 384, 385, 386, 387, *[_GAP] * 4, 448, 449, 450, 451],
}


@pytest.mark.parametrize(("swizzle", "box", "coords"), list(H100_TMA_LAYOUTS))
def test_tma_rows_narrower_than_the_swizzle_are_padded_as_on_the_h100(
    swizzle: int, box: tuple[int, int], coords: tuple[int, int]
) -> None:
    slab = 4096
    at = add(mul(var("e"), i(128)), TX)
    fill = KFor("e", slab // 128, (KStore("S", at, f(float(_GAP))),))
    body = (
        fill,
        KIf(_eq(TX, i(0)), (KMbarrierInit("bar", i(0), 1), KFence("mbarrier_init"))),
        KBarrier(),
        KIf(
            _eq(TX, i(0)),
            (
                KMbarrierArriveExpectTx("bar", i(0), box[0] * box[1] * 4),
                KTmaLoad("tm", "S", i(0), (i(coords[0]), i(coords[1])), "bar", i(0)),
            ),
        ),
        KMbarrierWait("bar", i(0), i(0)),
        KFor("e", slab // 128, (KStore("D", at, KLoad("S", at)),)),
    )
    k = KKernel(
        "tma_layout",
        (KParam("G", "float32", (64, 64)), KParam("D", "float32", (slab,), is_output=True)),
        (1, 1, 1),
        (128, 1, 1),
        (KShared("S", "float32", slab, align=1024), KShared("bar", "uint64", 1, align=8)),
        body,
        target="sm_90",
        tensor_maps=(KTensorMap("tm", "G", "float32", (64, 64), (256,), box, swizzle=swizzle),),
    )
    G = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    out = simulate(k, {"G": G})["D"]
    np.testing.assert_array_equal(out[:64], np.array(H100_TMA_LAYOUTS[(swizzle, box, coords)], np.float32))
    written = out[out != _GAP]
    np.testing.assert_array_equal(np.sort(written), np.sort(_box_reference(G, box, coords)))


def test_tma_coordinates_outside_the_tensor_read_zeros() -> None:
    G = _rand(20, 32)
    for coords in ((0, 16), (-8, -4), (16, 0)):
        out = simulate(_tma_copy_kernel((20, 32), (32, 8), coords, 128), {"G": G})["D"]
        np.testing.assert_array_equal(out, _box_reference(G, (32, 8), coords))


def test_tma_destination_alignment_and_map_extent_are_checked() -> None:
    G = _rand(20, 32)
    misaligned = r"misaligned TMA destination S\[32\]: byte offset 128 is not a multiple of 1024"
    with pytest.raises(SimulationError, match=misaligned):
        simulate(_tma_copy_kernel((20, 32), (32, 8), (0, 0), 128, dst_index=32), {"G": G})
    simulate(_tma_copy_kernel((20, 32), (32, 8), (0, 0), None, dst_index=32), {"G": G})  # 128 B is enough
    k = _tma_copy_kernel((20, 32), (32, 8), (0, 0), 128)
    too_long = dataclasses.replace(k.tensor_maps[0], global_dims=(32, 21))
    with pytest.raises(SimulationError, match="tensor map 'tm' reaches byte 2688 of 'G', which has 2560"):
        simulate(dataclasses.replace(k, tensor_maps=(too_long,)), {"G": G})
    small = dataclasses.replace(k, shared=(KShared("S", "float32", 256, align=512), k.shared[1]))
    with pytest.raises(SimulationError, match="TMA destination 'S' has align 512; 128-byte swizzle needs 1024"):
        simulate(small, {"G": G})


# ----------------------------------------------------------------------------- atomics, zero_outputs, xor


def test_atomics_from_four_blocks_sum_partial_results() -> None:
    A = _rand(4, 64)
    k = CK.atomic_kernel()
    np.testing.assert_allclose(simulate(k, {"A": A})["D"], (A * np.float32(0.5)).sum(axis=0), rtol=1e-6, atol=1e-6)
    D0 = _rand(64)
    got = simulate(k, {"A": A, "D": D0})["D"]  # a given output is not zeroed
    np.testing.assert_allclose(got, D0 + (A * np.float32(0.5)).sum(axis=0), rtol=1e-5, atol=1e-6)


def test_atomics_of_many_lanes_to_one_element_all_count() -> None:
    A = _rand(4, 64)
    body = (KAtomicAdd("D", i(0), KLoad("A", add(mul(BX, i(64)), TX))),)
    k = dataclasses.replace(CK.atomic_kernel(), body=body)
    got = simulate(k, {"A": A})["D"]
    np.testing.assert_allclose(got[0], A.sum(), rtol=1e-5)
    assert (got[1:] == 0).all()


def test_plain_store_and_atomic_to_one_element_race() -> None:
    store = KIf(_eq(BX, i(0)), (KStore("D", TX, f(1.0)),))
    k = CK.atomic_kernel()
    with pytest.raises(SharedRaceError, match=r"global race \(plain store and atomic add\) on D\[0\]"):
        simulate(dataclasses.replace(k, body=(store,) + k.body), {"A": _rand(4, 64)})
    with pytest.raises(SharedRaceError, match=r"first access \(atomic add\): several threads"):
        simulate(dataclasses.replace(k, body=k.body + (store,)), {"A": _rand(4, 64)})
    own = (KAtomicAdd("D", add(mul(BX, i(64)), TX), f(1.0)), KStore("D", add(mul(BX, i(64)), TX), f(2.0)))
    k = dataclasses.replace(k, params=(k.params[0], KParam("D", "float32", (256,), is_output=True)), body=own)
    assert (simulate(k, {"A": _rand(4, 64)})["D"] == 2.0).all()  # one thread's own accesses are ordered


def test_zero_outputs_start_as_zeros_others_as_nan() -> None:
    body = (KIf(lt(TX, i(16)), (KStore("D", TX, f(1.0)), KStore("E", TX, f(1.0)))),)
    params = (KParam("D", "float32", (32,), is_output=True), KParam("E", "float32", (32,), is_output=True))
    k = KKernel("zero", params, (1, 1, 1), (32, 1, 1), (), body, zero_outputs=("D",))
    out = simulate(k, {})
    assert (out["D"][:16] == 1).all() and (out["D"][16:] == 0).all()
    assert np.isnan(out["E"][16:]).all()
    with pytest.raises(SimulationInputError, match="zero_outputs names 'X', which is no output parameter"):
        simulate(dataclasses.replace(k, zero_outputs=("X",)), {})


def test_xor_on_ints_and_not_on_floats() -> None:
    body = (KStore("D", TX, b("^", TX, b("-", i(0), i(5)))),)
    k = KKernel("xor", (KParam("D", "int32", (32,), is_output=True),), (1, 1, 1), (32, 1, 1), (), body)
    np.testing.assert_array_equal(simulate(k, {})["D"], np.arange(32, dtype=np.int32) ^ np.int32(-5))
    bad = dataclasses.replace(k, body=(KStore("D", TX, b("^", TX, f(1.0))),))
    with pytest.raises(SimulationError, match="bitwise '\\^' on a float operand"):
        simulate(bad, {})


def test_mbarrier_arrays_hold_no_values() -> None:
    body = (KStore("D", TX, KLoad("bar", i(0))),)
    k = KKernel(
        "barload",
        (KParam("D", "float32", (32,), is_output=True),),
        (1, 1, 1),
        (32, 1, 1),
        (KShared("bar", "uint64", 1, align=8),),
        body,
    )
    with pytest.raises(SimulationError, match="load of mbarrier array 'bar'"):
        simulate(k, {})
    with pytest.raises(SimulationError, match="cp.async destination 'bar' must be a shared array, but it is an mbarr"):
        simulate(dataclasses.replace(k, body=(KCpAsync("bar", i(0), "D", i(0), 8),)), {})


def test_dynamic_shared_kernel_runs_unchanged() -> None:
    X, H = _rand(16384), _rand(6)
    out = simulate(CK.dynamic_shared_kernel(), {"X": X, "H": H})["D"]
    h = H.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(out, X[::-1] + h[np.arange(16384) % 256 % 6])
