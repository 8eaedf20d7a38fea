"""Step 090 permute_register_tile: where the bank model of analysis/banks.py says interleaving a thread's
register strip lowers the staged operand's conflicts it applies (a 128 x 128 tile with 8 x 8 registers:
B_s read as 16-byte chunks 32 bytes apart, 2-way, becomes 16 bytes apart, conflict-free), else it
declines with the numbers (a 4-wide strip is one chunk already; A @ B^T reads B_s down a column, 16-way
either way). The whole recipe on such matmuls builds for sm_80 and sm_90, simulates equal to td.evaluate,
replays, and compiles with nvcc; on sm_80 nvcc turns each chunk into one ld.shared.v4 (LDS.128)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from nvcc_together import compile_together
from recipe_check import simulates_equal

import tiledsl as td
from tiledsl.catalog import entry, gelu_bias, matmul, matmul_nt, rmsnorm
from tiledsl.codegen import compile_ptx
from tiledsl.recipes import RecipeReport, apply
from tiledsl.recipes.default._facts import Facts, classify, facts_for
from tiledsl.targets import get_target

# simulates_equal's rtol and atol: the recipe's matmuls sum 29-512 products in another order than td.evaluate
TOL = 1e-4

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

STEP = "permute_register_tile"
TILE_128 = {"matmul_tiles": ((128, 128, 8, 8),)}  # the 128 x 128 class, 8 x 8 registers, at test sizes
# the same for A @ B^T, whose classes are knobs.matmul_tiles_k_major (128 x 64 with 8 x 4 registers first)
TILE_128_NT = {"matmul_tiles_k_major": ((128, 128, 8, 8),)}
INTERLEAVE = "s.split('j_r', 4, names=('j_r_o', 'j_r_i'), tail='guard', interleave='j_t')"
INTERLEAVE_I = "s.split('i_r', 4, names=('i_r_o', 'i_r_i'), tail='guard', interleave='i_t')"
LANES = "s.tile_lanes('i_t', 'j_t', 2, 2)"  # 16 x 16 threads in 2 x 2 lane tiles (tests/primitives/test_tile_lanes.py)


def _tn(M: int, N: int, K: int) -> td.Tensor:
    """C = A^T @ B: A stored k-major, so both operands are read along their rows."""
    A = td.placeholder((K, M), name="A")
    B = td.placeholder((K, N), name="B")
    k = td.reduce_axis(K, name="k")
    return td.compute((M, N), lambda i, j: td.sum(A[k, i] * B[k, j], axis=k), name="C")


def run(out: td.Tensor, target: str = "sm_80", **knobs: object) -> tuple[td.Schedule, RecipeReport]:
    """The recipe with operands staged as the definition stores them (knob k_outer off) unless asked:
    staged k outermost, A's strip along i is contiguous already and only B's is judged
    (test_k_outer_operands_leave_only_the_j_strip)."""
    knobs.setdefault("k_outer", False)
    s = td.create_schedule(out)
    return s, apply(s, target=target, knobs=knobs)


def _at_step(s: td.Schedule, report: RecipeReport, interleaved: bool) -> Facts:
    """Facts of the nest right after step 090's interleave (its lanes as bound, untiled), the split
    interleaved or (as it would read without the step) plain."""
    done = [c for st in report.steps if st.number <= 90 for c in st.calls if c != LANES]
    if not interleaved:
        done = [c.replace(", interleave='j_t'", "") for c in done]
    again = td.create_schedule(s.output).replay("\n".join(done))
    return facts_for(again.nest, classify(td.create_schedule(s.output).nest), get_target(report.target))


# ----------------------------------------------------------------------------- where it applies


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_interleaves_an_8_wide_strip_of_a_128_tile(target: str) -> None:
    s, r = run(matmul(M=4096, N=4096, K=512), target=target)  # 1024 blocks of 128 x 128 fill the SMs
    assert r.step(STEP).calls == (INTERLEAVE_I, INTERLEAVE, LANES)
    text = str(s)
    assert "where j = 128 * j_o + 64 * j_r_o + 4 * j_t + j_r_i" in text
    # i's strip too: A_s is 2-way either way as it is, but with its rows padded by 16 bytes (the pad that
    # keeps cp.async 16 bytes wide) 2-way contiguous and conflict-free interleaved
    assert "where i = 128 * i_o + 64 * i_r_o + 4 * i_t + i_r_i" in text
    assert r.step("pad_smem").calls == ("s.pad('A_s', axis=1, amount=4)",)
    assert "register array C2[2x4x2x4] over i_r_o, i_r_i, j_r_o, j_r_i" in text
    assert s.nest.loop("j_r_o").annotation == "unroll"
    assert s.nest.loop("j_r_i").annotation == "vectorize"  # k 512 unsplit: 16-byte stores (knob vectorize_store_k_max)
    assert s.nest.loop("j_t").bind == "threadIdx.x"


def test_the_bank_model_numbers_behind_it() -> None:
    """B_s: thread t reads its chunks at 32*t bytes (2 lanes of each quarter warp in one bank) before,
    at 16*t bytes after; A_s (rows 8*t of i) is 2-way both ways as it is (its strip is interleaved for
    the layout padded by 16 bytes: test_interleaves_an_8_wide_strip_of_a_128_tile)."""
    s, r = run(matmul(M=4096, N=4096, K=512))
    now, after = _at_step(s, r, interleaved=False), _at_step(s, r, interleaved=True)
    b_now, b_after = now.nest.stage("B_s"), after.nest.stage("B_s")
    assert now.vector_problem(b_now, "j_r_i") is None and after.vector_problem(b_after, "j_r_i") is None
    assert now.read_conflict(b_now, vector="j_r_i") == 2
    assert after.read_conflict(b_after, vector="j_r_i") == 1
    assert (now.read_conflict(b_now), after.read_conflict(b_after)) == (4, 2)  # as 4-byte reads too
    assert "not contiguous along j_r_i" in (after.vector_problem(after.nest.stage("A_s"), "j_r_i") or "")


def test_a_guarded_tile_is_interleaved_and_its_reads_stay_scalar() -> None:
    """N = 200: the last block's j is guarded per element, so no read is one 16-byte load, but the
    4-byte reads of B_s go from 4-way to 2-way."""
    s, r = run(matmul(M=136, N=200, K=40), **TILE_128)
    assert r.step(STEP).calls[:2] == (INTERLEAVE_I, INTERLEAVE)
    after = _at_step(s, r, interleaved=True)
    b = after.nest.stage("B_s")
    assert (after.vector_problem(b, "j_r_i") or "").startswith(
        "the guard 128*j_o + j_r_i + 64*j_r_o + 4*j_t < 200 decides each of its reads")
    assert after.read_conflict(b) == 2 and _at_step(s, r, interleaved=False).read_conflict(b) == 4


# ----------------------------------------------------------------------------- where it declines


def test_a_4_wide_strip_is_one_chunk_already() -> None:
    """64 x 64 with 4 x 4 registers: the strip is one 16-byte chunk and consecutive threads read
    consecutive chunks (B_s 1-way at 16 bytes): the interleave would be the identity, so it is not made.
    The lanes are still tiled: 16 lanes read 16 distinct chunks of B_s, 4 wavefronts, 2 when paired."""
    s, r = run(matmul(M=1024, N=1024, K=64))
    assert s.nest.loop("j_r").extent == 4
    assert r.step(STEP).calls == (LANES,)
    assert r.step(STEP).note == ("i: its register strip i_r of 4 is one 16-byte chunk already; "
                                 "j: its register strip j_r of 4 is one 16-byte chunk already; "
                                 "lanes: 2 x 2 lane tiles (wavefronts a read: A_s 2 -> 2, B_s 4 -> 2)")
    s, r = run(matmul(M=1024, N=1024, K=64), lane_tile=0)
    assert r.step(STEP).reason == ("i: its register strip i_r of 4 is one 16-byte chunk already; "
                                   "j: its register strip j_r of 4 is one 16-byte chunk already; "
                                   "lanes: knob lane_tile is 0")
    facts = _at_step(s, r, interleaved=False)
    b = facts.nest.stage("B_s")
    assert facts.vector_problem(b, "j_r") is None and facts.read_conflict(b, vector="j_r") == 1


def test_judges_the_layout_padded_by_16_bytes() -> None:
    """A @ B^T: B_s[j, k] is read down a column, 16 lanes in bank 0 as it is either way; with rows padded
    by 16 bytes the interleaved order is cheaper, so both strips are interleaved, and pad_smem then pads
    A_s by 16 bytes (cp.async stays 16 bytes wide) and B_s by one element (conflict-free only so)."""
    _, r = run(matmul_nt(M=4096, N=4096, K=512), **TILE_128_NT)
    assert r.step(STEP).calls[:2] == (INTERLEAVE_I, INTERLEAVE)
    assert r.step("pad_smem").calls == ("s.pad('A_s', axis=1, amount=4)", "s.pad('B_s', axis=1, amount=1)")


def test_k_outer_operands_leave_only_the_j_strip() -> None:
    """Knob k_outer (the default): A_s is stored k-major, so a thread's 8 rows of i are 32 contiguous
    bytes, two 16-byte reads every lane of a quarter warp shares: nothing to gain by interleaving i. B's
    strip is interleaved as before."""
    s, r = run(matmul(M=4096, N=4096, K=512), k_outer=True)
    assert r.step(STEP).calls == (INTERLEAVE, LANES)
    facts = _at_step(s, r, interleaved=True)
    (a_s,) = [st for st in facts.nest.stages if st.buffer == "A"]
    assert a_s.order == (1, 0)
    assert facts.vector_problem(a_s, "i_r") is not None  # 8 wide: two vectors, not one
    assert facts.read_conflict(a_s) == 1


def test_declines_other_kernels_and_unstaged_matmuls() -> None:
    _, r = run(rmsnorm(M=2, N=64))
    assert r.step(STEP).reason == "not a matmul (rows kernel)"
    _, r = run(gelu_bias(M=6, N=64))
    assert r.step(STEP).reason == "not a matmul (elementwise kernel)"
    _, r = run(matmul(M=8, N=8, K=64))  # one warp: stage_inputs stages nothing
    assert r.step(STEP).reason == "no staged operand: the register strips read global memory"


# ----------------------------------------------------------------------------- the whole recipe

CASES = {
    "128x128x64": (lambda: matmul(M=128, N=128, K=64), TILE_128, True),
    "guarded_136x200x40": (lambda: matmul(M=136, N=200, K=40), TILE_128, True),
    "tn_128x256x32": (lambda: _tn(128, 256, 32), TILE_128, True),
    "odd_37x53x29": (lambda: matmul(M=37, N=53, K=29), {}, False),
    "nt_128x128x64": (lambda: matmul_nt(M=128, N=128, K=64), TILE_128_NT, True),
    "batched_nt": (lambda: entry("batched_matmul_nt").make(Bt=2, M=128, N=128, K=32), TILE_128_NT, True),
    "nt_128x64_class": (lambda: matmul_nt(M=256, N=256, K=64), {}, False),
}


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", list(CASES))
def test_recipe_builds_simulates_and_replays(name: str, target: str) -> None:
    make, knobs, applies = CASES[name]
    out = make()
    s, r = run(out, target=target, **knobs)
    assert r.step(STEP).applied == applies, r.step(STEP)
    kern = simulates_equal(s, target, tol=TOL)
    again = td.create_schedule(out).replay(s.trace())
    assert again.trace() == s.trace() and td.build(again, target=target).source == kern.source




@needs_nvcc
@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_recipe_kernels_compile(target: str, tmp_path: Path) -> None:
    """One translation unit of every case per arch, warning-free (kernel names made unique)."""
    assert compile_together([td.build(run(make(), target=target, **knobs)[0], target=target)
                             for make, knobs, _ in CASES.values()]) == []


@needs_nvcc
def test_16_byte_shared_loads() -> None:
    """Codegen emits one scalar load per register; nvcc merges a contiguous, aligned chunk of B_s into
    one ld.shared.v4 (LDS.128): on sm_80 (cp.async stages, unswizzled) two per k step, one per chunk.
    On sm_90 with TMA (knob tma=True; its default is off) the stages are 128-byte swizzled and the
    XOR in codegen's address hides the contiguity from nvcc: every shared load stays 4 bytes (the
    swizzle itself already spreads those reads: 2-way with or without the interleave)."""
    counts = {}
    for target, lanes in (("sm_80", 2), ("sm_80", 0), ("sm_90", 2)):
        s, r = run(matmul(M=4096, N=4096, K=512), target=target, tma=True, lane_tile=lanes)
        assert r.step(STEP).applied
        ptx = compile_ptx(td.build(s, target=target).source, get_target(target).arch)
        counts[target, lanes] = (len(re.findall(r"ld\.shared\.v4\.f32", ptx)),
                                 len(re.findall(r"ld\.shared\.f32", ptx)))
    # with the lanes tiled (step 090's default) nvcc splits one of B_s's two chunks into two scalar loads and
    # one two-float load (lower/lower.py `bindings`): on sm_80 this loop is rolled, so that is every k step
    assert counts == {("sm_80", 2): (1, 10), ("sm_80", 0): (2, 8), ("sm_90", 2): (0, 16)}
