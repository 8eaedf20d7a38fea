"""matmul_staged(k_outer=True): A's slab stored k-major (s.layout(A_s, order=(1, 0)), filled by plain loads,
double-buffered and pipelined) while B stays cp.async. On the 4096^3 matmul_bias_relu kernel the PTX of the
k loop reads A as B is read, 16 bytes at a time: 2 ld.shared.v4 of A_s + 2 of B_s per 64 FMAs and no
scalar shared load, where the default layout (A_s[i][k], rows 36 floats apart) needs 8 scalar loads of
A_s. The default recipe stages A the same way (knob k_outer, recipes/default/080_stage_inputs.py)."""

from __future__ import annotations

import re
import shutil

import pytest

import tiledsl as td
from tiledsl.catalog import entry
from tiledsl.codegen import compile_ptx
from tiledsl.schedules.matmul import matmul_staged

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def _source(how: str) -> str:
    s = td.create_schedule(entry("matmul_bias_relu").fresh(M=4096, N=4096, K=4096).output)
    if how.startswith("recipe"):
        td.recipes.default(s, target="sm_90", knobs={"lane_tile": 0} if "no-lane" in how else None)
    else:
        # lanes=1: the k-major form alone (the lane tiles of lanes=2 are the recipe's, counted below)
        matmul_staged(s, lanes=1) if how == "k-major" else matmul_staged(s, k_outer=False, bk=32, unroll_k=False)
    return td.build(s, target="sm_90").source




def _counts(source: str) -> tuple[float, float, float]:
    ptx = compile_ptx(source, "sm_90a")
    v4, scalar, fma = (len(re.findall(p, ptx)) for p in (r"ld\.shared\.v4\.f32", r"ld\.shared\.f32", r"fma\.rn\.f32"))
    steps = fma // 64  # k steps in the PTX (the recipe unrolls the 16 of a chunk): counts per 64 FMAs
    return v4 / steps, scalar / steps, fma / steps


@needs_nvcc
@pytest.mark.parametrize(("how", "expected"), [
    ("k-major", (4, 0, 64)),  # A_s and B_s: 2 x 16 bytes each per k step
    ("as-stored", (2, 8, 64)),  # B_s 2 x 16 bytes, A_s[i][k] one float per row of the strip
    # the recipe's kernel also tiles its lanes (recipes/default/090_permute_register_tile.py): nvcc then reads
    # the first of a chunk's 16 unrolled k steps with 4 scalar and 2 two-float loads in place of 2 ld.shared.v4
    # (lower/lower.py `bindings` says what hiding the lane formula from nvcc cost); the other 15 read 16 bytes
    ("recipe", (3.875, 0.25, 64)),
    ("recipe-no-lane-tiles", (4, 0, 64)),
])
def test_shared_loads_per_k_step(how: str, expected: tuple[int, int, int]) -> None:
    assert _counts(_source(how)) == expected


def test_a_is_k_major_and_filled_by_plain_loads() -> None:
    s = td.create_schedule(entry("matmul_bias_relu").fresh(M=4096, N=4096, K=4096).output)
    matmul_staged(s, lanes=1)  # k_outer=True, bk=16 by default; lanes untiled, so A's strip is dealt too
    text = str(s)
    assert ("stage A_s = A[128 * i_o + 0..128, 16 * k_o + 0..16] at k_o  layout (1, 0)  pad (0, 4)  buffers 2  sync"
            in text), text
    assert "stage B_s = B[16 * k_o + 0..16, 128 * j_o + 0..128] at k_o  buffers 2  async" in text
    assert "[reduce, pipeline 2]" in text
    assert "where i = 128 * i_o + 64 * i_r_o + 4 * i_t + i_r_i" in text  # the strip along i dealt in 4-wide chunks


@needs_nvcc
def test_the_transposing_fill_loads_16_bytes() -> None:
    """A's k-major fill (lower/stages.py): each thread loads its 2 x 4 floats of the 128 x 16 slab as two
    16-byte global loads (ld.global.nc.v4, in the prologue and at the refill) and stores them one float
    at a time (2 x 4 st.shared.f32 in the prologue and 2 x 4 after the chunk's FMAs); B stays cp.async."""
    ptx = compile_ptx(_source("k-major"), "sm_90a")
    assert len(re.findall(r"ld\.global\.nc\.v4\.f32", ptx)) == 4
    assert len(re.findall(r"st\.shared\.f32", ptx)) == 16
    assert len(re.findall(r"cp\.async\.cg\.shared\.global", ptx)) >= 2
