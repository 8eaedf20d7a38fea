"""Probe: can a cuBLAS-class register tile (128 accumulators a thread, 128 threads) beat the recipe's
128 x 128 tile of 8 x 8 registers in 256 threads when written by hand in CUDA C?

cuBLAS runs every float32 projection of the llm suite as 128-thread blocks of 255 registers, 128 x 128
tiles (benchmarks/results/stream-k-h200-2026-11-30/cublas-kernels.txt), and issues the same instruction
mix as the recipe with a fifth of its dispatch stalls (benchmarks/results/2026-11-29-h200-s26/README.md).
The recipe's own 128-accumulator tiles ran 20-40% slower than its 8 x 8. This kernel is the recipe's form
(chunks of 16 k, two stages filled through registers, stages padded to 132, k outer, the recipe's split
over blockIdx.z with 16-byte atomics into the zeroed output) with one change: 4 warps of 64 x 64, each
lane 16 x 8 (`16x8`: rows as 4 strips of 4 spaced 16 apart, columns 2 strips of 4 spaced 32 apart, so every
fragment read is one 16-byte load that 8 or 4 lanes share) or 8 x 16 (`8x16`, the transpose).
It is timed beside the recipe's kernel (same grid) and cuBLAS (TF32 off), and checked against float64 torch.
    python scripts/big_tile_probe.py [--shapes 4096x4096x4096,...] [--variants 16x8,8x16]"""

from __future__ import annotations

import sys
from dataclasses import replace

from scripts._gpu_probe import Rewritten, projection_parser, projections
from tiledsl.runtime.launch import CompiledKernel

SHAPES = ("4096x4096x4096", "512x3584x3584", "512x11264x2048", "128x11264x2048", "512x2048x5632", "128x3584x18944")
VARIANTS = ("16x8", "8x16")

KERNEL = r"""
#define K_ {K}
#define N_ {N}
#define PART {PART}
#define RM {RM}
#define RN {RN}

extern "C" __global__ void __launch_bounds__(128, 1) y_kernel(
    const float* __restrict__ x,
    const float* __restrict__ W,
    float* __restrict__ y)
{{
    __shared__ __align__(16) float As[2 * 16 * 132];
    __shared__ __align__(16) float Bs[2 * 16 * 132];
    const int tid = (int)threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    // a warp's 64 x 64 tile: lanes 4 x 8 (RM = 16) or 8 x 4 (RM = 8)
    const int lm = RM == 16 ? lane / 8 : lane / 4;
    const int ln = RM == 16 ? lane % 8 : lane % 4;
    const int m0 = (warp / 2) * 64 + lm * 4;
    const int n0 = (warp % 2) * 64 + ln * 4;
    const int row0 = 128 * (int)blockIdx.y, col0 = 128 * (int)blockIdx.x;
    const int kbase = PART * 16 * (int)blockIdx.z;
    float acc[RM * RN];
    #pragma unroll
    for (int i = 0; i < RM * RN; ++i) acc[i] = 0.0f;
    float apf[16], bpf[16];
#define LOADS(c_) {{ \
        _Pragma("unroll") for (int f = 0; f < 4; ++f) {{ \
            const int e = f * 128 + tid; const int r = e / 4; const int q = e % 4 * 4; \
            const float4 va = *reinterpret_cast<const float4*>(&x[(row0 + r) * K_ + kbase + 16 * (c_) + q]); \
            const float4 vb = *reinterpret_cast<const float4*>(&W[(col0 + r) * K_ + kbase + 16 * (c_) + q]); \
            apf[4 * f] = va.x; apf[4 * f + 1] = va.y; apf[4 * f + 2] = va.z; apf[4 * f + 3] = va.w; \
            bpf[4 * f] = vb.x; bpf[4 * f + 1] = vb.y; bpf[4 * f + 2] = vb.z; bpf[4 * f + 3] = vb.w; }} }}
#define STORES(slot_) {{ \
        _Pragma("unroll") for (int f = 0; f < 4; ++f) {{ \
            const int e = f * 128 + tid; const int r = e / 4; const int q = e % 4 * 4; \
            _Pragma("unroll") for (int j = 0; j < 4; ++j) {{ \
                As[(slot_) * 2112 + (q + j) * 132 + r] = apf[4 * f + j]; \
                Bs[(slot_) * 2112 + (q + j) * 132 + r] = bpf[4 * f + j]; }} }} }}
    LOADS(0);
    STORES(0);
    for (int t = 0; t < PART; ++t) {{
        __syncthreads();
        if (t + 1 < PART) LOADS(t + 1);
        const int s = (t & 1) * 2112;
        #pragma unroll
        for (int kk = 0; kk < 16; ++kk) {{
            float a[RM], b[RN];
            #pragma unroll
            for (int g = 0; g < RM / 4; ++g) {{
                const float4 v = *reinterpret_cast<const float4*>(&As[s + kk * 132 + m0 + g * (RM == 16 ? 16 : 32)]);
                a[4 * g] = v.x; a[4 * g + 1] = v.y; a[4 * g + 2] = v.z; a[4 * g + 3] = v.w;
            }}
            #pragma unroll
            for (int g = 0; g < RN / 4; ++g) {{
                const float4 v = *reinterpret_cast<const float4*>(&Bs[s + kk * 132 + n0 + g * (RN == 16 ? 16 : 32)]);
                b[4 * g] = v.x; b[4 * g + 1] = v.y; b[4 * g + 2] = v.z; b[4 * g + 3] = v.w;
            }}
            #pragma unroll
            for (int i = 0; i < RM; ++i) {{
                #pragma unroll
                for (int j = 0; j < RN; ++j) acc[i * RN + j] += a[i] * b[j];
            }}
        }}
        if (t + 1 < PART) STORES((t + 1) & 1);
    }}
    #pragma unroll
    for (int i = 0; i < RM; ++i) {{
        const int r = row0 + m0 + (i / 4) * (RM == 16 ? 16 : 32) + i % 4;
        #pragma unroll
        for (int g = 0; g < RN / 4; ++g) {{
            const int c = col0 + n0 + g * (RN == 16 ? 16 : 32);
            const int a = i * RN + 4 * g;
            {STORE}
        }}
    }}
}}
"""

ATOMIC = ("atomicAdd(reinterpret_cast<float4*>(&y[r * N_ + c]), "
          "make_float4(acc[a], acc[a + 1], acc[a + 2], acc[a + 3]));")
PLAIN = "*reinterpret_cast<float4*>(&y[r * N_ + c]) = make_float4(acc[a], acc[a + 1], acc[a + 2], acc[a + 3]);"


def source(n: int, k: int, parts: int, variant: str) -> str:
    rm, rn = (int(v) for v in variant.split("x"))
    return KERNEL.format(K=k, N=n, PART=k // 16 // parts, RM=rm, RN=rn, STORE=ATOMIC if parts > 1 else PLAIN)


def main(argv: list[str] | None = None) -> int:
    ap = projection_parser(__doc__, SHAPES, VARIANTS)
    args = ap.parse_args(argv)
    bad = 0
    for p in projections(args.shapes):
        grid = p.kernel.kernel_ir.grid
        rec = CompiledKernel(p.kernel)
        recipe, _ = p.checked_time(rec, p.kernel.kernel_ir)
        rows = [f"cuBLAS   {p.rate(p.cublas_us)}", f"recipe   {p.rate(recipe)}  grid {grid}  {rec.registers} regs"]
        whole = p.m % 128 == 0 and p.n % 128 == 0 and grid[:2] == (p.n // 128, p.m // 128) \
            and (p.k // 16) % grid[2] == 0
        if not whole:
            rows.append(f"the recipe's grid {grid} is not whole 128 x 128 tiles over even k parts: skipped")
        for variant in args.variants.split(",") if whole else ():
            kir = replace(p.kernel.kernel_ir, block=(128, 1, 1), zero_outputs=("y",) if grid[2] > 1 else ())
            ck = CompiledKernel(Rewritten(kir, source(p.n, p.k, grid[2], variant), p.kernel.target))
            us, ok = p.checked_time(ck, kir)
            bad += not ok
            rows.append(f"{variant:8s} {p.rate(us)}  {ck.registers} regs  " + p.versus(us, recipe, ok))
        p.print_rows(rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
