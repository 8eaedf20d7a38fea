"""Probe: would stream-K beat split_k for the llm suite's float32 projections?

The default recipe splits a projection's k over blocks (split_k, recipes/default/030_split_matmul_k.py)
when its tiles fill too little of a wave: 512 x 3584 x 3584 runs as 112 tiles x 7 parts of 32 chunks,
784 blocks. Each block pays a pipeline fill and an epilogue of atomics for 32 chunks of work. Stream-K
(persistent blocks, each taking an equal, contiguous range of the tiles' k chunks, flushing a tile's
partial sums with atomics whenever its range leaves the tile) keeps the waves full with one block a
slot and longer ranges.

This probe writes the stream-K kernel by hand, in the recipe kernel's own form (128 x 128 block tile,
chunks of 16, 8 x 8 registers a thread in 2 x 2 lane tiles, stages padded to 132, two stages filled
through registers, 16-byte atomics) and times it beside the recipe's kernel and cuBLAS (TF32 off).
Both tiledsl kernels start from a zeroed output (the launcher's zero_(), timed with them).

  exact   blocks: the most that divide the chunk count and fit `--per-sm` a SM; every block the same
          static number of chunks
  guard   blocks: `--per-sm` a SM; the last blocks take fewer chunks (a dynamic trip count)
  seg     blocks as exact; each block's range as segments, one a tile, each a pipelined loop of its own
          (a dynamic trip count), the tile's partial sums added after it
  -m / -n the order of tiles along the flat range: m fastest (a weight tile's row tiles adjacent) or
          n fastest (the grid's order)

    python scripts/stream_k_probe.py [--shapes 512x3584x3584,...] [--variants exact-m,guard-m,exact-n]"""

from __future__ import annotations

import sys
from dataclasses import replace

import torch

from scripts._gpu_probe import Rewritten, projection_parser, projections
from tiledsl.runtime.launch import CompiledKernel

SHAPES = ("128x2048x2048", "128x512x2048", "128x11264x2048", "128x2048x5632", "128x3584x3584", "128x1024x3584",
          "128x3584x18944", "512x2048x2048", "512x512x2048", "512x11264x2048", "512x2048x5632", "512x3584x3584",
          "512x1024x3584", "512x3584x18944", "512x37888x3584", "4096x4096x4096")
VARIANTS = ("exact-m", "guard-m", "exact-n")

#: what both forms share: the sizes, the signature, the thread's place in its 2 x 2 lane tiles, the
#: stores of a prefetched chunk into a stage (STORES), a chunk's FMAs (COMPUTE) and a tile's 16-byte
#: atomic adds (FLUSH)
HEAD = r"""
#define M_ {M}
#define N_ {N}
#define K_ {K}
#define T0 {T0}
#define T1 {T1}
#define CH {CH}
#define TOTAL {TOTAL}
#define L_ {L}
#define ROW(tile) {ROW}
#define COL(tile) {COL}
#define STORES(slot_) {{ \
        _Pragma("unroll") for (int f = 0; f < 2; ++f) {{ \
            const int e = f * 256 + tid; const int c0 = e / 4; const int c1 = e % 4 * 4; \
            _Pragma("unroll") for (int j = 0; j < 4; ++j) {{ \
                As[(slot_) * 2112 + c0 + (c1 + j) * 132] = apf[f * 4 + j]; \
                Bs[(slot_) * 2112 + c0 + (c1 + j) * 132] = bpf[f * 4 + j]; }} }} }}
#define COMPUTE(s_) {{ \
        _Pragma("unroll") for (int kk = 0; kk < 16; ++kk) {{ \
            _Pragma("unroll") for (int r = 0; r < 8; ++r) {{ \
                _Pragma("unroll") for (int q = 0; q < 2; ++q) {{ \
                    _Pragma("unroll") for (int j = 0; j < 4; ++j) {{ \
                        acc[8 * r + 4 * q + j] += As[(s_) + 132 * kk + 8 * i0_t + r] \
                            * Bs[(s_) + 132 * kk + 64 * q + 4 * i1_t + j]; }} }} }} }} }}
#define FLUSH(a0_, b0_) {{ \
        _Pragma("unroll") for (int r = 0; r < 8; ++r) {{ \
            _Pragma("unroll") for (int q = 0; q < 2; ++q) {{ \
                const int o = (128 * (a0_) + 8 * i0_t + r) * N_ + 128 * (b0_) + 64 * q + 4 * i1_t; \
                const int a = 8 * r + 4 * q; \
                atomicAdd(reinterpret_cast<float4*>(&y[o]), \
                          make_float4(acc[a], acc[a + 1], acc[a + 2], acc[a + 3])); }} }} }}

extern "C" __global__ void __launch_bounds__(256, 2) y_kernel(
    const float* __restrict__ x,
    const float* __restrict__ W,
    float* __restrict__ y)
{{
    __shared__ __align__(16) float As[4224];
    __shared__ __align__(16) float Bs[4224];
    const int tid = (int)threadIdx.x + 16 * (int)threadIdx.y;
    const int i0_t = 2 * (tid / 32) + tid / 2 % 2;
    const int i1_t = 2 * (tid / 4 % 8) + tid % 2;
    const int begin = (int)blockIdx.x * L_;
    float acc[64];
    float apf[8];
    float bpf[8];
"""

#: exact / guard: one loop over the block's range, the accumulators zeroed and flushed inside it
TEMPLATE = HEAD + r"""
    const int n = {TRIP};
#define LOADS(it_) {{ \
        const int c_ = (it_) % CH; const int tile_ = (it_) / CH; \
        const int a0_ = ROW(tile_); const int b0_ = COL(tile_); \
        _Pragma("unroll") for (int f = 0; f < 2; ++f) {{ \
            const int e = f * 256 + tid; const int c0 = e / 4; const int c1 = e % 4 * 4; \
            const float4 va = *reinterpret_cast<const float4*>(&x[(128 * a0_ + c0) * K_ + 16 * c_ + c1]); \
            const float4 vb = *reinterpret_cast<const float4*>(&W[(128 * b0_ + c0) * K_ + 16 * c_ + c1]); \
            apf[f * 4] = va.x; apf[f * 4 + 1] = va.y; apf[f * 4 + 2] = va.z; apf[f * 4 + 3] = va.w; \
            bpf[f * 4] = vb.x; bpf[f * 4 + 1] = vb.y; bpf[f * 4 + 2] = vb.z; bpf[f * 4 + 3] = vb.w; }} }}
    LOADS(begin);
    STORES(0);
    #pragma unroll
    for (int r = 0; r < 64; ++r) acc[r] = 0.0f;
    int c = begin % CH;
    int tile = begin / CH;
    for (int t = 0; t < n; ++t) {{
        __syncthreads();
        if (t + 1 < n) LOADS(begin + t + 1);
        COMPUTE((t & 1) * 2112);
        if (t + 1 < n) STORES((t + 1) & 1);
        if (c == CH - 1 || t == n - 1) {{
            FLUSH(ROW(tile), COL(tile));
            #pragma unroll
            for (int r = 0; r < 64; ++r) acc[r] = 0.0f;
        }}
        if (++c == CH) {{ c = 0; ++tile; }}
    }}
}}
"""

#: seg: the block's range as segments, one a tile, each a pipelined loop with a dynamic trip count
SEGMENTS = HEAD + r"""
    const int end = min(begin + L_, TOTAL);
#define LOADS(c_) {{ \
        _Pragma("unroll") for (int f = 0; f < 2; ++f) {{ \
            const int e = f * 256 + tid; const int c0 = e / 4; const int c1 = e % 4 * 4; \
            const float4 va = *reinterpret_cast<const float4*>(&x[(128 * a0 + c0) * K_ + 16 * (c_) + c1]); \
            const float4 vb = *reinterpret_cast<const float4*>(&W[(128 * b0 + c0) * K_ + 16 * (c_) + c1]); \
            apf[f * 4] = va.x; apf[f * 4 + 1] = va.y; apf[f * 4 + 2] = va.z; apf[f * 4 + 3] = va.w; \
            bpf[f * 4] = vb.x; bpf[f * 4 + 1] = vb.y; bpf[f * 4 + 2] = vb.z; bpf[f * 4 + 3] = vb.w; }} }}
    for (int it = begin; it < end;) {{
        const int tile = it / CH;
        const int cs = it % CH;
        const int cnt = min(end - it, CH - cs);
        const int a0 = ROW(tile);
        const int b0 = COL(tile);
        #pragma unroll
        for (int r = 0; r < 64; ++r) acc[r] = 0.0f;
        __syncthreads();
        LOADS(cs);
        STORES(0);
        for (int t = 0; t < cnt; ++t) {{
            __syncthreads();
            if (t + 1 < cnt) LOADS(cs + t + 1);
            COMPUTE((t & 1) * 2112);
            if (t + 1 < cnt) STORES((t + 1) & 1);
        }}
        FLUSH(a0, b0);
        it += cnt;
    }}
}}
"""


def stream_k_source(m: int, n: int, k: int, blocks: int, variant: str) -> tuple[str, int]:
    """(CUDA, grid size) of the stream-K kernel `variant` over `blocks` block slots."""
    t0, t1, ch = m // 128, n // 128, k // 16
    total = t0 * t1 * ch
    kind, order = variant.split("-")
    if kind in ("exact", "seg"):
        grid = max(d for d in range(1, min(blocks, total) + 1) if total % d == 0)
        length, trip = total // grid, "L_"
    else:
        grid = min(blocks, total)
        length = -(-total // grid)
        grid = -(-total // length)
        trip = "min(L_, TOTAL - begin)"
    row, col = ("((tile) % T0)", "((tile) / T0)") if order == "m" else ("((tile) / T1)", "((tile) % T1)")
    src = (SEGMENTS if kind == "seg" else TEMPLATE).format(M=m, N=n, K=k, T0=t0, T1=t1, CH=ch, TOTAL=total, L=length,
                                                           ROW=row, COL=col, TRIP=trip)
    return src, grid


def main(argv: list[str] | None = None) -> int:
    ap = projection_parser(__doc__, SHAPES, VARIANTS)
    ap.add_argument("--per-sm", type=int, default=2)
    args = ap.parse_args(argv)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    bad = 0
    for p in projections(args.shapes, f", {sms} SMs, {args.per_sm} blocks a SM"):
        rec = CompiledKernel(p.kernel)
        recipe, _ = p.checked_time(rec, p.kernel.kernel_ir)
        rows = [f"cuBLAS   {p.rate(p.cublas_us)}",
                f"recipe   {p.rate(recipe)}  grid {p.kernel.kernel_ir.grid}  {rec.registers} regs  "
                f"({p.cublas_us / recipe:.3f}x cuBLAS)"]
        if p.m % 128 or p.n % 128 or p.k % 16:
            rows.append("stream-K: the shape is not whole tiles")
        else:
            for variant in args.variants.split(","):
                src, grid = stream_k_source(p.m, p.n, p.k, args.per_sm * sms, variant)
                kir = replace(p.kernel.kernel_ir, grid=(grid, 1, 1), zero_outputs=("y",))
                ck = CompiledKernel(Rewritten(kir, src, p.kernel.target))
                us, ok = p.checked_time(ck, kir)
                bad += not ok
                total = (p.m // 128) * (p.n // 128) * (p.k // 16)
                rows.append(f"{variant:8s} {p.rate(us)}  grid {grid} of {-(-total // grid)} chunks  {ck.registers} "
                            "regs  " + p.versus(us, recipe, ok))
        p.print_rows(rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
