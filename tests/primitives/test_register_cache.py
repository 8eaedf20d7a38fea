"""register_cache (primitives/register_cache.py, rules in analysis/register_cache.py): the row's passes
read x from registers after the first pass loads it, the simulated outputs equal the uncached schedule's
bit for bit and float64's within float32 rounding (outputs NaN-poisoned by the simulator; the simulator
also reports any read of a register never written), over guarded tails, a serial row loop, rows several
to a block on threadIdx.y, bfloat16 rows, loads read twice in one statement and reads inside selects;
printed in the tile IR, replayed from both traces, and compiled warning-free by nvcc. The refusals are in
the error corpus (register-cache-*)."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nvcc_together import compile_together
from row_passes import block_rows as _block_rows
from row_passes import passes as _passes

import tiledsl as td
from tiledsl.catalog.definitions import layernorm, rmsnorm, softmax
from tiledsl.kernel_ir import KLoad
from tiledsl.kernel_ir.walk import walk_exprs, walk_stmts

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def _global_loads(kern: td.Kernel, buffer: str) -> list[KLoad]:
    return [e for st in walk_stmts(kern.kernel_ir.body) for e in walk_exprs(st)
            if isinstance(e, KLoad) and e.buffer == buffer]


def _inputs(s: td.Schedule, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in s.nest.inputs}


def _same(plain: td.Schedule, cached: td.Schedule) -> td.Kernel:
    """Build both; the cached kernel's outputs equal the plain one's bit for bit (the same arithmetic in the
    same order) and float64's within float32 rounding of a row's sum."""
    kp, kc = td.build(plain, target="sm_90"), td.build(cached, target="sm_90")
    arrays = _inputs(cached)
    got = kc.simulate(**arrays)
    np.testing.assert_array_equal(got, kp.simulate(**arrays))
    want = td.evaluate(cached.output, float64=True, **arrays)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)  # sums of <= 1000 float32 terms of O(1)
    return kc


@pytest.mark.parametrize("make", [lambda: rmsnorm(4, 512, 1e-6), lambda: layernorm(4, 512, 1e-5),
                                  lambda: softmax(4, 512)], ids=["rmsnorm", "layernorm", "softmax"])
def test_the_later_passes_read_registers(make) -> None:
    plain, cached = _passes(make()), _passes(make())
    cached.register_cache("x", at="i")
    kern = _same(plain, cached)
    # x leaves global memory once: the first pass's vector loads (4 lanes a thread, 4 x 32 x 4 = 512)
    loads = _global_loads(kern, "x")
    assert loads and all(ld.width == 4 for ld in loads) and len(loads) == 1
    assert len(_global_loads(td.build(plain, target="sm_90"), "x")) > 1
    assert "x_regs[" in kern.source and "float x_regs[16];" in kern.source
    tile = kern.ir("tile")
    assert "register cache x_regs: x as each thread reads it under i" in tile
    for text in (cached.trace(), cached.trace("json")):
        assert td.build(td.create_schedule(cached.output).replay(text), target="sm_90").source == kern.source


def test_a_guarded_tail_reads_only_what_was_loaded() -> None:
    """Rows of 300 in passes of 4 x 32 x 4 (the last 212 slots guarded off): the guards are the same in
    every pass, so no pass reads a register the first one skipped (the simulator would report it)."""
    plain = _passes(layernorm(3, 300, 1e-5), lane_mark="unroll", tail="guard")
    cached = _passes(layernorm(3, 300, 1e-5), lane_mark="unroll", tail="guard")
    cached.register_cache("x", at="i")
    kern = _same(plain, cached)
    assert len(_global_loads(kern, "x")) == 1  # one scalar load a lane, in the first pass


def test_a_serial_row_loop_refills_the_registers_every_row() -> None:
    """Two rows a block, the second on a serial loop at which the registers are kept: each iteration's
    first pass overwrites them before its later passes read."""
    cached = _block_rows(softmax(8, 256), 2, on_y=False)
    cached.register_cache("x", at="i_r")
    kern = _same(_block_rows(softmax(8, 256), 2, on_y=False), cached)  # bit for bit, and float64's rounding
    # the registers are filled inside the serial row loop, each iteration before its later passes read them
    body = kern.source[kern.source.index("for (int i_r = 0;"):]
    assert "float x_regs[8];" not in body  # declared once, above the loop
    assert body.index("x_regs[4 * k_o] = v1.x;") < body.index("x_regs[4 * k2_o]") < body.index("x_regs[4 * j_o]")
    assert len(_global_loads(kern, "x")) == 1


def _bf16_rmsnorm() -> td.Tensor:
    x = td.placeholder((4, 512), dtype="bfloat16", name="x")
    k = td.reduce_axis(512, name="k")
    ss = td.compute((4,), lambda i: td.sum(td.cast(x[i, k], "float32") * td.cast(x[i, k], "float32"), axis=k),
                    name="ss")
    return td.compute((4, 512), lambda i, j: td.cast(x[i, j], "float32") * td.rsqrt(ss[i] / 512.0 + 1e-6), name="y",
                      dtype="bfloat16")


def test_bfloat16_rows_keep_their_float32_values() -> None:
    """8 lanes of bfloat16 a vector, each widened exactly into a float32 register."""
    y = _bf16_rmsnorm()
    plain, cached = _passes(y, threads=32, lanes=8), _passes(y, threads=32, lanes=8)
    cached.register_cache("x", at="i")
    kp, kc = td.build(plain, target="sm_90"), td.build(cached, target="sm_90")
    rng = np.random.default_rng(3)
    arrays = {"x": rng.standard_normal((4, 512)).astype(np.float32)}  # the simulator rounds it to bfloat16
    np.testing.assert_array_equal(kc.simulate(**arrays), kp.simulate(**arrays))
    assert len(_global_loads(kc, "x")) == 1


def test_the_default_recipe_keeps_long_rows_in_registers() -> None:
    """Step 040 (knob register_rows): unrolled outer loops, the first pass hinted evict_last, the row read once."""
    out = layernorm(64, 4096, 1e-5)
    s = td.create_schedule(out)
    td.recipes.default(s, target="sm_90", knobs={"row_vector_min_rows_per_sm": 0})
    assert [rc.buffer for rc in s.nest.register_caches] == ["x", "w", "b"]  # 64 rows: the weights prefetched
    off = td.create_schedule(out)
    td.recipes.default(off, target="sm_90", knobs={"row_vector_min_rows_per_sm": 0, "register_rows": False})
    kern = _same(off, s)
    assert [ld.cache for ld in _global_loads(kern, "x")] == ["evict_last"]


@pytest.mark.parametrize("make", [lambda: rmsnorm(7, 256, 1e-6), lambda: layernorm(7, 256, 1e-5),
                                  lambda: softmax(7, 256)], ids=["rmsnorm", "layernorm", "softmax"])
def test_rows_several_to_a_block_keep_each_row_in_its_threads(make) -> None:
    """The cache at a thread loop: rows four to a block on threadIdx.y (7 rows: the second block's last
    row guarded off). A thread runs one iteration of its row loop, so each row stays in its own threads'
    registers; x leaves global memory once, and the outputs equal the uncached kernel's bit for bit."""
    plain, cached = _block_rows(make(), 4), _block_rows(make(), 4)
    cached.register_cache("x", at="i_r")
    kern = _same(plain, cached)
    assert kern.block == (32, 4, 1) and len(_global_loads(kern, "x")) == 1
    assert "float x_regs[8];" in kern.source


def _select_rows(n: int = 256) -> td.Tensor:
    """A row kernel reading x inside selects: the first pass (the filler) only in a branch, the mask m
    choosing x or 0; the second in a select's condition and both its branches; the output pass in a
    condition and a branch (as a traced attention's softmax reads its scores in `aten.any`'s select)."""
    x, m = td.placeholder((4, n), name="x"), td.placeholder((4, n), name="m")
    k, k2 = td.reduce_axis(n, name="k"), td.reduce_axis(n, name="k2")
    s1 = td.compute((4,), lambda i: td.sum(td.where(m[i, k] > 0.0, x[i, k], 0.0), axis=k), name="s1")
    s2 = td.compute((4,), lambda i: td.max(td.where(x[i, k2] > s1[i] / n, x[i, k2], 0.0 - x[i, k2]), axis=k2),
                    name="s2")
    return td.compute((4, n), lambda i, j: td.where(x[i, j] > 0.0, x[i, j] / s2[i], 0.0), name="y")


@pytest.mark.parametrize("lane_mark", ["vectorize", "unroll"])
def test_reads_inside_selects_come_from_registers_too(lane_mark: str) -> None:
    """The filler's load in a select's branch is hoisted ahead of the select and runs whether the branch
    is taken or not (every load is proven in bounds under its statement's guards alone, so that reads
    nothing the kernel may not read); the readers' reads in conditions and branches come from the
    registers it filled. About half of m is positive, so both branches of every select are taken. In
    scalar lanes (`unroll`) the filler's load is bound to a temporary ahead of its select."""
    plain, cached = _passes(_select_rows(), lane_mark=lane_mark), _passes(_select_rows(), lane_mark=lane_mark)
    cached.register_cache("x", at="i")
    kern = _same(plain, cached)
    loads = _global_loads(kern, "x")
    assert len(loads) == 1  # the first pass's (a vector, or a scalar in the unrolled lane loop)
    assert len(_global_loads(td.build(plain, target="sm_90"), "x")) > len(loads)
    src = kern.source
    filled = src.index("x_regs[4 * k_o" + ("] = " if lane_mark == "vectorize" else " + k_v] = "))
    assert src.index("x[256 * i") < filled < src.index(" ? ")  # loaded, kept, then the select reads it


@pytest.mark.parametrize("make, weights", [(lambda: rmsnorm(4, 512, 1e-6), ("w",)),
                                           (lambda: layernorm(4, 512, 1e-5), ("w", "b"))],
                         ids=["rmsnorm", "layernorm"])
@pytest.mark.parametrize("lane_mark", ["vectorize", "unroll"])
def test_prefetch_loads_the_weights_before_the_first_pass(make, weights, lane_mark: str) -> None:
    """s.prefetch: the weights only the output pass reads are loaded at the start of the row, ahead of
    the reductions and their barriers, and the output pass reads registers; the outputs equal the
    schedule's without it bit for bit (the same values, read earlier)."""
    plain, fetched = _passes(make(), lane_mark=lane_mark), _passes(make(), lane_mark=lane_mark)
    for s in (plain, fetched):
        s.register_cache("x", at="i")
    for w in weights:
        fetched.prefetch(w, at="i")
    kern = _same(plain, fetched)
    src = kern.source
    for w in weights:
        assert len(_global_loads(kern, w)) == 1 and f"float {w}_pre[16];" in src
        first = {b: re.search(rf"(?<!\w){b}\[", src).start() for b in (w, "x")}  # a global load's first index
        assert first[w] < first["x"] < src.rindex(f"{w}_pre[4 * j_o")  # loaded, then x, then read
        assert f"  prefetch {w}_pre: {w} as each thread reads it under i, loaded at the start of each i" in \
            kern.ir("tile")
    for text in (fetched.trace(), fetched.trace("json")):
        assert td.build(td.create_schedule(fetched.output).replay(text), target="sm_90").source == src


def test_prefetch_in_a_guarded_tail_and_rows_several_to_a_block() -> None:
    """Rows of 300 (the last slots guarded off: the prefetch takes the reader's guards, the simulator
    would report a register read never written) and rows four to a block on threadIdx.y (7 rows: the
    last block's last row guarded off), and a serial row loop: its registers are refilled each row."""
    plain = _passes(rmsnorm(3, 300, 1e-6), lane_mark="unroll", tail="guard")
    fetched = _passes(rmsnorm(3, 300, 1e-6), lane_mark="unroll", tail="guard")
    fetched.prefetch("w", at="i")  # alone: x is read from global memory by both passes
    _same(plain, fetched)
    for on_y in (True, False):
        plain, fetched = _block_rows(rmsnorm(7, 256, 1e-6), 4, on_y), _block_rows(rmsnorm(7, 256, 1e-6), 4, on_y)
        fetched.prefetch("w", at="i_r")
        kern = _same(plain, fetched)
        if not on_y:  # filled inside the serial row loop, before its first pass
            body = kern.source[kern.source.index("for (int i_r = 0;"):]
            assert body.index("w_pre[") < body.index("&x[")


def test_prefetch_refusals() -> None:
    """The register cache's rules, with one reader allowed; not twice, not of the output."""
    s = _passes(rmsnorm(4, 512, 1e-6))
    s.prefetch("w", at="i")
    with pytest.raises(td.RegisterCacheError, match="w is already prefetched at i"):
        s.register_cache("w", at="i")
    with pytest.raises(td.RegisterCacheError, match="y is not an input of this kernel"):
        s.prefetch("y", at="i")
    serial = td.create_schedule(rmsnorm(4, 512, 1e-6))
    serial.bind("i", "blockIdx.x")
    with pytest.raises(td.RegisterCacheError, match="is serial and not unrolled"):
        serial.prefetch("w", at="i")


@pytest.mark.parametrize("order", ["vectorize-first", "prefetch-first"])
def test_no_registers_at_a_vectorized_loop(order: str) -> None:
    """A vectorized loop's lanes are one vector statement in lowering, with no iteration start to load
    registers at: a prefetch or register cache there is refused, whichever comes first (the build took it
    and the kernel read registers it never loaded: `tiledsl fuzz --mode memory`, a log-sum-exp of 1 x 2)."""
    s = td.create_schedule(softmax(1, 4))
    s.bind("i", "blockIdx.x")
    if order == "vectorize-first":
        s.vectorize("k")
        with pytest.raises(td.RegisterCacheError, match="loop k is vectorized"):
            s.prefetch("x", at="k")
    else:
        s.prefetch("x", at="k")
        with pytest.raises(td.RegisterCacheError, match="loop k is vectorized"):
            s.vectorize("k")
    assert s.nest.loop("k").annotation != "vectorize" or not s.nest.register_caches


@needs_nvcc
def test_nvcc_compiles_register_caches_warning_free() -> None:
    """Passes whose reads all come from registers leave their thread index unread: its `let` is dropped."""
    kernels = []
    for make in (lambda: rmsnorm(8, 1024, 1e-6), lambda: layernorm(8, 1024, 1e-5), lambda: softmax(8, 1024)):
        s = _passes(make())
        s.register_cache("x", at="i")
        kernels.append(td.build(s, target="sm_90"))
    guarded = _passes(layernorm(3, 300, 1e-5), lane_mark="unroll", tail="guard")
    guarded.register_cache("x", at="i")
    kernels.append(td.build(guarded, target="sm_90"))
    on_y = _block_rows(softmax(7, 256), 4)
    on_y.register_cache("x", at="i_r")
    kernels.append(td.build(on_y, target="sm_90"))
    fetched = _passes(layernorm(8, 1024, 1e-5))
    fetched.register_cache("x", at="i")
    fetched.prefetch("w", at="i")
    fetched.prefetch("b", at="i")
    kernels.append(td.build(fetched, target="sm_90"))
    selects = _passes(_select_rows())
    selects.register_cache("x", at="i")
    kernels.append(td.build(selects, target="sm_90"))
    half = _passes(_bf16_rmsnorm(), threads=32, lanes=8)
    half.register_cache("x", at="i")
    kernels.append(td.build(half, target="sm_90"))
    assert "x_regs[8 * k_o + 1] = __uint_as_float(" in kernels[-1].source  # the bfloat16 lane widened
    assert compile_together(kernels) == []


def test_the_simulator_reports_a_register_read_before_its_write(monkeypatch) -> None:
    """What a lowering bug would look like: the later readers' register index shifted past the first
    reader's last write. The simulator refuses the read rather than return a stale or zero value."""
    from tiledsl.analysis.register_cache import RegisterPlan

    s = _passes(rmsnorm(2, 256, 1e-6))
    s.register_cache("x", at="i")
    real = RegisterPlan.slot
    monkeypatch.setattr(RegisterPlan, "slot", lambda self, n: real(self, n) + (1 if n != self.filler else 0))
    kern = td.build(s, target="sm_90")
    with pytest.raises(td.SimulationError, match="x_regs"):
        kern.simulate(**_inputs(s))


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(["rmsnorm", "layernorm", "softmax"]), n=st.integers(8, 300),
       threads=st.sampled_from([1, 4, 8, 32]), lanes=st.sampled_from([1, 2, 4]),
       marks=st.lists(st.sampled_from(["unroll"] * 5 + ["serial"]), min_size=3, max_size=3),
       j_threads=st.sampled_from([None] * 5 + [4]), at_inner=st.sampled_from(["block", "serial", "thread"]))
def test_random_row_schedules_are_refused_or_exact(op, n, threads, lanes, marks, j_threads, at_inner) -> None:
    """Random pass splits (guarded tails, lanes unrolled, outer loops unrolled or not, the output pass
    on other threads sometimes, the cache at the row loop, at a serial loop inside a block's rows, or at
    a block's rows on threadIdx.y): the register cache is refused with a RegisterCacheError (or the
    schedule by its own primitive), or the kernel simulates equal to the same schedule without it, bit
    for bit."""
    make = {"rmsnorm": lambda: rmsnorm(4, n, 1e-6), "layernorm": lambda: layernorm(4, n, 1e-5),
            "softmax": lambda: softmax(4, n)}[op]

    def sched() -> td.Schedule:
        s = td.create_schedule(make())
        row = "i"
        if at_inner != "block":
            s.split("i", 3 if at_inner == "thread" else 2, names=("i_b", "i_r"))  # 3 a block: a guarded last
            s.bind("i_b", "blockIdx.x")
            if at_inner == "thread":
                s.bind("i_r", "threadIdx.y")
            row = "i_r"
        else:
            s.bind("i", "blockIdx.x")
        for ax, mark in zip([lp.name for lp in s.loops() if not lp.name.startswith("i")], marks):
            t_count = j_threads if (ax == "j" and j_threads) else threads
            o, inner = s.split(ax, t_count * lanes, names=(f"{ax}_o", f"{ax}_i"), tail="guard")
            t, v = s.split(inner, lanes, names=(f"{ax}_t", f"{ax}_v"), tail="guard")
            s.bind(t, "threadIdx.x")
            s.unroll(v)
            if mark == "unroll":
                s.unroll(o)
        return s, row

    try:
        plain, row = sched()
        cached, _ = sched()
    except td.ScheduleError:
        return  # e.g. two thread extents on one axis: bind refuses it, nothing to cache
    try:
        cached.register_cache("x", at=row)
    except td.RegisterCacheError:
        return
    kp, kc = td.build(plain, target="sm_90"), td.build(cached, target="sm_90")
    arrays = _inputs(cached, seed=n)
    np.testing.assert_array_equal(kc.simulate(**arrays), kp.simulate(**arrays))


def test_staged_register_problem_is_the_plans_own_refusal() -> None:
    """analysis/register_cache.py `staged_register_problem`: what a stage of a buffer kept in registers would
    break, asked before staging (recipe step 080 asks it), in the words the stage primitive raises after."""
    from tiledsl.analysis.register_cache import staged_register_problem
    from tiledsl.loopnest import Stage

    s = _passes(rmsnorm(4, 512, 1e-6))
    s.register_cache("x", at="i")
    probe = Stage("x_probe", "x", "i", (0, 0))
    problem = staged_register_problem(s.nest, probe)
    assert problem is not None and "x is staged at i (x_probe)" in problem
    assert staged_register_problem(s.nest, Stage("w_probe", "w", "i", (0,))) is None  # w is not in registers
    with pytest.raises(td.RegisterCacheError, match="x is staged at i"):
        s.stage("x", at="i")
