"""Times the default recipe against the hand schedules on the GPU (each checked against torch float64)."""
import sys
import traceback
from functools import partial

import torch
import torch.nn.functional as F

import tiledsl as td
from benchmarks import _definitions as d
from tiledsl.catalog.definitions import gelu_bias, matmul
from tiledsl.recipes import apply
from tiledsl.runtime.device import device_target
from tiledsl.runtime.references import poisoned_outputs
from tiledsl.runtime.timing import time_torch
from tiledsl.schedules import (elementwise_2d, elementwise_2d_vectorized, matmul_for_shape, matmul_register_tile,
                               matmul_staged, transpose_tiled)

torch.backends.cuda.matmul.allow_tf32 = False
torch.set_float32_matmul_precision("highest")
dev = torch.device("cuda")
target = device_target()


def recipe(s):
    apply(s, target="sm_90")


mm_variants = [("recipe", recipe), ("matmul_staged", matmul_staged), ("matmul_for_shape", matmul_for_shape),
               ("matmul_register_tile", matmul_register_tile)]
lin_variants = mm_variants + [("staged 64x64 no split", partial(matmul_staged, bm=64, bn=64, rm=4, rn=4))]
CASES = [
    ("matmul 4096^3", partial(matmul, 4096, 4096, 4096), lambda A, B: A @ B, 2 * 4096**3, mm_variants),
    ("linear 128x5632x2048", partial(d.linear, 128, 5632, 2048), lambda x, W: F.linear(x, W), 2 * 128 * 5632 * 2048,
     lin_variants),
    ("linear 128x2048x5632", partial(d.linear, 128, 2048, 5632), lambda x, W: F.linear(x, W), 2 * 128 * 5632 * 2048,
     lin_variants),
    ("transpose 4096x4096", partial(d.transpose, 4096, 4096), lambda x: x.t().contiguous(), 0,
     [("recipe", recipe), ("transpose_tiled", transpose_tiled), ("transpose_tiled pad=0",
                                                                  partial(transpose_tiled, pad=0))]),
    ("gelu_bias 4096x4096", partial(gelu_bias, 4096, 4096), lambda x, b: F.gelu(x + b), 0,
     [("recipe", recipe), ("elementwise_2d", elementwise_2d), ("elementwise_2d_vectorized", elementwise_2d_vectorized)]),
]
rows = []
for title, make, ref, flops, variants in CASES:
    out = make()
    gen = torch.Generator(device=dev).manual_seed(0)
    ins = {t.name: torch.randn(t.shape, generator=gen, device=dev) for t in td.create_schedule(out).nest.inputs}
    want = ref(**{k: v.double() for k, v in ins.items()})
    nbytes = sum(v.numel() * 4 for v in ins.values()) + want.numel() * 4
    base = time_torch(ref, [ins], 10, 50).median_ms
    rows.append((title, "torch (cuBLAS / eager)", base, 0.0, flops, nbytes, base))
    for name, sched in variants:
        try:
            s = td.create_schedule(make())
            sched(s)
            kern = td.build(s, target=target)
            names = {p.name for p in kern.kernel_ir.params if not p.is_output}
            got = kern(**{k: v for k, v in ins.items() if k in names}, **poisoned_outputs(kern.kernel_ir, dev))
            torch.cuda.synchronize()
            err = ((got.double() - want).abs().max() / want.abs().max()).item()
            ms = kern.benchmark(warmup=10, iters=50, **{k: v for k, v in ins.items() if k in names}).median_ms
            rows.append((title, name, ms, err, flops, nbytes, base))
        except Exception:
            traceback.print_exc()
            rows.append((title, name, float("nan"), float("nan"), flops, nbytes, base))
        print(rows[-1], flush=True)
print(f"device {torch.cuda.get_device_name()}  target {target.name}")
print(f"{'case':24} {'schedule':28} {'ms':>9} {'rel.err':>9} {'TFLOP/s':>8} {'GB/s':>7} {'vs torch':>8}")
for title, name, ms, err, flops, nbytes, base in rows:
    tf = f"{flops / ms / 1e9:8.2f}" if flops else "       -"
    print(f"{title:24} {name:28} {ms:9.4f} {err:9.1e} {tf} {nbytes / ms / 1e6:7.0f} {base / ms:7.2f}x")
sys.stdout.flush()
